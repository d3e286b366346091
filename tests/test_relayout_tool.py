"""tools/relayout.py's rewriters on small synthetic sources: every import form the repo uses, plus a run on a
tiny git repo (moves, new subpackage, refuses a dirty tree, a second run changes nothing)."""

from __future__ import annotations

import importlib.util
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("_relayout_t", REPO / "tools" / "relayout.py")
rl = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rl)

MOVES = {"earlyeval.trajectory": "earlyeval.core.trajectory", "earlyeval.model": "earlyeval.modeling.model",
         "earlyeval.atomic": "earlyeval.core.atomic", "earlyeval.pipeline": "earlyeval.app.pipeline"}


def _abs(src: str, module: str, is_init: bool = False) -> str:
    return rl.absolutize(textwrap.dedent(src), module, is_init)[0]


def _all(src: str, module: str = "earlyeval.x", is_init: bool = False) -> str:
    """What the script does to one file: absolutize, then rename, then fix ``from parent import module``."""
    s = _abs(src, module, is_init)
    s = rl.rename_text(s, MOVES)[0]
    return rl.fix_from_parent_imports(s, MOVES)[0]


@pytest.mark.parametrize("src, module, is_init, want", [
    ("from .trajectory import Step\n", "earlyeval.monitor", False, "from earlyeval.trajectory import Step\n"),
    ("from ..trajectory import Step, Trajectory\n", "earlyeval.budget.targets", False,
     "from earlyeval.trajectory import Step, Trajectory\n"),
    ("from .base import X\n", "earlyeval.features", True, "from earlyeval.features.base import X\n"),
    ("from . import atomic\n", "earlyeval.modeldir", False, "from earlyeval import atomic\n"),
    ("from .. import atomic\n", "earlyeval.budget.quantiles", False, "from earlyeval import atomic\n"),
    ("from . import __version__, atomic\n", "earlyeval.modeldir", False, "from earlyeval import __version__, atomic\n"),
    ("def f():\n    from .evaluate import (EvalConfig,  # why\n        fit)\n", "earlyeval.monitor", False,
     "def f():\n    from earlyeval.evaluate import (EvalConfig,  # why\n        fit)\n"),
    ("if TYPE_CHECKING:\n    from ..dataset import Dataset\n", "earlyeval.budget.targets", False,
     "if TYPE_CHECKING:\n    from earlyeval.dataset import Dataset\n"),
    ("from os import path\nfrom earlyeval.x import y\n", "earlyeval.monitor", False,
     "from os import path\nfrom earlyeval.x import y\n"),  # absolute and foreign imports untouched
])
def test_absolutize(src, module, is_init, want):
    assert _abs(src, module, is_init) == want


@pytest.mark.parametrize("src, want", [
    ("from .trajectory import Step\n", "from earlyeval.core.trajectory import Step\n"),
    ("from . import atomic\n", "from earlyeval.core import atomic\n"),
    ("from . import __version__, atomic\n", "from earlyeval import __version__\nfrom earlyeval.core import atomic\n"),
    ("def f():\n    from . import model as m, trajectory\n",
     "def f():\n    from earlyeval.modeling import model as m\n    from earlyeval.core import trajectory\n"),
    ("import earlyeval.model as md\nimport earlyeval.trajectory\nearlyeval.trajectory.Step\n",
     "import earlyeval.modeling.model as md\nimport earlyeval.core.trajectory\nearlyeval.core.trajectory.Step\n"),
    ("from earlyeval.model import OutcomeModel\n", "from earlyeval.modeling.model import OutcomeModel\n"),
    ('patch("earlyeval.model.OutcomeModel.fit")\nload("earlyeval.trajectory:Step")\n',
     'patch("earlyeval.modeling.model.OutcomeModel.fit")\nload("earlyeval.core.trajectory:Step")\n'),
    ('mods = {"earlyeval.pipeline", "earlyeval.modeldir", "earlyeval.models"}\n',  # prefixes of other names stay
     'mods = {"earlyeval.app.pipeline", "earlyeval.modeldir", "earlyeval.models"}\n'),
    ("from earlyeval.budget import live\nfrom earlyeval import Monitor\n",
     "from earlyeval.budget import live\nfrom earlyeval import Monitor\n"),
    ("x = 'myearlyeval.model' + 'a.earlyeval.model'\n", "x = 'myearlyeval.model' + 'a.earlyeval.model'\n"),
])
def test_rewrite_python(src, want):
    assert _all(src) == want


def test_rewrite_text_files():
    md = textwrap.dedent("""\
        See `earlyeval/model.py` and earlyeval/trajectory.py; run `python -m earlyeval.pipeline`.
        ```python
        from earlyeval.trajectory import Step
        ```
        earlyeval = "earlyeval.pipeline:app"   # entry point
        earlyeval/models/ and earlyeval/modeldir.py stay.
        """)
    out, notes = rl.rename_text(md, MOVES)
    assert out == textwrap.dedent("""\
        See `earlyeval/modeling/model.py` and earlyeval/core/trajectory.py; run `python -m earlyeval.app.pipeline`.
        ```python
        from earlyeval.core.trajectory import Step
        ```
        earlyeval = "earlyeval.app.pipeline:app"   # entry point
        earlyeval/models/ and earlyeval/modeldir.py stay.
        """)
    assert notes and all("->" in n for n in notes)
    assert rl.rename_text(out, MOVES)[0] == out  # idempotent


def test_bare_names_in_markdown_tables():
    md = "| `trajectory.py` | data |\n| `modeldir.py`, `model.py` | x |\n| `budget/model.py` and model.py stay |\n"
    out = rl.rename_bare_doc_names(md, MOVES)[0]
    assert out == "| `core/trajectory.py` | data |\n| `modeldir.py`, `modeling/model.py` | x |\n" \
                  "| `budget/model.py` and model.py stay |\n"
    assert rl.rename_bare_doc_names(out, MOVES)[0] == out


def test_module_of():
    assert rl.module_of("earlyeval/ingest/chat.py") == "earlyeval.ingest.chat"
    assert rl.module_of("earlyeval/__init__.py") == "earlyeval"
    assert rl.module_of("earlyeval/features/__init__.py") == "earlyeval.features"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def test_script_on_a_tiny_repo(tmp_path, monkeypatch, capsys):
    files = {
        "earlyeval/__init__.py": "from .trajectory import Step\n",
        "earlyeval/trajectory.py": "class Step: ...\n",
        "earlyeval/monitor.py": "from .trajectory import Step\n\ndef f():\n    from . import pipeline\n    return pipeline\n",
        "earlyeval/pipeline.py": "from .trajectory import Step\nfrom .monitor import f\n",
        "earlyeval/budget/__init__.py": "",
        "earlyeval/budget/live.py": "from ..trajectory import Step\n",
        "tests/test_x.py": "import earlyeval.pipeline as p\n",
        "pyproject.toml": '[project.scripts]\nearlyeval = "earlyeval.pipeline:app"\n',
        "docs/a.md": "earlyeval/trajectory.py holds Step\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "flat")
    moves = {"earlyeval.trajectory": "earlyeval.core.trajectory", "earlyeval.pipeline": "earlyeval.app.pipeline"}
    monkeypatch.setattr(rl, "MOVES", moves)
    monkeypatch.setattr(rl, "STAY", {"earlyeval", "earlyeval.monitor"})

    (tmp_path / "docs/a.md").write_text("dirty\n")
    assert rl.main(["--root", str(tmp_path)]) == 2  # refuses a dirty tree
    assert "uncommitted" in capsys.readouterr().err
    _git(tmp_path, "checkout", "docs/a.md")

    (tmp_path / "earlyeval/stray.py").write_text("")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "stray")
    assert rl.main(["--root", str(tmp_path)]) == 2  # refuses a module in no row
    assert "earlyeval.stray" in capsys.readouterr().err
    _git(tmp_path, "rm", "-q", "earlyeval/stray.py")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "no stray")

    assert rl.main(["--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "git mv earlyeval/trajectory.py earlyeval/core/trajectory.py" in out and "2 modules moved" in out
    read = lambda rel: (tmp_path / rel).read_text()  # noqa: E731
    assert not (tmp_path / "earlyeval/trajectory.py").exists()
    assert read("earlyeval/core/__init__.py").startswith('"""') and read("earlyeval/app/__init__.py").count("\n") == 1
    assert read("earlyeval/__init__.py") == "from earlyeval.core.trajectory import Step\n"
    assert read("earlyeval/monitor.py") == ("from earlyeval.core.trajectory import Step\n\ndef f():\n"
                                            "    from earlyeval.app import pipeline\n    return pipeline\n")
    assert read("earlyeval/app/pipeline.py") == "from earlyeval.core.trajectory import Step\nfrom earlyeval.monitor import f\n"
    assert read("earlyeval/budget/live.py") == "from earlyeval.core.trajectory import Step\n"
    assert read("tests/test_x.py") == "import earlyeval.app.pipeline as p\n"
    assert read("pyproject.toml") == '[project.scripts]\nearlyeval = "earlyeval.app.pipeline:app"\n'
    assert read("docs/a.md") == "earlyeval/core/trajectory.py holds Step\n"
    status = _git(tmp_path, "status", "--porcelain")
    assert "R  earlyeval/trajectory.py -> earlyeval/core/trajectory.py" in status or "earlyeval/core/trajectory.py" in status

    _git(tmp_path, "add", "-A")
    _git(tmp_path, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "laid out")
    before = _git(tmp_path, "rev-parse", "HEAD:")
    assert rl.main(["--root", str(tmp_path)]) == 0  # idempotent: a second run changes nothing
    assert "nothing to do" in capsys.readouterr().out
    assert _git(tmp_path, "status", "--porcelain") == "" and _git(tmp_path, "rev-parse", "HEAD:") == before

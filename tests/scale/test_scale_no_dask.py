"""Without a scheduler nothing of dask is imported: not by the live path, not by an in-process verb."""

from __future__ import annotations

import subprocess
import sys

from _paths import REPO

CHECK = """
import sys
{imports}
bad = sorted(m for m in sys.modules if m.split(".")[0] in ("dask", "distributed", "earlyeval") and
             (m.split(".")[0] != "earlyeval" or m.startswith("earlyeval.scale.") and m != "earlyeval.scale.spec"))
assert not bad, bad
print("ok")
"""


def _run(imports: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", CHECK.format(imports=imports)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_the_live_path_imports_no_dask():
    r = _run(
        "import earlyeval.live.monitor, earlyeval.live.replay, earlyeval.live.inputs, earlyeval.live.remaining_budget, earlyeval.integrations\n"
        "from earlyeval import Monitor"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_an_in_process_verb_imports_no_dask(tmp_path):
    """The CLI checks --scheduler (earlyeval.scale.spec, no dask) and runs the verb without it in this process."""
    r = _run(
        "from typer.testing import CliRunner\nfrom earlyeval.app.cli import app\n"
        f"res = CliRunner().invoke(app, ['--workspace', {str(tmp_path)!r}, 'ingest', '--bench', 'swebench', "
        f"'--data-root', {str(tmp_path / 'none')!r}], env={{'EARLYEVAL_SCHEDULER': ''}})\n"
        "assert res.exit_code == 2 and 'does not exist' in res.output, res.output\n"
        "import earlyeval.app.stages.evaluate, earlyeval.app.stages.train, earlyeval.workflows.score"
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_the_check_can_fail():
    r = _run("import earlyeval.scale.cluster")
    assert r.returncode != 0 and "distributed" in r.stderr

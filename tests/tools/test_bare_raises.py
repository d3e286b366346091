"""tools/bare_raises.py, issue 44's gate on bare ``raise ValueError`` / ``raise RuntimeError`` beside the error
tree: the checkout sits at its ceilings, a planted bare raise fails as NEW, a removed one as STALE (the ceilings
only shrink), a class of the error tree is not counted, and a wrong root is refused rather than read as clean."""

from __future__ import annotations

import importlib.util

from _paths import REPO


def _tool():
    spec = importlib.util.spec_from_file_location(
        "bare_raises_tool", REPO / "tools" / "bare_raises.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _checkout(root, files):
    for rel, text in {"earlyeval/__init__.py": "", **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_the_checkout_is_at_its_ceilings():
    br = _tool()
    assert br.check(REPO) == []
    assert br.main(["bare_raises.py", str(REPO)]) == 0


def test_a_planted_bare_raise_fails_and_a_removed_one_asks_for_a_lower_ceiling(tmp_path):
    br = _tool()
    root = _checkout(
        tmp_path,
        {
            "earlyeval/evaluation/m.py": (
                "from earlyeval.core.errors import SettingError\n"
                "def f(x):\n"
                "    if x:\n"
                "        raise ValueError(f'bad {x}')\n"
                "    raise SettingError('EvalConfig', 'x', 'bad')\n"
                "def g():\n"
                "    raise RuntimeError\n"
            ),
        },
    )
    assert br.by_folder(root) == {
        "evaluation": [
            "earlyeval/evaluation/m.py:4 ValueError",
            "earlyeval/evaluation/m.py:7 RuntimeError",
        ]
    }
    assert br.check(root, {"evaluation": 2}) == []
    (new,) = br.check(root, {"evaluation": 1})
    assert new.startswith("NEW    earlyeval/evaluation: 2 bare raises > ceiling 1")
    assert "earlyeval/evaluation/m.py:4 ValueError" in new
    (stale,) = br.check(root, {"evaluation": 2, "live": 1})
    assert stale.startswith("STALE  earlyeval/live: 0 bare raises < ceiling 1")


def test_a_wrong_root_is_refused(tmp_path, capsys):
    br = _tool()
    assert br.main(["bare_raises.py", str(tmp_path)]) == 2
    assert "not a checkout of earlyeval" in capsys.readouterr().err

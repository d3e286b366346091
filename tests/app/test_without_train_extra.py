"""Issue 42 item 6: ``earlyeval score`` on an install without the [train] extra (the runtime and [cli]) says so
in one line and exits 2, never a traceback (an option's check used to import the fitting layer while parsing)."""

from __future__ import annotations

import subprocess
import sys

TRAIN_MODULES = ("sklearn", "scipy", "pandas", "pyarrow", "joblib", "markupsafe")


def test_score_without_train_is_one_line(tmp_path):
    code = (
        "import sys\n"
        f"for m in {TRAIN_MODULES!r}: sys.modules[m] = None\n"
        "sys.argv = ['earlyeval', 'score', '-m', 'models/x', '--runs', '.', '--out', 'o']\n"
        "from earlyeval.app.cli import app\n"
        "app()\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("error: ") and "[train] extra" in r.stderr

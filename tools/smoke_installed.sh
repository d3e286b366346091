#!/usr/bin/env bash
# The package as a user gets it, not as this checkout runs it: a clean venv (dependencies exactly from
# requirements.lock), `pip install <repo>` (a normal, non-editable install), then from a temporary
# directory: ingest, train, and Monitor.load + a few live steps. Run by .ci/run; by hand:
#   EARLYEVAL_DATA=../shared/data bash tools/smoke_installed.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
data="${EARLYEVAL_DATA:-$repo/../shared/data}"
data="$(cd "$data" && pwd)"
py="${PY:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "smoke: clean venv in $tmp/venv, workspace $tmp/ws, data $data"
"$py" -m venv "$tmp/venv"
pip="$tmp/venv/bin/pip"
"$pip" install -q --require-hashes --no-deps -r "$repo/requirements.lock"
"$pip" install -q "$repo"
"$pip" check
mkdir "$tmp/ws"
cd "$tmp/ws"
unset EARLYEVAL_HOME
"$tmp/venv/bin/earlyeval" --help >/dev/null
"$tmp/venv/bin/earlyeval" ingest --bench swebench --data-root "$data" | tail -3
"$tmp/venv/bin/earlyeval" train --bench swebench --data-root "$data" | tail -3
"$tmp/venv/bin/python" - "$repo" <<'PY'
import sys
from pathlib import Path

import earlyeval
from earlyeval import Monitor
from earlyeval.config.catalog import available_benches
from earlyeval.integrations import EarlyStopper

repo = Path(sys.argv[1]).resolve()
pkg = Path(earlyeval.__file__).resolve()
assert "site-packages" in pkg.parts and repo not in pkg.parents, f"earlyeval imported from {pkg}, not the installed wheel"
assert (pkg.parent / "py.typed").is_file(), "py.typed is not installed"
benches = available_benches()
assert {"swebench", "tau2", "toolathlon", "terminalbench"} <= set(benches), benches
assert all("site-packages" in p.parts for p in benches.values()), benches
assert Path("models/swebench/manifest.json").is_file() and Path("reports/swebench/ingest.json").is_file()
from earlyeval.tables.store import read_ingested_tasks

task = read_ingested_tasks("swebench")["astropy__astropy-12907"]  # from this workspace's ingest: prompt and gold patch
assert task.gold_patch, "the ingested task has no gold patch"
stopper = EarlyStopper(Monitor.load("models/swebench"))
stopper.start(task=task, run_id="smoke")
for cmd in ["ls", "grep -rn separability astropy/modeling", "python reproduce.py"]:
    d = stopper.after_step(action=cmd, observation="ok", error=False, input_tokens=1000, output_tokens=50)
    assert d.p_success is not None and 0.0 <= d.p_success <= 1.0, d
print(f"smoke: installed earlyeval {earlyeval.__version__} at {pkg.parent}")
print(f"smoke: catalogs from {sorted(benches)}; Monitor.load + 3 steps: p_success={d.p_success:.3f} halt={d.halt}")
PY
# the dask extra (installed from the lock): a LocalCluster of the installed package runs a task (a script
# file with a main guard: worker processes are spawned, and spawn re-imports the main script)
printf 'from earlyeval.scale.cluster import connect\nif __name__ == "__main__":\n    with connect("local:1") as c:\n        assert c.submit(sum, [1, 2]).result() == 3\n    print("smoke: a LocalCluster task ran")\n' > "$tmp/cluster_smoke.py"
"$tmp/venv/bin/python" "$tmp/cluster_smoke.py"
# the core install alone (issue 30 item 4): the lock's part that pyproject.toml's [project] dependencies pull in
# (tools/lock_subset.py), then the package from its wheel: what a user who only embeds the Monitor gets. A Monitor
# on the model trained above runs there, nothing of the offline stack is installed, and the command and the
# offline API each say in one line which extra they need.
"$py" "$repo/tools/lock_subset.py" > "$tmp/core.lock"
"$py" -m venv "$tmp/core"
"$tmp/core/bin/pip" install -q --require-hashes --no-deps -r "$tmp/core.lock"
"$tmp/core/bin/pip" install -q --no-deps "$repo"
"$tmp/core/bin/pip" check
echo "smoke: core install: $("$tmp/core/bin/pip" list --format=freeze 2>/dev/null | grep -v '^\(pip\|setuptools\)==' | tr '\n' ' ')"
if "$tmp/core/bin/earlyeval" --help > "$tmp/core_help.txt" 2>&1; then echo "smoke: earlyeval --help ran without typer"; exit 1; fi
grep -q "needs the \[cli\] extra" "$tmp/core_help.txt" || { cat "$tmp/core_help.txt"; exit 1; }
"$tmp/core/bin/python" - <<'PY'
import importlib.util, sys, time

t0 = time.perf_counter()
from earlyeval import Action, EarlyStopper, Monitor
from earlyeval.core.errors import MissingExtraError

absent = [m for m in ("sklearn", "pandas", "pyarrow", "typer", "matplotlib", "atif", "dask") if importlib.util.find_spec(m) is None]
assert len(absent) == 7, f"the core install has {sorted(set(('sklearn', 'pandas', 'pyarrow', 'typer', 'matplotlib', 'atif', 'dask')) - set(absent))}"
stopper = EarlyStopper(Monitor.load("models/swebench"))
stopper.start(task={"task_id": "astropy__astropy-12907", "prompt": "fix separability_matrix for nested models"}, run_id="core")
for cmd in ["ls", "grep -rn separability astropy/modeling", "python reproduce.py"]:
    d = stopper.after_step(action=cmd, observation="ok", error=False, input_tokens=1000, output_tokens=50)
    assert d.p_success is not None and 0.0 <= d.p_success <= 1.0, d
try:
    from earlyeval import score  # noqa: F401  (the batch entry point: the offline stack)
except MissingExtraError as e:
    assert e.extra == "train", e
else:
    raise AssertionError("earlyeval.score imported without the [train] extra")
print(f"smoke: core install: Monitor.load + 3 steps p_success={d.p_success:.3f} in {time.perf_counter() - t0:.2f} s; "
      f"{len(sys.modules)} modules; not installed: {', '.join(absent)}")
PY
echo "smoke: passed"

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
echo "smoke: passed"

#!/usr/bin/env bash
# The reports a refactor must leave unchanged, made in checkout $1 (outputs under it, logs in /tmp/<name>_*.log):
# make train, evaluate --no-ablations, sweep, budget, route, and a score with a warm start. Compare two checkouts
# with tools/compare_reports.py.  EARLYEVAL_DATA: the shared runs (default: ../shared/data beside the checkout).
set -euo pipefail
cd "$1"
export EARLYEVAL_DATA="${EARLYEVAL_DATA:-$(cd "$1/.." && pwd)/shared/data}"
unset EARLYEVAL_HOME
t0=$SECONDS
make train BENCH=swebench > /tmp/$(basename $1)_train.log 2>&1
echo "train $((SECONDS-t0))"
.venv/bin/earlyeval evaluate --bench swebench --no-ablations > /tmp/$(basename $1)_eval.log 2>&1
echo "eval $((SECONDS-t0))"
make sweep BENCH=swebench > /tmp/$(basename $1)_sweep.log 2>&1
echo "sweep $((SECONDS-t0))"
make budget BENCH=swebench > /tmp/$(basename $1)_budget.log 2>&1
echo "budget $((SECONDS-t0))"
make route BENCH=swebench > /tmp/$(basename $1)_route.log 2>&1
echo "route $((SECONDS-t0))"
.venv/bin/earlyeval score --model models/swebench --runs "$EARLYEVAL_DATA"/swebench/runs/verified__swe-agent-v1.1.0__gpt-5-mini__mas-evaluation --format auto --warm-start 10 --force > /tmp/$(basename $1)_score.log 2>&1
echo "score $((SECONDS-t0))"

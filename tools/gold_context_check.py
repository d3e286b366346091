"""Gold context per run: does a run's halting decision depend on an earlier run of the same task id?

For N real runs of an ingested benchmark (default 60 SWE-bench runs, a seeded draw over runs whose task has a
gold patch and another run of the same id), each run R of task X is monitored by a monitor spawned from one
loaded model right after another real run of task X was monitored with a *different* reference patch (the
gold patch, tests and FAIL_TO_PASS of another task: a re-versioned task, a variant dataset).  R's decision
(halt step, predicted outcome) is compared with R's decision on a second, separately loaded model that never
saw the other patch.  A gold cache keyed by task id and shared by spawned monitors gives R the earlier
patch; a per-run context gives 0 changed decisions.

    .venv/bin/python tools/gold_context_check.py [--bench swebench] [--model models/swebench] [--n 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections import defaultdict
from pathlib import Path

import numpy as np

from earlyeval import Monitor
from earlyeval.tables.store import read_ingested_tasks, read_ingested_trajectories


def decision(mon: Monitor, traj, task) -> tuple[int, str | None]:
    """(halt step or 0, predicted outcome) of one run fed step by step through ``start(task=...)``/``observe``."""
    mon.start(
        task=task,
        run_id=traj.run_id,
        agent=traj.agent,
        scaffold=str(traj.meta.get("scaffold", "")),
        model=str(traj.meta.get("model", "")),
        exclude_submissions=list(traj.meta.get("public_submissions", [])),
        prior_match=list(traj.meta.get("prior_match", [])),
    )
    for t, s in enumerate(traj.steps[:-1], start=1):
        d = mon.observe(s)
        if d.halt:
            return t, d.outcome
    return 0, None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="swebench")
    ap.add_argument("--model", default=None)
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    logging.getLogger("earlyeval").setLevel(logging.ERROR)
    trajs = read_ingested_trajectories(a.bench)
    tasks = read_ingested_tasks(a.bench)
    model = Path(a.model or f"models/{a.bench}")
    by_task = defaultdict(list)
    for t in trajs:
        if t.task_id in tasks and tasks[t.task_id].gold_patch and len(t.steps) >= 3:
            by_task[t.task_id].append(t)
    pool = sorted(
        (t for ts in by_task.values() if len(ts) >= 2 for t in ts), key=lambda t: t.run_id
    )
    rng = np.random.default_rng(a.seed)
    picked = [
        pool[i] for i in sorted(rng.choice(len(pool), size=min(a.n, len(pool)), replace=False))
    ]
    others = sorted(tid for tid in tasks if tasks[tid].gold_patch)
    # one loaded model; every run gets a spawn of it, as adapters do
    shared = Monitor.load(model, budget=False)
    fresh = Monitor.load(model, budget=False)  # a second load: never sees another patch of any id
    changed, halts = [], 0
    for k, r in enumerate(picked):
        decoy = next(t for t in by_task[r.task_id] if t.run_id != r.run_id)
        other = tasks[others[(others.index(r.task_id) + 1 + k) % len(others)]]
        variant = dataclasses.replace(
            tasks[r.task_id],
            gold_patch=other.gold_patch,
            test_patch=other.test_patch,
            fail_to_pass=other.fail_to_pass,
        )
        assert variant.gold_patch != tasks[r.task_id].gold_patch
        decision(shared.spawn(), decoy, variant)  # the same id, another reference patch, first
        got = decision(shared.spawn(), r, tasks[r.task_id])
        ref = decision(fresh.spawn(), r, tasks[r.task_id])
        halts += ref[0] > 0
        if got != ref:
            changed.append((r.run_id, ref, got))
    print(
        f"{len(changed)} of {len(picked)} same-id runs with a changed decision "
        f"(reference: {halts} of them halt; model {model}, seed {a.seed})"
    )
    for rid, ref, got in changed[:10]:
        print(f"  {rid}: alone {ref}, after the other patch {got}")
    return 1 if changed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Concurrent `score` runs on one --out: are score.json and per_run.csv always one writer's pair?

Three worker processes (each imports earlyeval once) score three disjoint sets of 12 runs into the same output
folder, released together by a barrier, TRIALS times; after each trial the pair is checked: the run ids of
score.json's per_run must be those of per_run.csv, and score.json's runs_path the set they came from.  The runs
and the model are the fault suite's tiny ones (tests/faults.py), so this needs no data.

    .venv/bin/python tools/concurrent_score_check.py [--trials 50]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import shutil
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"


def worker(
    model: str, runs: str, out: str, barrier: mp.Barrier, trials: int, tasks_path: str
) -> None:
    import logging

    from earlyeval.workflows.score import score_runs
    from earlyeval.workflows.score_options import ScoreOptions

    logging.disable(logging.WARNING)
    for _ in range(trials):
        barrier.wait()
        # each replaces another scoring
        score_runs(
            model,
            runs,
            ScoreOptions("atif", out=out, force=True),
            progress=False,
            tasks=Path(tasks_path),
        )
        barrier.wait()  # the checker looks at the pair between the two waits


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=50)
    a = ap.parse_args()
    sys.path.insert(0, str(TESTS))
    import os

    from faults import Env

    from earlyeval.tables.store import write_tasks
    from earlyeval.workflows.export import export_runs

    os.environ["EARLYEVAL_BOOSTER_PROBE"] = (
        "0"  # the workers load the model once per trial: no probe child each time
    )
    base = Path(tempfile.mkdtemp(prefix="earlyeval-concurrent-"))
    env = Env(base)
    model, _, trajs, tasks = env.tiny()
    sets = []
    for k in range(3):
        d = base / f"runs{k}"
        export_runs(trajs[12 * k : 12 * (k + 1)], d, fmt="atif")
        sets.append(d)
    tasks_path = write_tasks(tasks.values(), base / "tasks.parquet")
    out = base / "out"
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(4)
    ps = [
        ctx.Process(
            target=worker, args=(str(model), str(d), str(out), barrier, a.trials, str(tasks_path))
        )
        for d in sets
    ]
    for p in ps:
        p.start()
    mixed = 0
    t0 = time.time()
    for k in range(a.trials):
        barrier.wait()
        barrier.wait()
        rep = json.loads((out / "score.json").read_text())
        ids_json = sorted(r["run_id"] for r in rep["per_run"])
        ids_csv = sorted(
            line.split(",")[0] for line in (out / "per_run.csv").read_text().splitlines()[1:]
        )
        ok = ids_json == ids_csv and Path(rep["runs_path"]).name in {d.name for d in sets}
        mixed += not ok
        if not ok:
            print(
                f"trial {k}: MIXED (score.json from {Path(rep['runs_path']).name}, per_run.csv {len(ids_csv)} runs)",
                flush=True,
            )
    for p in ps:
        p.join(timeout=60)
    print(
        f"{mixed} mixed sets in {a.trials} trials of 3 concurrent writers on one --out ({time.time() - t0:.0f} s)"
    )
    shutil.rmtree(base, ignore_errors=True)
    return 1 if mixed else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``earlyeval ingest``'s stage: every run of a catalog read in its native format into the store, the task
table, and ``reports/<bench>/ingest.json``."""

from __future__ import annotations

import json
from pathlib import Path

from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import reports_dir
from earlyeval.core import atomic
from earlyeval.core.atomic import write_json
from earlyeval.core.errors import IngestError
from earlyeval.core.tasks_jsonl import validate_task, write_tasks_jsonl
from earlyeval.tables.prefixes import drop_report
from earlyeval.tables.store import bench_dir, write_tasks
from earlyeval.tables.tasks import load_tasks
from earlyeval.workflows.backend import Backend, InProcess

# written last by ingest_bench (and removed first): the ingest stage is complete (the Makefile depends on it)
INGEST_DONE = "ingest.done"


# ------------------------------------------------------------------ ingest


def ingest_bench(
    bench: str,
    root: str | Path | None = None,
    progress: bool = True,
    backend: Backend | None = None,
    max_files: int | None = None,
) -> dict[str, Path]:
    """``backend`` (``workflows.backend``): where the runs are read, in this process (the default) or on a cluster
    (parallel tasks, the trajectories written as a directory of parts: same rows, same order, same report).
    ``max_files``: a bounded, evenly spread sample of each run's files (tests)."""
    backend = backend or InProcess()
    cat = load_catalog(bench)
    r = data_root(root)
    if not r.exists():
        raise FileNotFoundError(f"data root {r} does not exist (set --data-root or EARLYEVAL_DATA)")
    out = bench_dir(bench)
    marker = out / INGEST_DONE
    ingested = backend.ingest(
        cat, r, out / "trajectories.parquet", max_files=max_files, progress=progress
    )
    # a cluster's records: what the report needs of each run
    trajs, reports = (
        ingested.records,
        ingested.reports,
    )
    tasks = load_tasks(cat, r) if cat.tasks else {}
    tasks_skipped = []
    for tid in list(tasks):
        try:
            validate_task(tasks[tid], str(cat.path))
        except IngestError as e:
            tasks_skipped.append(e.to_dict())
            del tasks[tid]
    # each output is replaced atomically; the completion marker (what `make` depends on) goes first and
    # comes back last, so a kill in between leaves the previous outputs whole and the stage marked undone
    marker.unlink(missing_ok=True)
    p_traj = ingested.commit(out / "trajectories.parquet")
    p_tasks = write_tasks(tasks.values(), out / "tasks.parquet")
    # the same table for a runtime without pyarrow (an adapter's ``tasks:``, ``score --tasks``)
    write_tasks_jsonl(tasks.values(), out / "tasks.jsonl")
    min_steps = cat.config.min_steps
    report = {
        "bench": bench,
        "data_root": str(r),
        "catalog": cat.path.name if cat.path.parent.name == "catalogs" else str(cat.path),
        "totals": {
            "runs": len(reports),
            "trajectories": sum(x.trajectories for x in reports),
            "resolved": sum(x.resolved for x in reports),
            "unresolved": sum(x.unresolved for x in reports),
            "unlabelled": sum(x.unlabelled for x in reports),
            "skipped_files": sum(len(x.skipped) for x in reports),
            "tasks": len(tasks),
            "tasks_skipped": len(tasks_skipped),
        },
        "tasks_skipped": tasks_skipped,
        "runs": [x.to_dict() for x in reports],
        "prefix_drops": {
            str(m): drop_report(trajs, m).to_dict() for m in sorted({min_steps, 10, 5, 3})
        },
    }
    p_rep = write_json(report, reports_dir(bench) / "ingest.json")
    atomic.write_text(marker, json.dumps({"trajectories": len(trajs), "tasks": len(tasks)}) + "\n")
    return {"trajectories": p_traj, "tasks": p_tasks, "report": p_rep, "done": marker}

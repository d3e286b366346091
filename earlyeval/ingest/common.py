"""What every ingestor does the same way: name the run and record where it came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from earlyeval.config.catalog import RunSpec
from earlyeval.core.trajectory import Step, Trajectory


def run_trajectory(spec: RunSpec, bench: str, source: str | Path, task_id: str, steps: list[Step], prompt: str = "",
                   outcome: int | None = None, run_id: str | None = None, **meta: Any) -> Trajectory:
    """A Trajectory of catalog run ``spec``: run id ``<run>/<task>`` unless given, identity and source in meta.

    ``meta`` holds what the format adds (costs, exit status, ...); None values are kept: unknown is unknown.
    """
    return Trajectory(
        run_id=run_id or f"{spec.name}/{task_id}",
        agent=spec.agent,
        bench=bench,
        task_id=task_id,
        steps=steps,
        outcome=outcome,
        prompt=prompt,
        meta={"scaffold": spec.scaffold, "model": spec.model, "source_file": str(source), **meta},
    )


def file_key(spec: RunSpec, path: str | Path) -> str:
    """The run-id prefix of the records of one file: the catalog run's name when the run *is* this one
    file (its glob names it), else the run's name and the file's path inside the run folder.  With the
    record's index inside the file appended, run ids are unique by construction (``ingest_run`` passes
    ``spec.folder`` resolved to the run folder)."""
    p = Path(path)
    try:
        rel = p.relative_to(Path(spec.folder)).as_posix()
    except ValueError:  # parsed outside ingest_run (a direct parse call): the file name
        rel = p.name
    return spec.name if rel == spec.glob else f"{spec.name}/{rel}"

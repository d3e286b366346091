"""What every ingestor does the same way: name the run and record where it came from."""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
from pathlib import Path
from typing import Any

from earlyeval.config.catalog import RunSpec
from earlyeval.core.trajectory import Step, Trajectory

log = logging.getLogger(__name__)


def run_trajectory(
    spec: RunSpec,
    bench: str,
    source: str | Path,
    task_id: str,
    steps: list[Step],
    prompt: str = "",
    outcome: int | None = None,
    run_id: str | None = None,
    **meta: Any,
) -> Trajectory:
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


def keep_warnings(t: Trajectory, warnings: list[str]) -> Trajectory:
    """What a step reader read, but not as written (``warnings``: each naming the file and the record): logged,
    and kept with the run in ``meta["reader_warnings"]`` (a run read as written has no such key)."""
    if warnings:
        t.meta["reader_warnings"] = list(warnings)
        for w in warnings:
            log.warning("%s", w)
    return t


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


def glob_paths(run_dir: Path, pattern: str) -> list[Path]:
    """What a run's glob names under ``run_dir``: the path itself when one exists by that exact name (a file
    called ``[a].traj.gz`` is that file, not the glob that matches ``a.traj.gz``), else the glob's matches.
    Every discover of the readers goes through here, so a literal name means the same to all of them."""
    exact = run_dir / pattern
    if pattern and os.path.lexists(exact):
        return [exact]
    return list(run_dir.glob(pattern))


# the years a run's own timestamp may plausibly name: anything else is a unit error or a placeholder, not a date
_YEARS = range(2000, 2101)


def day_of(value: Any) -> str | None:
    """The UTC day (YYYY-MM-DD) of a timestamp as a native file records it: unix seconds (int, float or
    digits), or an ISO 8601 string (a naive one read as UTC; a leading ``YYYYMMDD`` as in an evaluation's
    name); None when it is none of these or implausible (not in 2000-2100).  ``earlyeval score`` dates a run
    by it (``meta["run_date"]``) so that its task prior counts only submissions made before it."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str) and re.fullmatch(r"\d{9,11}(\.\d+)?", value.strip()):
        value = float(value)
    if isinstance(value, dt.datetime):
        d = (value.astimezone(dt.timezone.utc) if value.tzinfo else value).date()
    elif isinstance(value, dt.date):
        d = value
    elif isinstance(value, (int, float)):
        try:
            d = dt.datetime.fromtimestamp(float(value), tz=dt.timezone.utc).date()
        except (OverflowError, OSError, ValueError):
            return None
    elif isinstance(value, str):
        m = re.match(r"\s*(\d{4})-?(\d{2})-?(\d{2})(?=$|[T _:\-.\s])", value)
        if not m:
            return None
        try:
            d = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        except ValueError:
            return None
    else:
        return None
    return d.isoformat() if d.year in _YEARS else None


def first_day(values: Any) -> str | None:
    """The earliest ``day_of`` among ``values`` (None when none is a timestamp)."""
    days = [x for x in (day_of(v) for v in values) if x]
    return min(days) if days else None


def dig(d: Any, *keys: str) -> Any:
    """``d[k1][k2]...`` through dicts; None where a level is missing or not a dict."""
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d

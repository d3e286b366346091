"""Columnar storage of trajectories and tasks (parquet via pyarrow).

Stage boundaries are files: one row per trajectory (steps nested) or per task, unknown counts null; a dataset is
one file or a directory of parts read as one table. docs/architecture.md, "Pipeline".
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("train", "earlyeval.tables.store (parquet tables)", ("pyarrow",))

import fnmatch
import json
import logging
import os
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from earlyeval.config.workspace import data_dir
from earlyeval.core.atomic import atomic_path, swap_dir
from earlyeval.core.trajectory import Task, Trajectory

log = logging.getLogger(__name__)

ACTION_TYPE = pa.struct([("tool", pa.string()), ("text", pa.string()), ("kind", pa.string())])
STEP_TYPE = pa.struct(
    [
        ("index", pa.int32()),
        ("action", pa.string()),
        ("kind", pa.string()),
        ("thought", pa.string()),
        ("observation", pa.string()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        ("cached_tokens", pa.int64()),
        ("cost_usd", pa.float64()),
        ("error", pa.bool_()),
        ("actions", pa.list_(ACTION_TYPE)),
    ]
)
TRAJ_SCHEMA = pa.schema(
    [
        ("run_id", pa.string()),
        ("agent", pa.string()),
        ("bench", pa.string()),
        ("task_id", pa.string()),
        ("outcome", pa.int8()),
        ("prompt", pa.string()),
        ("meta", pa.string()),  # JSON
        ("steps", pa.list_(STEP_TYPE)),
    ]
)
TASK_SCHEMA = pa.schema(
    [
        ("task_id", pa.string()),
        ("prompt", pa.string()),
        ("gold_patch", pa.string()),
        ("test_patch", pa.string()),
        ("fail_to_pass", pa.list_(pa.string())),
        ("pass_to_pass", pa.list_(pa.string())),
        ("meta", pa.string()),
    ]
)


def bench_dir(bench: str, base: Path | None = None) -> Path:
    return base / bench if base is not None else data_dir(bench)


PARTS = "part-*.parquet"  # the parts of a dataset directory, read in name order


def part_names(path: Path) -> list[str]:
    """The parts of a dataset directory, in the order they are read (name order)."""
    return sorted(n for n in os.listdir(path) if fnmatch.fnmatch(n, PARTS))


def _write_table(table: pa.Table, path: Path, parents: bool = True) -> Path:
    """Atomically (temp file, fsync, rename): a reader sees the old complete file or the new one.  A dataset
    directory at ``path`` (a cluster ingest's parts) is replaced whole by the file (``atomic.swap_dir``)."""
    if path.is_dir() and not path.is_symlink():
        tmp = path.parent / f".{path.name}.{os.getpid()}.file.tmp"
        pq.write_table(table, tmp)
        swap_dir(tmp, path)
        return path
    with atomic_path(path, parents=parents) as tmp:
        pq.write_table(table, tmp)
    return path


def write_trajectories(trajs: Iterable[Trajectory], path: Path, parents: bool = True) -> Path:
    rows = []
    for t in trajs:
        d = t.to_dict()
        d["meta"] = json.dumps(d["meta"], sort_keys=True, default=str)
        rows.append(d)
    return _write_table(pa.Table.from_pylist(rows, schema=TRAJ_SCHEMA), path, parents)


def _read_table(path: Path, schema: pa.Schema | None = None) -> pa.Table:
    """The whole file through one open handle: a concurrent atomic replace (rename) can never mix the
    old file's footer with the new file's pages, as re-opening the path for each part could.  A directory
    of parts is read through one open handle of the directory for the same reason (a concurrent swap of
    the whole directory cannot mix two datasets' parts)."""
    if not path.is_dir():
        with open(path, "rb") as f:
            return pq.read_table(f)
    dfd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        tables = []
        for name in sorted(n for n in os.listdir(dfd) if fnmatch.fnmatch(n, PARTS)):
            with os.fdopen(os.open(name, os.O_RDONLY, dir_fd=dfd), "rb") as f:
                tables.append(pq.read_table(f))
    finally:
        os.close(dfd)
    if not tables:
        return (schema or TRAJ_SCHEMA).empty_table()
    return pa.concat_tables(tables)


def read_table(path: Path, schema: pa.Schema | None = None) -> pa.Table:
    """A dataset (one file or a directory of parts) as one pyarrow table; ``schema`` is the empty one's."""
    return _read_table(path, schema)


def read_trajectories(path: Path) -> list[Trajectory]:
    return [Trajectory.from_dict(r) for r in _read_table(path).to_pylist()]


def write_tasks(tasks: Iterable[Task], path: Path) -> Path:
    rows = []
    for t in tasks:
        d = t.to_dict()
        d["meta"] = json.dumps(d["meta"], sort_keys=True, default=str)
        rows.append(d)
    return _write_table(pa.Table.from_pylist(rows, schema=TASK_SCHEMA), path)


def read_tasks(path: Path) -> dict[str, Task]:
    if not path.exists():
        return {}
    out = {}
    for r in _read_table(path).to_pylist():
        r["meta"] = json.loads(r["meta"] or "{}")
        t = Task.from_dict(r)
        out[t.task_id] = t
    return out


def read_ingested_trajectories(bench: str) -> list[Trajectory]:
    """The benchmark's ingested runs (``earlyeval ingest`` output); a clear error when it has not run."""
    path = bench_dir(bench) / "trajectories.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `earlyeval ingest --bench {bench}` first")
    if not (
        path.parent / "ingest.done"
    ).exists():  # pipeline.INGEST_DONE: each file is whole, the set may not be
        log.warning(
            "%s has no ingest.done: the last `earlyeval ingest --bench %s` did not finish (or predates the "
            "marker); its files are each complete but may come from different ingests -- re-run it",
            path.parent,
            bench,
        )
    return read_trajectories(path)


def read_ingested_tasks(bench: str) -> dict[str, Task]:
    """The benchmark's ingested task table ({} when the benchmark has none)."""
    return read_tasks(bench_dir(bench) / "tasks.parquet")

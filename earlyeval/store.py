"""Columnar storage of trajectories and tasks (parquet via pyarrow).

Stage boundaries are files: ``data/<bench>/trajectories.parquet`` holds one row
per trajectory with its steps as a nested list, ``data/<bench>/tasks.parquet``
one row per task.  Nullable columns keep unknown token counts as null.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from .workspace import data_dir
from .trajectory import Task, Trajectory

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


def write_trajectories(trajs: Iterable[Trajectory], path: Path) -> Path:
    rows = []
    for t in trajs:
        d = t.to_dict()
        d["meta"] = json.dumps(d["meta"], sort_keys=True, default=str)
        rows.append(d)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=TRAJ_SCHEMA), path)
    return path


def read_trajectories(path: Path) -> list[Trajectory]:
    return [Trajectory.from_dict(r) for r in pq.read_table(path).to_pylist()]


def write_tasks(tasks: Iterable[Task], path: Path) -> Path:
    rows = []
    for t in tasks:
        d = t.to_dict()
        d["meta"] = json.dumps(d["meta"], sort_keys=True, default=str)
        rows.append(d)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=TASK_SCHEMA), path)
    return path


def read_tasks(path: Path) -> dict[str, Task]:
    if not path.exists():
        return {}
    out = {}
    for r in pq.read_table(path).to_pylist():
        r["meta"] = json.loads(r["meta"] or "{}")
        t = Task.from_dict(r)
        out[t.task_id] = t
    return out


def read_ingested_trajectories(bench: str) -> list[Trajectory]:
    """The benchmark's ingested runs (``earlyeval ingest`` output); a clear error when it has not run."""
    path = bench_dir(bench) / "trajectories.parquet"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `earlyeval ingest --bench {bench}` first")
    return read_trajectories(path)


def read_ingested_tasks(bench: str) -> dict[str, Task]:
    """The benchmark's ingested task table ({} when the benchmark has none)."""
    return read_tasks(bench_dir(bench) / "tasks.parquet")

"""Featurize by partition: the fold-free feature blocks of every prefix, one task per part of the dataset.

Each task runs the in-process loader on its part, so the blocks are bitwise equal, and a worker holds one part at
a time. The parts written and how they are read back: docs/scale.md, "Each stage in detail".
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("train", "earlyeval.scale.features (parquet parts)", ("pyarrow",))

import dataclasses
import functools
import json
import logging
import shutil
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from distributed import Client, as_completed

from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import features_dir, workspace_root
from earlyeval.core.atomic import atomic_path, new_dir_beside, swap_dir
from earlyeval.core.trajectory import Action, Trajectory
from earlyeval.evaluation.dataset import PASS, Dataset, add_pass_block, load_dataset
from earlyeval.features import PriorTable, RunContext, family_class, fold_fitted, fold_free
from earlyeval.scale.cluster import in_workspace, result_of, workers_of
from earlyeval.tables.prefixes import prefix_table
from earlyeval.tables.store import (
    TRAJ_SCHEMA,
    bench_dir,
    part_names,
    read_table,
    read_tasks,
    read_trajectories,
    write_trajectories,
)

log = logging.getLogger(__name__)

PREFIXES = "prefixes.parquet"
RUNS = "runs.parquet"
SLICES_PER_WORKER = 2  # tasks per worker when the dataset is one file (an in-process ingest: each task reads the file)
BLOCKS_KEY = b"earlyeval.blocks"  # parquet metadata of a prefixes part: {block: [feature names]}


@dataclass(frozen=True)
class Partition:
    """One task's runs: a part of a dataset directory, or rows [start, stop) of a one-file dataset."""

    path: str
    start: int = 0
    stop: int | None = None


def partitions(path: Path, slices: int = 2) -> list[Partition]:
    """The dataset's partitions, in dataset order: its parts, or ``slices`` row ranges of a one-file dataset
    (which came from one process, so it is small enough for each task to read it whole)."""
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: run `earlyeval ingest --bench {path.parent.name}` first"
        )
    if path.is_dir():
        return [Partition(str(path / n)) for n in part_names(path)]
    n = pq.ParquetFile(path).metadata.num_rows
    size = max(-(-n // max(slices, 1)), 1)
    return [Partition(str(path), a, min(a + size, n)) for a in range(0, n, size)] or [
        Partition(str(path), 0, 0)
    ]


def read_partition(part: Partition) -> list[Trajectory]:
    if part.stop is None:
        return read_trajectories(Path(part.path))
    table = read_table(Path(part.path), TRAJ_SCHEMA).slice(part.start, part.stop - part.start)
    return [Trajectory.from_dict(r) for r in table.to_pylist()]


def light_ok(families: list[str]) -> bool:
    """Whether the runs may travel without their steps' text: every fold-fitted family is constant over a
    run (its values come from the run's context alone, e.g. peer_prior); text reads the steps."""
    return all(getattr(family_class(f), "constant_per_run", False) for f in fold_fitted(families))


def strip_text(t: Trajectory) -> Trajectory:
    """The run without its steps' observation, thought and action texts (identity, labels, counts kept)."""
    steps = [
        dataclasses.replace(
            s, observation="", thought="", actions=[Action(a.tool, "", a.kind) for a in s.actions]
        )
        for s in t.steps
    ]
    return dataclasses.replace(t, steps=steps)


@functools.lru_cache(maxsize=4)
def _tasks(path: str, stamp: tuple[int, int]) -> dict[str, Any]:
    """The task table, read once per worker process per version of the file."""
    return read_tasks(Path(path))


def task_table(bench: str) -> dict[str, Any]:
    p = bench_dir(bench) / "tasks.parquet"
    if not p.exists():
        return {}
    st = p.stat()
    return _tasks(str(p), (st.st_mtime_ns, st.st_size))


def featurize_part(
    ws: str,
    root: str,
    bench: str,
    families: list[str],
    part: Partition,
    prefixes_out: str,
    runs_out: str,
    light: bool,
) -> tuple[int, int]:
    """One task: the fold-free blocks of one partition's prefixes and its labelled runs, as two parts.
    (labelled runs, prefix rows)."""
    in_workspace(ws)
    ds = load_dataset(
        bench,
        families,
        Path(root),
        progress=False,
        trajs=read_partition(part),
        tasks=task_table(bench),
        whole=False,
    )
    cols: dict[str, Any] = {
        "run_id": pa.array([ds.trajs[i].run_id for i in ds.prefixes["run"]], pa.string()),
        "t": pa.array(ds.prefixes["t"].to_numpy(), pa.int32()),
    }
    for block, X in ds.blocks.items():
        for j, name in enumerate(ds.block_names[block]):
            cols[f"{block}/{name}"] = pa.array(np.ascontiguousarray(X[:, j]), pa.float32())
    meta = {BLOCKS_KEY: json.dumps(ds.block_names).encode()}
    table = pa.table(cols).replace_schema_metadata(meta)
    with atomic_path(Path(prefixes_out)) as tmp:
        pq.write_table(table, tmp)
    write_trajectories([strip_text(t) for t in ds.trajs] if light else ds.trajs, Path(runs_out))
    return len(ds.trajs), len(ds.prefixes)


def featurize(
    client: Client,
    bench: str,
    families: list[str],
    root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Dataset:
    """Featurize every partition on the cluster (``featurize_parts``) and return the ``Dataset`` they make
    (``dataset_from_parts``)."""
    featurize_parts(client, bench, families, root, progress)
    return dataset_from_parts(bench, families, root)


def featurize_parts(
    client: Client,
    bench: str,
    families: list[str],
    root: str | Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """Featurize every partition on the cluster and swap the parts in under ``features/<bench>/``."""
    free = fold_free(families)  # an unknown family raises here, before any task
    src = bench_dir(bench) / "trajectories.parquet"
    if not (src.parent / "ingest.done").exists():
        log.warning(
            "%s has no ingest.done: the last `earlyeval ingest --bench %s` did not finish",
            src.parent,
            bench,
        )
    parts = partitions(src, SLICES_PER_WORKER * len(workers_of(client)))
    light = light_ok(families)
    out = features_dir(bench)
    stage_p, stage_r = new_dir_beside(out / PREFIXES), new_dir_beside(out / RUNS)
    ws, r = str(workspace_root()), str(data_root(root))
    futs = {
        client.submit(
            featurize_part,
            ws,
            r,
            bench,
            free,
            p,
            str(stage_p / f"part-{k:05d}.parquet"),
            str(stage_r / f"part-{k:05d}.parquet"),
            light,
            key=f"earlyeval-featurize-{stage_p.name}-{k}",
            pure=False,
        ): k
        for k, p in enumerate(parts)
    }
    try:
        for n, fut in enumerate(as_completed(list(futs)), start=1):
            result_of(fut, f"featurize partition {futs[fut]}")
            if progress:
                progress(f"featurize: {n}/{len(futs)} partitions")
    except (
        BaseException
    ):  # Ctrl-C or a failed partition: no task left running, no staging left behind
        client.cancel(list(futs))
        for d in (stage_p, stage_r):
            shutil.rmtree(d, ignore_errors=True)
        raise
    swap_dir(stage_p, out / PREFIXES)
    swap_dir(stage_r, out / RUNS)
    return out


@dataclass(frozen=True)
class PartsRef:
    """Where a featurized dataset's parts are, as a task needs them to read it itself (``parts_dataset``);
    ``stamp`` (each part's name, mtime and size) makes a worker's cached copy of an older featurize miss."""

    ws: str
    root: str
    bench: str
    families: tuple[str, ...]
    prefixes: str
    stamp: tuple[tuple[str, int, int], ...]


def parts_ref(bench: str, families: list[str], root: str | Path | None = None) -> PartsRef:
    out = features_dir(bench) / PREFIXES
    if not out.is_dir() or not part_names(out):
        raise FileNotFoundError(f"{out} has no parts: featurize on the cluster first")
    stamp = tuple((n, (st := (out / n).stat()).st_mtime_ns, st.st_size) for n in part_names(out))
    return PartsRef(
        str(workspace_root()), str(data_root(root)), bench, tuple(families), str(out), stamp
    )


def part_bounds(ref: PartsRef) -> np.ndarray:
    """The prefix rows of each part, as boundaries [0, n0, n0 + n1, ...] (from the parts' footers alone)."""
    sizes = [pq.ParquetFile(Path(ref.prefixes) / n).metadata.num_rows for n, *_ in ref.stamp]
    return np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])


def read_blocks(ref: PartsRef, names: dict[str, list[str]]) -> dict[str, np.ndarray]:
    """Every fold-free block of every part, as the float32 matrices ``load_dataset`` gives."""
    table = read_table(Path(ref.prefixes))
    blocks = {}
    for (
        block,
        bnames,
    ) in names.items():  # the loader's order: the fold-free families, then prior@current_pool
        cols = [table.column(f"{block}/{n}").to_numpy() for n in bnames]
        blocks[block] = (
            np.ascontiguousarray(np.column_stack(cols), dtype=np.float32)
            if cols
            else np.zeros((table.num_rows, 0), np.float32)
        )
    return blocks


class PartBlocks(MutableMapping):
    """``Dataset.blocks`` of a featurized dataset, read from its parts on first use: the driver of ``train
    --scheduler`` never reads them (the fits read them on the workers), and a pickled copy (a task's argument)
    travels as the reference, each worker reading the parts itself. A block set here (``pass``) is kept as is."""

    def __init__(self, ref: PartsRef, names: dict[str, list[str]]):
        self.ref, self.names = ref, dict(names)
        self._data: dict[str, np.ndarray] | None = None
        self._extra: dict[str, np.ndarray] = {}

    @property
    def loaded(self) -> bool:
        return self._data is not None

    def __getitem__(self, block: str) -> np.ndarray:
        if block in self._extra:
            return self._extra[block]
        if self._data is None:
            self._data = read_blocks(self.ref, self.names)
        return self._data[block]

    def __setitem__(self, block: str, value: np.ndarray) -> None:
        self._extra[block] = value

    def __delitem__(self, block: str) -> None:
        raise TypeError("the blocks of a featurized dataset are read-only")

    def __contains__(self, block: object) -> bool:
        return block in self.names or block in self._extra

    def __iter__(self) -> Iterator[str]:
        return iter([*self.names, *(b for b in self._extra if b not in self.names)])

    def __len__(self) -> int:
        return len(list(iter(self)))

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_data": None}


def dataset_from_parts(bench: str, families: list[str], root: str | Path | None = None) -> Dataset:
    """The modelling ``Dataset`` from ``featurize``'s parts: what ``load_dataset`` returns for the same runs
    (the runs possibly without their steps' text, see the module doc), its blocks read on first use
    (``PartBlocks``)."""
    out = features_dir(bench)
    ref = parts_ref(bench, families, root)
    trajs = read_trajectories(out / RUNS)
    keys = pa.concat_tables(
        [pq.read_table(Path(ref.prefixes) / n, columns=["run_id", "t"]) for n, *_ in ref.stamp]
    )
    names: dict[str, list[str]] = json.loads(
        pq.read_schema(Path(ref.prefixes) / ref.stamp[0][0]).metadata[BLOCKS_KEY]
    )
    cat = load_catalog(bench)
    tasks = read_tasks(bench_dir(bench) / "tasks.parquet")
    prior_table = None
    if "prior" in families and cat.priors.get("path"):
        prior_table = PriorTable.load(data_root(root) / cat.priors["path"])
    contexts = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    prefixes = prefix_table(trajs, min_steps=2)
    run_ids = [trajs[i].run_id for i in prefixes["run"]]
    if keys.column("run_id").to_pylist() != run_ids or not np.array_equal(
        keys.column("t").to_numpy(), prefixes["t"].to_numpy()
    ):
        raise AssertionError(
            f"{out / PREFIXES}: its rows are not the prefixes of {out / RUNS} (a mixed or stale feature set?)"
        )
    ds = Dataset(bench, cat, trajs, tasks, contexts, prefixes, prior_table=prior_table)
    ds.blocks = PartBlocks(ref, names)  # type: ignore[assignment]  # a Mapping of the same blocks
    ds.block_names.update({b: list(n) for b, n in names.items()})
    if PASS in fold_free(
        families
    ):  # it reads each agent's other runs, which one partition does not hold
        add_pass_block(ds)
    return ds


@functools.lru_cache(maxsize=1)
def parts_dataset(ref: PartsRef) -> Dataset:
    """A task's ``Dataset`` of ``ref``, read by the worker itself from the parts, once per worker process."""
    in_workspace(ref.ws)
    return dataset_from_parts(ref.bench, list(ref.families), ref.root)

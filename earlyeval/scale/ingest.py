"""Ingest on a cluster: each run's files are read in chunks, one task per chunk, each writing its own part.

A part is whole or absent, never torn or written twice, and the parts are the in-process dataset in the same
order. How: docs/scale.md, "Each stage in detail".
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("train", "earlyeval.scale.ingest (parquet parts)", ("pyarrow",))

import dataclasses
import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pyarrow.parquet as pq
from distributed import Client, as_completed

from earlyeval.config.catalog import Catalog
from earlyeval.config.workspace import workspace_root
from earlyeval.core.atomic import new_dir_beside, swap_dir
from earlyeval.core.content import copy_key
from earlyeval.core.errors import WriteError
from earlyeval.ingest import (
    SUMMARY_FLAGS,
    RunPlan,
    RunReport,
    copy_of,
    plan_run,
    read_run_files,
    summarize_run,
    unique_run_id,
)
from earlyeval.scale.cluster import in_workspace, result_of
from earlyeval.tables.store import PARTS, part_names, read_trajectories, write_trajectories

log = logging.getLogger(__name__)

CHUNK_FILES = 64  # files per task: small enough to balance 9 runs over many workers, large enough to amortise a task


@dataclass
class RunRecord:
    """What the driver keeps of one ingested trajectory (never its steps): enough for the report's counts,
    label cross-check and prefix drops (``ingest.summarize_run``, ``prefixes.drop_report`` read these)."""

    run_id: str
    source: str
    agent: str
    task_id: str
    outcome: int | None
    n_steps: int
    # only the flags summarize_run reads (SUMMARY_FLAGS)
    meta: dict[str, Any] = field(default_factory=dict)
    # what a copy shares (core.content.copy_key): a copy in another chunk is counted once
    copy_key: str = ""

    @property
    def steps(self) -> range:
        return range(self.n_steps)


@dataclass
class ChunkResult:
    part: str  # the part's file name
    records: list[RunRecord]
    skipped: list[dict[str, str]]


def read_chunk(ws: str, plan: RunPlan, paths: list[str], bench: str, part: str) -> ChunkResult:
    """One task: read ``paths`` of the planned run, write their trajectories as the part ``part`` (atomically)."""
    in_workspace(ws)
    trajs, skipped = read_run_files(plan, [Path(p) for p in paths], bench)
    if not Path(
        part
    ).parent.is_dir():  # the driver gave up (Ctrl-C, a failed chunk) and removed the staging:
        # nothing re-made there
        raise RuntimeError(f"{Path(part).parent}: staging removed, the ingest was abandoned")
    try:
        # never re-makes a staging folder the driver removed
        write_trajectories(trajs, Path(part), parents=False)
    except (FileNotFoundError, WriteError) as e:
        if Path(part).parent.is_dir():
            raise
        raise RuntimeError(f"{Path(part).parent}: staging removed, the ingest was abandoned") from e
    recs = [
        RunRecord(
            t.run_id,
            str(t.meta.get("source_file", "?")),
            t.agent,
            t.task_id,
            t.outcome,
            len(t.steps),
            {k: True for k in SUMMARY_FLAGS if t.meta.get(k)},
            copy_key(t),
        )
        for t in trajs
    ]
    return ChunkResult(Path(part).name, recs, skipped)


@dataclass
class IngestedParts:
    """A finished cluster ingest, not yet in place: ``commit`` swaps its parts in as the dataset."""

    reports: list[RunReport]
    records: list[RunRecord]  # every trajectory, in dataset order
    staging: Path
    parts: list[str]

    def commit(self, dest: Path) -> Path:
        """Put the parts at ``dest`` as one step (``atomic.swap_dir``), replacing a file or a directory."""
        return swap_dir(self.staging, dest)


def ingest_parts(
    client: Client,
    cat: Catalog,
    root: Path,
    dest: Path,
    *,
    chunk_files: int = CHUNK_FILES,
    runs: list[str] | None = None,
    max_files: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> IngestedParts:
    """Read the catalog's runs on the cluster into a staging directory beside ``dest`` (see the module doc)."""
    if chunk_files < 1:
        raise ValueError(f"chunk_files must be >= 1, not {chunk_files}")
    specs = [r for r in cat.runs if runs is None or r.name in runs or r.agent in runs]
    plans = [plan_run(spec, root, max_files) for spec in specs]
    staging = new_dir_beside(dest)
    jobs: dict[Any, tuple[int, int]] = {}
    try:
        results, n_chunks = _read_all(client, cat, plans, staging, jobs, chunk_files, progress)
    except BaseException:  # Ctrl-C or a failed chunk: no task left running, no staging left behind
        client.cancel(list(jobs))
        swap_cleanup(staging)
        raise
    return _assemble(plans, n_chunks, results, staging)


def _read_all(
    client: Client,
    cat: Catalog,
    plans: list[Any],
    staging: Path,
    jobs: dict[Any, tuple[int, int]],
    chunk_files: int,
    progress: Callable[[str], None] | None,
) -> tuple[dict[tuple[int, int], ChunkResult], list[int]]:
    """Every chunk of every plan submitted (into ``jobs``, so the caller can cancel them) and gathered."""
    ws = str(workspace_root())
    n_chunks: list[int] = []
    for i, plan in enumerate(plans):
        slim = dataclasses.replace(
            plan,
            paths=[],
            report=RunReport(
                plan.report.run, plan.report.agent, plan.report.format, plan.report.folder
            ),
        )
        chunks = [
            plan.paths[k : k + chunk_files] for k in range(0, len(plan.paths), chunk_files)
        ] or [[]]
        n_chunks.append(len(chunks))
        for j, chunk in enumerate(chunks):
            part = staging / f"part-{i:05d}-{j:05d}.parquet"
            fut = client.submit(
                read_chunk,
                ws,
                slim,
                [str(p) for p in chunk],
                cat.bench,
                str(part),
                key=f"earlyeval-ingest-{staging.name}-{i}-{j}",
                pure=False,
            )
            jobs[fut] = (i, j)
    results: dict[tuple[int, int], ChunkResult] = {}
    total = len(jobs)
    for n, fut in enumerate(as_completed(list(jobs)), start=1):
        where = jobs[fut]
        results[where] = result_of(fut, f"ingest chunk {where} of {plans[where[0]].report.run}")
        # its result is here now: the last reference goes, so its worker frees it (not at the end)
        del jobs[fut]
        if progress:
            progress(f"ingest: {n}/{total} chunks read")
    return results, n_chunks


def _assemble(
    plans: list[Any],
    n_chunks: list[int],
    results: dict[tuple[int, int], ChunkResult],
    staging: Path,
) -> IngestedParts:
    """The runs' reports and records from their chunks (run ids made unique as in-process), the parts checked."""
    reports, records = [], []
    for i, plan in enumerate(plans):
        rep = plan.report
        seen: dict[str, str] = {}
        copies: dict[str, str] = {}  # copy key -> file, across the run's chunks (ingest.copy_of)
        run_records: list[RunRecord] = []
        for j in range(n_chunks[i]):
            res = results[(i, j)]
            rep.skipped.extend(res.skipped)
            kept: list[RunRecord] = []
            new_ids: list[str | None] = []
            for r in (
                res.records
            ):  # run ids unique across the run's chunks, as one in-process pass makes them
                rid, dup = unique_run_id(r.run_id, r.source, seen, plan.run_dir)
                if dup is None:
                    dup = copy_of(r.copy_key, r.source, copies, f"{rep.run}: ")
                if dup is not None:
                    rep.skipped.append(dup)
                    new_ids.append(None)
                    continue
                new_ids.append(rid)
                kept.append(dataclasses.replace(r, run_id=rid))
                seen[rid] = r.source
            if new_ids != [r.run_id for r in res.records]:
                _rewrite_part(staging / res.part, new_ids)
            res.records = kept
            run_records.extend(kept)
        reports.append(summarize_run(rep, run_records, plan.label_sets))
        records.extend(run_records)
        log.info(
            "%s: %d trajectories (%d resolved), %d skipped",
            rep.run,
            rep.trajectories,
            rep.resolved,
            len(rep.skipped),
        )
    parts = check_parts(staging, {res.part: len(res.records) for res in results.values()})
    ids = [r.run_id for r in records]
    if len(set(ids)) != len(ids):
        raise AssertionError(
            f"run ids repeat across parts: {sorted({i for i in ids if ids.count(i) > 1})[:5]}"
        )
    return IngestedParts(reports, records, staging, parts)


def _rewrite_part(path: Path, new_ids: list[str | None]) -> None:
    """A part whose run ids the driver changed: row k renamed ``new_ids[k]``, or dropped where None (atomically)."""
    trajs = read_trajectories(path)
    if len(trajs) != len(new_ids):
        raise AssertionError(f"{path}: {len(trajs)} rows, its task reported {len(new_ids)}")
    out = []
    for t, rid in zip(trajs, new_ids):
        if rid is not None:
            t.run_id = rid
            out.append(t)
    write_trajectories(out, path)


def check_parts(staging: Path, expected: dict[str, int]) -> list[str]:
    """Every part present once, holding exactly the rows its task reported; leftovers of killed writers
    (temp files) removed.  The part names, in dataset order."""
    for name in os.listdir(staging):
        if name not in expected:
            p = staging / name
            log.info("removing %s (a killed writer's temp file)", p)
            p.unlink()
    names = part_names(staging)
    if sorted(expected) != names:
        raise AssertionError(
            f"parts {sorted(set(expected) ^ set(names))[:5]} missing or unexpected in {staging}"
        )
    for name in names:
        rows = pq.ParquetFile(staging / name).metadata.num_rows
        if rows != expected[name]:
            raise AssertionError(f"{staging / name}: {rows} rows, its task wrote {expected[name]}")
    return names


def swap_cleanup(staging: Path, tries: int = 100) -> None:
    """Remove a staging directory an interrupted ingest leaves (the previous dataset stays in place).  A chunk
    still running on a worker may add a file while the tree is removed (its rmdir then fails); once the folder is
    gone no chunk re-makes it (``read_chunk`` writes with ``parents=False``), so removing again until it is gone
    ends it.  Never raises: on the way out of an error, never one that hides it."""
    for _ in range(tries):
        shutil.rmtree(staging, ignore_errors=True)
        if not os.path.lexists(staging):
            return
        time.sleep(0.05)


__all__ = [
    "CHUNK_FILES",
    "ChunkResult",
    "IngestedParts",
    "PARTS",
    "RunRecord",
    "check_parts",
    "ingest_parts",
    "read_chunk",
]

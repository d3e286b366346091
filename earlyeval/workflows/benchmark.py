"""Latency of ``Monitor.observe`` on real trajectories, on one core (``make bench``).

A sample of every agent's runs replayed through one pinned monitor, written to ``latency.json`` and a plot;
nothing asserts a time. Target, method and numbers: docs/monitor.md, "Latency".
"""

from __future__ import annotations

import gc
import json
import logging
import os
import platform
import time
from pathlib import Path
from typing import Any, NamedTuple

from earlyeval.config.catalog import load_catalog
from earlyeval.config.workspace import models_dir, reports_dir
from earlyeval.core.atomic import write_text as atomic_write_text
from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.features import RunContext
from earlyeval.live.monitor import Monitor
from earlyeval.tables.store import read_ingested_tasks, read_ingested_trajectories
from earlyeval.workflows.benchmark_runs import new_file_run, sample_runs, synthetic_long_run
from earlyeval.workflows.latency_report import (
    Row,
    by_format,
    by_step_bucket,
    long_run_block,
    per_step_stats,
    plot_latency,
    step_10_vs_100,
    synthetic_note,
)

log = logging.getLogger(__name__)


def one_core() -> dict[str, Any]:
    """Pin this process to one CPU and ask OpenMP/LightGBM for one thread; returns what to restore."""
    os.environ["OMP_NUM_THREADS"] = "1"
    before = None
    cpu = None
    if hasattr(os, "sched_getaffinity"):
        before = os.sched_getaffinity(0)
        cpu = min(before)
        try:
            os.sched_setaffinity(0, {cpu})
        except OSError:  # not allowed in some containers: the thread settings still hold
            cpu = None
    return {"affinity": before, "cpu": cpu}


def time_run(
    monitor: Any, traj: Trajectory, task: Task | None
) -> list[tuple[int, float, float, float, float, bool, float]]:
    """(t, wall, cpu, featurize, predict, halted_here, budget) for every step of one replayed run."""
    monitor.start_context(RunContext.of(traj, task), traj.run_id)
    out = []
    pc, tc = time.perf_counter, time.thread_time
    was_halted = False
    for t, step in enumerate(traj.steps, start=1):
        c0 = tc()
        w0 = pc()
        d = monitor.observe(step)
        w1 = pc()
        c1 = tc()
        fe, pr = monitor.run.last_timing
        out.append(
            (t, w1 - w0, c1 - c0, fe, pr, d.halt and not was_halted, monitor.run.last_budget_time)
        )
        was_halted = was_halted or d.halt
    return out


def run_latency_bench(
    bench: str,
    model_dir: str | Path | None = None,
    *,
    per_agent: int = 8,
    synthetic_steps: int = 150,
    min_long_runs: int = 10,
    trajs: list[Trajectory] | None = None,
    tasks: dict[str, Task] | None = None,
    out: str | Path | None = None,
    formats: dict[str, str] | None = None,
    seed: int = 0,
    budget: bool | tuple[str, ...] | list[str] = ("steps",),
    long_steps: int = 10_000,
) -> dict[str, Path]:
    """Replay a sample of real runs through ``Monitor.observe`` on one core; write latency.json and latency.png.
    ``budget``: the Monitor's budget part (True: every dimension the model has; False: off; or dimension names).
    ``long_steps``: also time one run of that many steps that edits a new file every step (0: off), reported
    per bucket of steps 1-10, 91-100 and 9,991-10,000 (``long_run``): per-step cost must not grow with t."""
    pinned = one_core()
    try:
        return _bench(
            bench,
            model_dir,
            per_agent,
            synthetic_steps,
            min_long_runs,
            trajs,
            tasks,
            out,
            formats,
            seed,
            pinned,
            budget,
            long_steps,
        )
    finally:
        if pinned["affinity"] is not None and pinned["cpu"] is not None:
            os.sched_setaffinity(0, pinned["affinity"])


class _Replay(NamedTuple):
    """What one replay of the sample recorded: per-step rows of the real (and synthetic) runs, of the long run."""

    rows: list[Row]
    runs: list[tuple[Trajectory, str]]
    long_rows: list[tuple[int, float, float, float, float]]
    load_before: Any
    load_after: Any


def _bench(
    bench: str,
    model_dir: Any,
    per_agent: int,
    synthetic_steps: int,
    min_long_runs: int,
    trajs: list[Trajectory] | None,
    tasks: dict[str, Task] | None,
    out: Any,
    formats: dict[str, str] | None,
    seed: int,
    pinned: dict[str, Any],
    budget: bool | tuple[str, ...] | list[str] = ("steps",),
    long_steps: int = 0,
) -> dict[str, Path]:

    mdir = Path(model_dir) if model_dir else models_dir(bench)
    monitor = Monitor.load(mdir, budget=budget)
    if trajs is None:
        trajs = read_ingested_trajectories(bench)
    if tasks is None:
        tasks = read_ingested_tasks(bench)
    formats = formats if formats is not None else _formats_of(bench)
    sample = sample_runs(trajs, per_agent, seed)
    if not sample:
        raise ValueError("no run with at least 2 steps to replay")
    n_long = sum(len(t.steps) >= 100 for t in sample)
    synth = (
        synthetic_long_run(sample, synthetic_steps)
        if n_long < min_long_runs and synthetic_steps
        else None
    )
    rp = _replay(monitor, sample, synth, tasks, formats, long_steps)

    real = [r for r in rp.rows if r[1] != "synthetic"]
    report: dict[str, Any] = {
        "bench": bench,
        "model": str(mdir),
        "predictor": monitor.loaded.predictor_kind,
        "budget": monitor.loaded.budget_status,
        "families": monitor.featurizer.family_names,
        "n_features": len(monitor.loaded.feature_names),
        "setup": _setup(pinned, rp),
        "target": {"median_us": 200, "p99_us": 1000},
        "sample": {
            "runs": len(sample),
            "steps": len(real),
            "per_agent": per_agent,
            "runs_reaching_step_100": n_long,
            "formats": sorted({f for _, f in rp.runs if f != "synthetic"}),
        },
        "synthetic": None if synth is None else synthetic_note(synth, n_long, min_long_runs),
        "per_step": per_step_stats(real),
        "by_step_bucket": by_step_bucket(rp.rows),
        "by_format": by_format(rp.rows),
    }
    report["step_10_vs_100"] = step_10_vs_100(report["by_step_bucket"])

    if rp.long_rows:
        report["long_run"] = long_run_block(rp.long_rows)
    dest = Path(out) if out else reports_dir(bench)
    dest.mkdir(parents=True, exist_ok=True)
    pj = dest / "latency.json"
    atomic_write_text(pj, json.dumps(report, indent=1))
    pp = plot_latency(rp.rows, dest / "latency.png", bench)
    return {"latency": pj, "plot": pp}


def _replay(
    monitor: Any,
    sample: list[Trajectory],
    synth: Trajectory | None,
    tasks: dict[str, Task],
    formats: dict[str, str],
    long_steps: int,
) -> _Replay:
    """One warm-up run, then every sampled run (and the synthetic one) and the long run, timed with the benchmark's
    data frozen out of the garbage collector; the load average around it."""
    # warm-up: one run, not recorded (first-call allocations, caches)
    time_run(monitor, sample[0], tasks.get(sample[0].task_id))
    # the whole benchmark's trajectories sit in this process, which a live agent's does not: keep them
    # out of the garbage collector's scans (a full collection over them takes ~100 ms)
    gc.collect()
    gc.freeze()
    rows: list[Row] = []
    runs = [(t, formats.get(str(t.meta.get("run", "")), "?")) for t in sample]
    if synth is not None:
        runs.append((synth, "synthetic"))
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    for traj, fmt in runs:
        for t, w, c, fe, pr, h, bu in time_run(monitor, traj, tasks.get(traj.task_id)):
            rows.append((traj.run_id, fmt, t, w, c, fe, pr, h, bu))
    long_rows: list[tuple[int, float, float, float, float]] = []
    if long_steps:
        # on a task with a gold patch when there is one, so the gold family does its full work
        base = next(
            (t for t in sample if (tasks.get(t.task_id) and tasks[t.task_id].gold_patch)), sample[0]
        )
        lr = new_file_run(base, long_steps)
        long_rows = [
            (t, w, c, fe, pr)
            for t, w, c, fe, pr, _, _ in time_run(monitor, lr, tasks.get(lr.task_id))
        ]
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    gc.unfreeze()
    return _Replay(rows, runs, long_rows, load_before, load_after)


def _setup(pinned: dict[str, Any], rp: _Replay) -> dict[str, Any]:
    """How the numbers were taken: the pinned CPU, the threads, the machine and its load."""
    return {
        "cpu_pinned": pinned["cpu"],
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "lightgbm_threads": 1,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "load_average_before": rp.load_before,
        "load_average_after": rp.load_after,
        "note": "wall = perf_counter around observe(); cpu = thread CPU time of the same call "
        "(insensitive to other processes on the machine); featurize/predict = the monitor's own stage timers; "
        "the halting step also computes TreeSHAP top features (explain='halt'; ~0.4 ms, once per run); "
        "objects loaded before timing are gc.freeze()-d, as a live agent process does not hold the benchmark's data",
    }


def _formats_of(bench: str) -> dict[str, str]:
    """Catalog run name -> native format."""
    try:
        return {r.name: r.format for r in load_catalog(bench).runs}
    except Exception:  # an ad-hoc benchmark without catalog: formats unknown
        return {}

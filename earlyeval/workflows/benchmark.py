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
from collections import defaultdict
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from earlyeval.config.catalog import load_catalog
from earlyeval.config.workspace import models_dir, reports_dir
from earlyeval.core.atomic import savefig
from earlyeval.core.atomic import write_text as atomic_write_text
from earlyeval.core.trajectory import Action, Step, Task, Trajectory, make_step
from earlyeval.features import RunContext
from earlyeval.live.monitor import Monitor
from earlyeval.tables.store import read_ingested_tasks, read_ingested_trajectories

log = logging.getLogger(__name__)

BUCKETS = [(lo, lo + 9) for lo in range(1, 100, 10)] + [(101, 10**9)]


def _bucket(t: int) -> str:
    for lo, hi in BUCKETS:
        if lo <= t <= hi:
            return f"{lo}-{hi}" if hi < 10**9 else f"{lo}+"
    return "?"


def _stats(xs: list[float] | np.ndarray) -> dict[str, Any]:
    """Microseconds: n, median, p90, p99, max, mean."""
    a = np.asarray(xs, dtype=np.float64) * 1e6
    if a.size == 0:
        return {"n": 0}
    return {
        "n": int(a.size),
        "median_us": round(float(np.median(a)), 1),
        "p90_us": round(float(np.percentile(a, 90)), 1),
        "p99_us": round(float(np.percentile(a, 99)), 1),
        "max_us": round(float(a.max()), 1),
        "mean_us": round(float(a.mean()), 1),
    }


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


def sample_runs(
    trajs: list[Trajectory], per_agent: int, seed: int = 0, long_steps: int = 100
) -> list[Trajectory]:
    """Per agent, its longest runs (half the quota) and random others: late steps and typical steps;
    plus every run of at least ``long_steps`` steps, the few that show step 100."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajs:
        if len(t.steps) >= 2:
            by[t.agent].append(t)
    out = []
    for agent in sorted(by):
        ts = sorted(by[agent], key=lambda t: (-len(t.steps), t.run_id))
        longest = ts[: per_agent // 2]
        rest = ts[per_agent // 2 :]
        k = min(per_agent - len(longest), len(rest))
        pick = [rest[i] for i in sorted(rng.choice(len(rest), k, replace=False))] if k > 0 else []
        out += longest + pick
    chosen = {t.run_id for t in out}
    out += [t for t in trajs if len(t.steps) >= long_steps and t.run_id not in chosen]
    return out


def synthetic_long_run(trajs: list[Trajectory], n_steps: int) -> Trajectory:
    """Real steps, cycled from the longest runs and re-indexed, into one run of ``n_steps`` steps."""
    src = [s for t in sorted(trajs, key=lambda t: -len(t.steps))[:5] for s in t.steps[:-1]]
    steps = []
    for i in range(n_steps):
        s = src[i % len(src)]
        steps.append(Step.from_dict({**s.to_dict(), "index": i}))
    base = max(trajs, key=lambda t: len(t.steps))
    return Trajectory(
        run_id="synthetic/long",
        agent="synthetic (cycled real steps)",
        bench=base.bench,
        task_id=base.task_id,
        steps=steps,
        outcome=None,
        meta=dict(base.meta),
        prompt=base.prompt,
    )


def new_file_run(base: Trajectory, n_steps: int) -> Trajectory:
    """A run of ``n_steps`` edits, each of a file (and identifiers) never seen before: the worst case for
    any per-step work that grows with the run (sets of edited files, identifiers, per-file counters)."""
    steps = [
        make_step(
            i,
            [
                Action(
                    "bash",
                    f"sed -i 's/old_{i}/fix_value_{i}(x_{i})/' src/pkg_{i % 97}/module_{i}.py",
                )
            ],
            thought=f"edit module {i}",
            observation="",
            input_tokens=1000 + i,
            output_tokens=50,
            error=False,
        )
        for i in range(n_steps)
    ]
    return Trajectory(
        run_id="synthetic/new-file-every-step",
        agent="synthetic (new file every step)",
        bench=base.bench,
        task_id=base.task_id,
        steps=steps,
        outcome=None,
        meta=dict(base.meta),
        prompt=base.prompt,
    )


LONG_BUCKETS = ((1, 10), (91, 100), (9_991, 10_000))


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


# run, format, t, wall, cpu, featurize, predict, halt, budget
_Row = tuple[str, str, int, float, float, float, float, bool, float]


class _Replay(NamedTuple):
    """What one replay of the sample recorded: per-step rows of the real (and synthetic) runs, of the long run."""

    rows: list[_Row]
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
        "synthetic": None if synth is None else _synthetic(synth, n_long, min_long_runs),
        "per_step": _per_step(real),
        "by_step_bucket": _by_step_bucket(rp.rows),
        "by_format": _by_format(rp.rows),
    }
    report["step_10_vs_100"] = _step_10_vs_100(report["by_step_bucket"])

    if rp.long_rows:
        report["long_run"] = _long_run(rp.long_rows)
    dest = Path(out) if out else reports_dir(bench)
    dest.mkdir(parents=True, exist_ok=True)
    pj = dest / "latency.json"
    atomic_write_text(pj, json.dumps(report, indent=1))
    pp = _plot(rp.rows, dest / "latency.png", bench)
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
    rows: list[_Row] = []
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


def _per_step(real: list[_Row]) -> dict[str, Any]:
    """Per-step statistics over the real runs' steps, each stage, and halting against non-halting steps."""
    return {
        "wall": _stats([r[3] for r in real]),
        "cpu": _stats([r[4] for r in real]),
        "featurize": _stats([r[5] for r in real]),
        "predict": _stats([r[6] for r in real]),
        "budget": _stats([r[8] for r in real]),
        "other": _stats([max(r[3] - r[5] - r[6] - r[8], 0.0) for r in real]),
        "halting_steps_wall": _stats([r[3] for r in real if r[7]]),
        "non_halting_steps_wall": _stats([r[3] for r in real if not r[7]]),
        "non_halting_steps_cpu": _stats([r[4] for r in real if not r[7]]),
    }


def _by_step_bucket(rows: list[_Row]) -> dict[str, Any]:
    """Per bucket of step numbers (``BUCKETS``), real and synthetic steps together: is the cost flat in t?"""
    out: dict[str, Any] = {}
    for lo, hi in BUCKETS:
        sel = [r for r in rows if lo <= r[2] <= hi]
        out[_bucket(lo)] = {
            "wall": _stats([r[3] for r in sel]),
            "cpu": _stats([r[4] for r in sel]),
            "featurize": _stats([r[5] for r in sel]),
            "predict": _stats([r[6] for r in sel]),
            "budget": _stats([r[8] for r in sel]),
            "synthetic_share": round(sum(r[1] == "synthetic" for r in sel) / len(sel), 3)
            if sel
            else None,
        }
    return out


def _synthetic(synth: Trajectory, n_long: int, min_long_runs: int) -> dict[str, Any]:
    """Why the synthetic long run was added, and what it is: real steps, not a real run."""
    return {
        "steps": len(synth.steps),
        "why": f"only {n_long} sampled real runs reach step 100 (< {min_long_runs})",
        "how": "real steps of the longest sampled runs, cycled and re-indexed into one run",
    }


def _step_10_vs_100(by_bucket: dict[str, Any]) -> dict[str, Any]:
    """The headline flatness check: median wall and CPU time of steps 1-10 against steps 91-100."""
    b10, b100 = by_bucket["1-10"], by_bucket["91-100"]
    return {
        "median_us_steps_1_10": b10["wall"].get("median_us"),
        "median_us_steps_91_100": b100["wall"].get("median_us"),
        "cpu_median_us_steps_1_10": b10["cpu"].get("median_us"),
        "cpu_median_us_steps_91_100": b100["cpu"].get("median_us"),
    }


def _by_format(rows: list[_Row]) -> dict[str, Any]:
    """Per native format of the replayed runs."""
    out: dict[str, Any] = {}
    for fmt in sorted({r[1] for r in rows}):
        sel = [r for r in rows if r[1] == fmt]
        out[fmt] = {
            "runs": len({r[0] for r in sel}),
            "wall": _stats([r[3] for r in sel]),
            "cpu": _stats([r[4] for r in sel]),
            "featurize": _stats([r[5] for r in sel]),
            "predict": _stats([r[6] for r in sel]),
            "budget": _stats([r[8] for r in sel]),
        }
    return out


def _long_run(long_rows: list[tuple[int, float, float, float, float]]) -> dict[str, Any]:
    """The new-file-every-step run per bucket of ``LONG_BUCKETS``: per-step cost must not grow with t."""
    return {
        "steps": len(long_rows),
        "how": "one synthetic run whose every step edits a new file with new identifiers (benchmark.new_file_run), "
        "on a task with a gold patch; replayed through the same monitor after the real runs",
        "by_step_bucket": {
            f"{lo}-{hi}": {
                "wall": _stats([r[1] for r in long_rows if lo <= r[0] <= hi]),
                "cpu": _stats([r[2] for r in long_rows if lo <= r[0] <= hi]),
                "featurize": _stats([r[3] for r in long_rows if lo <= r[0] <= hi]),
            }
            for lo, hi in LONG_BUCKETS
        },
    }


def latency_summary(rep: dict[str, Any]) -> str:
    """A few lines for the terminal: per-step wall and CPU time against the target, step 10 vs step 100."""
    w, c, s = rep["per_step"]["wall"], rep["per_step"]["cpu"], rep["step_10_vs_100"]
    lines = [
        f"{rep['sample']['steps']} steps of {rep['sample']['runs']} real runs ({', '.join(rep['sample']['formats'])})"
        + (f" + a synthetic {rep['synthetic']['steps']}-step run" if rep.get("synthetic") else "")
        + f"; predictor: {rep['predictor']}",
        f"observe() per step  wall: median {w['median_us']:.0f} µs, p99 {w['p99_us']:.0f} µs, max {w['max_us']:.0f} µs   "
        f"cpu: median {c['median_us']:.0f} µs, p99 {c['p99_us']:.0f} µs   (target: median 200, p99 1000)",
        f"featurize median {rep['per_step']['featurize']['median_us']:.0f} µs, predict median {rep['per_step']['predict']['median_us']:.0f} µs, "
        f"budget median {rep['per_step'].get('budget', {}).get('median_us', 0):.0f} µs (p99 {rep['per_step'].get('budget', {}).get('p99_us', 0):.0f}; "
        f"{rep.get('budget')})",
        f"median wall, steps 1-10: {s['median_us_steps_1_10']} µs; steps 91-100: {s['median_us_steps_91_100']} µs",
        f"load average during the run: {rep['setup']['load_average_before']}",
    ]
    if rep.get("long_run"):
        lines.append(
            f"new-file-every-step run of {rep['long_run']['steps']} steps, wall median / p99 (cpu median / p99) µs:"
        )
        for b, v in rep["long_run"]["by_step_bucket"].items():
            lines.append(
                f"  steps {b:>12}: {v['wall'].get('median_us', 0):.0f} / {v['wall'].get('p99_us', 0):.0f}"
                f"   ({v['cpu'].get('median_us', 0):.0f} / {v['cpu'].get('p99_us', 0):.0f})"
            )
    return "\n".join(lines)


def _formats_of(bench: str) -> dict[str, str]:
    """Catalog run name -> native format."""
    try:
        return {r.name: r.format for r in load_catalog(bench).runs}
    except Exception:  # an ad-hoc benchmark without catalog: formats unknown
        return {}


def _plot(rows: list[tuple], path: Path, bench: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.asarray([r[2] for r in rows])
    w = np.asarray([r[3] for r in rows]) * 1e6
    c = np.asarray([r[4] for r in rows]) * 1e6
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.scatter(t, w, s=3, alpha=0.15, color="tab:blue", label="observe() wall, one step")
    top = int(min(t.max(), 160))
    xs, med, p99, cmed, cp99 = [], [], [], [], []
    for k in range(1, top + 1, 5):
        sel = (t >= k) & (t < k + 5)
        if sel.sum() >= 5:
            xs.append(k + 2)
            med.append(np.median(w[sel]))
            p99.append(np.percentile(w[sel], 99))
            cmed.append(np.median(c[sel]))
            cp99.append(np.percentile(c[sel], 99))
    ax.plot(xs, med, color="black", lw=2, label="median (wall), 5-step bins")
    ax.plot(xs, cmed, color="tab:green", lw=1.5, label="median (thread CPU)")
    ax.plot(
        xs, p99, color="tab:red", lw=1.5, label="p99 (wall: includes preemption by other processes)"
    )
    ax.plot(xs, cp99, color="tab:orange", lw=1.5, label="p99 (thread CPU)")
    ax.axhline(200, color="black", ls=":", lw=1, label="target median 200 µs")
    ax.axhline(1000, color="tab:red", ls=":", lw=1, label="target p99 1 ms")
    ax.set_yscale("log")
    ax.set_xlim(0, top + 2)
    ax.set_xlabel("step index (prefix length)")
    ax.set_ylabel("µs per observe()")
    ax.set_title(
        f"{bench}: Monitor.observe latency on one core (beyond step ~100: synthetic run of real steps)"
    )
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    savefig(fig, path, dpi=120)
    plt.close(fig)
    return path

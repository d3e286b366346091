"""``earlyeval bench-scale``: wall time and peak memory per stage as the runs grow, in this process and on a
LocalCluster, side by side (a benchmark, not a test: nothing here asserts a timing).

How it measures (subprocesses, memory sampler, skipped and partial points, the fitted exponent) and what was
measured: docs/scale.md, "Measured: time and memory against the number of runs".
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import psutil

STAGES = ("ingest", "featurize", "train", "evaluate")
SAMPLE_S = 0.25
# points the exponent is fitted on (partial: its full time at its measured rate)
FITTED = (
    "measured",
    "partial",
)
# cluster stages run for max_seconds when predicted longer (their memory at 100x)
TIME_BOXED = (
    "ingest",
    "featurize",
)


@dataclass
class Point:
    stage: str
    mode: str  # "in-process" | "local:N"
    factor: int
    runs: int | None = None
    seconds: float | None = None  # the stage itself (train/evaluate: after their featurize phase)
    cpu_seconds: float | None = None  # the whole subprocess, workers included
    driver_cpu: float | None = (
        None  # during the stage: the driver process (the serial part on a cluster)
    )
    worker_cpu: float | None = None  # during the stage: every worker process together
    peak_total_mb: float | None = None  # driver + workers, during the stage
    peak_driver_mb: float | None = None
    peak_worker_mb: float | None = None  # the largest worker process
    load: float | None = None  # 1-minute load average at the start (the machine is shared)
    status: str = "measured"
    note: str = ""


# ------------------------------------------------------------------ one stage, in its own process


def run_stage(
    stage: str, bench: str, workspace: str, data: str, scheduler: str, marks_path: str
) -> None:
    """The body of a stage's subprocess: run ``stage`` and write the phase marks (wall clock) to ``marks_path``;
    the cluster's progress ("ingest: n/N chunks read") goes, one line each, to ``marks_path`` + ".progress"."""
    from earlyeval.app.stages.evaluate import evaluate_bench
    from earlyeval.app.stages.ingest import ingest_bench
    from earlyeval.app.stages.train import train_bench
    from earlyeval.config.workspace import set_workspace
    from earlyeval.evaluation.settings import eval_config
    from earlyeval.scale.backend import open_backend
    from earlyeval.scale.spec import parse_scheduler

    set_workspace(workspace)
    marks: dict[str, float] = {}
    cfg = eval_config(bench)
    prog = open(marks_path + ".progress", "a", buffering=1)
    with open_backend(
        parse_scheduler(scheduler), progress=lambda m: prog.write(f"{time.time():.2f} {m}\n")
    ) as be:
        marks["start"] = time.time()
        if stage == "ingest":
            ingest_bench(bench, data, progress=False, backend=be)
        elif stage == "featurize":
            be.featurize(bench, cfg.families, data)
        else:  # the cluster reads the featurize stage's parts back; in-process featurizes (its memory is the stage's)
            ds = be.featurized(bench, cfg.families, data)
            marks["featurized"] = time.time()
            if stage == "train":
                train_bench(bench, None, cfg, data, budget=False, ds=ds, backend=be)
            else:
                evaluate_bench(bench, cfg, data, ablations=[], ds=ds, backend=be)
        marks["end"] = time.time()
    Path(marks_path).write_text(json.dumps(marks))


def measure(
    stage: str,
    bench: str,
    workspace: Path,
    data: Path,
    mode: str,
    factor: int,
    runs: int | None,
    timeout: float | None = None,
) -> Point:
    """Run one stage in a subprocess (niced) and sample its memory; the measured ``Point``.  With ``timeout``,
    a cluster stage still running then is stopped and measured as ``partial``: its tasks done so far, their
    rate and its peak memory (a worker's memory does not depend on how many chunks it has read)."""
    pt = Point(stage, mode, factor, runs, load=os.getloadavg()[0])
    marks_path = workspace / f".bench-{stage}-marks.json"
    progress_path = Path(str(marks_path) + ".progress")
    progress_path.unlink(missing_ok=True)
    scheduler = "" if mode == "in-process" else mode
    code = "import sys; from earlyeval.app.scale_bench import run_stage; run_stage(*sys.argv[1:])"
    cmd = [
        "nice",
        "-n",
        "10",
        sys.executable,
        "-c",
        code,
        stage,
        bench,
        str(workspace),
        str(data),
        scheduler,
        str(marks_path),
    ]
    log_path = workspace / f".bench-{stage}.log"
    t_start = time.time()
    with open(log_path, "w") as logf:
        proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT)
        samples, stopped = _sample(proc, None if timeout is None else t_start + timeout)
        _, status, ru = os.wait4(proc.pid, 0)
    if stopped:
        return _partial(pt, samples, progress_path, t_start, ru)
    if status != 0:
        pt.status, pt.note = "failed", f"exit {status}; see {log_path}"
        return pt
    marks = json.loads(marks_path.read_text())
    t0 = marks.get("featurized", marks["start"])
    pt.seconds = round(marks["end"] - t0, 2)
    pt.cpu_seconds = round(ru.ru_utime + ru.ru_stime, 1)
    window = [s for s in samples if t0 <= s[0] <= marks["end"]] or samples
    pt.driver_cpu, pt.worker_cpu = (
        round(window[-1][4] - window[0][4], 1),
        round(window[-1][5] - window[0][5], 1),
    )
    pt.peak_total_mb = round(max(s[1] for s in window) / 2**20, 1)
    pt.peak_driver_mb = round(max(s[2] for s in window) / 2**20, 1)
    workers = [s[3] for s in window if s[3]]
    pt.peak_worker_mb = round(max(workers) / 2**20, 1) if workers else None
    if "featurized" in marks:
        pt.note = f"featurize phase {marks['featurized'] - marks['start']:.1f} s (not included)"
    return pt


def _partial(
    pt: Point, samples: list[tuple[float, ...]], progress_path: Path, t_start: float, ru: Any
) -> Point:
    """A stage stopped at its time box: the share of its tasks done, the full time that rate gives, its memory."""
    lines = progress_path.read_text().splitlines() if progress_path.exists() else []
    done = total = 0
    t_first = t_last = None
    for ln in lines:  # "<time> ingest: n/N chunks read"
        parts = ln.split()
        frac = next((p for p in parts if "/" in p and p.replace("/", "").isdigit()), None)
        if frac:
            done, total = (int(x) for x in frac.split("/"))
            t_first = t_first or float(parts[0])
            t_last = float(parts[0])
    pt.status = "partial"
    elapsed = (samples[-1][0] if samples else time.time()) - t_start
    pt.cpu_seconds = round(ru.ru_utime + ru.ru_stime, 1)
    if samples:
        pt.driver_cpu, pt.worker_cpu = (
            round(samples[-1][4] - samples[0][4], 1),
            round(samples[-1][5] - samples[0][5], 1),
        )
        pt.peak_total_mb = round(max(s[1] for s in samples) / 2**20, 1)
        pt.peak_driver_mb = round(max(s[2] for s in samples) / 2**20, 1)
        pt.peak_worker_mb = round(max(s[3] for s in samples) / 2**20, 1)
    if done and total and t_first is not None and t_last is not None and t_last > t_first:
        rate = (done - 1) / (t_last - t_first)  # tasks per second once the first completed
        full = (t_first - t_start) + (total - 1) / rate
        pt.seconds = round(full, 1)
        pt.note = (
            f"stopped after {elapsed:.0f} s with {done}/{total} tasks done; full run {full:.0f} s at that rate "
            f"(planning + first task {t_first - t_start:.0f} s)"
        )
    else:
        pt.note = f"stopped after {elapsed:.0f} s with {done}/{total} tasks done: no rate"
    return pt


def _sample(
    proc: subprocess.Popen, deadline: float | None = None
) -> tuple[list[tuple[float, ...]], bool]:
    """(time, total RSS, driver RSS, largest worker RSS, driver CPU s, workers' CPU s) every SAMPLE_S until the
    process exits (not reaped), or,
    past ``deadline``, stop it and its worker processes (by their pids: the ones this benchmark started); and
    whether it was stopped."""
    out: list[tuple[float, ...]] = []
    cpu: dict[
        int, float
    ] = {}  # pid -> its CPU seconds when last seen (a worker's last value outlives it)
    try:
        root = psutil.Process(proc.pid)
    except psutil.NoSuchProcess:
        return out, False
    while True:
        if deadline is not None and time.time() > deadline:
            kids = root.children(recursive=True)
            for p in [root, *kids]:
                try:
                    p.kill()
                except psutil.NoSuchProcess:
                    pass
            return out, True
        try:
            if root.status() == psutil.STATUS_ZOMBIE:
                break
            kids = root.children(recursive=True)
            drv = root.memory_info().rss
            t = root.cpu_times()
            drv_cpu = t.user + t.system
            rss = []
            for k in kids:
                try:
                    rss.append(k.memory_info().rss)
                    kt = k.cpu_times()
                    cpu[k.pid] = kt.user + kt.system
                except psutil.NoSuchProcess:
                    pass
        except psutil.NoSuchProcess:
            break
        # `nice` exec's into python: the root is the driver; its children are the workers
        out.append(
            (time.time(), drv + sum(rss), drv, max(rss) if rss else 0, drv_cpu, sum(cpu.values()))
        )
        time.sleep(SAMPLE_S)
    return out, False


# ------------------------------------------------------------------ the benchmark


def fit_exponent(points: list[Point]) -> float | None:
    """k in seconds ~ runs^k, least squares on log-log over the measured points (None with fewer than two)."""
    xy = [
        (math.log(p.runs), math.log(p.seconds))
        for p in points
        if p.status in FITTED and p.runs and p.seconds
    ]
    if len(xy) < 2:
        return None
    x, y = np.asarray(xy).T
    return float(np.polyfit(x, y, 1)[0])


def extrapolate(points: list[Point], runs: int) -> float | None:
    """Seconds at ``runs`` from the fitted power law (None with fewer than two measured points)."""
    xy = [
        (math.log(p.runs), math.log(p.seconds))
        for p in points
        if p.status in FITTED and p.runs and p.seconds
    ]
    if len(xy) < 2:
        return None
    x, y = np.asarray(xy).T
    k, c = np.polyfit(x, y, 1)
    return float(math.exp(c + k * math.log(runs)))


def bench_scale(
    bench: str = "swebench",
    factors: tuple[int, ...] = (1, 10, 100),
    workers: int = 2,
    stages: tuple[str, ...] = STAGES,
    max_seconds: float = 3600.0,
    data_root: Path | None = None,
    tmp: Path | None = None,
    keep: bool = False,
    say: Callable[[str], None] = print,
) -> list[Point]:
    """Measure every (stage, factor, mode); see the module doc.  The data sets live under ``tmp`` (default a
    new temporary directory), removed afterwards unless ``keep``."""
    from earlyeval.config.catalog import data_root as default_root
    from earlyeval.scale.resample import replicate

    src = default_root(data_root)
    base = Path(tempfile.mkdtemp(prefix=f"earlyeval-bench-scale-{bench}-", dir=tmp))
    modes = ("in-process", f"local:{workers}")
    points: list[Point] = []
    first_runs: int | None = None
    try:
        for n in sorted(factors):
            root = base / f"x{n}" / "data"
            wss = {
                m: base / f"x{n}" / ("ws-inprocess" if m == "in-process" else "ws-cluster")
                for m in modes
            }
            for ws in wss.values():
                replicate(bench, src, root, ws, n)
            runs = first_runs * n if first_runs else None
            say(f"== {n}x: {root} ({'?' if runs is None else runs} runs)")
            for stage in stages:
                for mode in modes:
                    done = [p for p in points if p.stage == stage and p.mode == mode]
                    ing = next(
                        (
                            p
                            for p in points
                            if p.stage == "ingest" and p.mode == mode and p.factor == n
                        ),
                        None,
                    )
                    why = (
                        ""
                        if stage == "ingest" or (ing is not None and ing.status == "measured")
                        else "its ingest did not run in full"
                    ) or _skip(done, stage, mode, n, runs, max_seconds)
                    if (
                        why.startswith("predicted")
                        and mode != "in-process"
                        and stage in TIME_BOXED
                        and "resident" not in why
                    ):
                        pt = measure(
                            stage, bench, wss[mode], root, mode, n, runs, timeout=max_seconds
                        )
                    elif why:
                        pt = Point(
                            stage,
                            mode,
                            n,
                            runs,
                            status="not run",
                            note=why,
                            seconds=_round(extrapolate(done, runs) if runs else None),
                        )
                    else:
                        pt = measure(
                            stage, bench, wss[mode], root, mode, n, runs, timeout=3 * max_seconds
                        )
                    if stage == "ingest" and pt.status == "measured":
                        got = json.loads(
                            (wss[mode] / "reports" / bench / "ingest.json").read_text()
                        )["totals"]["trajectories"]
                        pt.runs = got
                        if first_runs is None and n == 1:
                            first_runs = got
                        if (
                            runs is None
                        ):  # the first factor's later stages count the runs its ingest read
                            runs = got
                    points.append(pt)
                    say(row(pt))
                    if pt.status == "failed":
                        raise RuntimeError(f"{stage} {mode} {n}x failed: {pt.note}")
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    return points


def _skip(
    done: list[Point], stage: str, mode: str, n: int, runs: int | None, max_seconds: float
) -> str:
    """Why a point is not run ("" to run it): an earlier stage of the mode not run, predicted time or memory."""
    if any(p.status not in ("measured",) for p in done):
        return "a smaller factor was not run in full"
    if runs is None or not done:
        return ""
    pred = extrapolate(done, runs)
    if pred is None and done[-1].seconds:  # one point: assume linear growth
        pred = done[-1].seconds * runs / (done[-1].runs or runs)
    if pred is not None and pred > max_seconds:
        return f"predicted {pred:.0f} s > {max_seconds:.0f} s"
    last = done[-1]
    need = (
        (last.peak_total_mb or 0)
        * runs
        / (last.runs or runs)
        * (1 if mode == "in-process" else 0.0)
    )
    avail = psutil.virtual_memory().available / 2**20
    if mode == "in-process" and need > 0.6 * avail:
        return (
            f"predicted {need / 1024:.1f} GB resident > 60 % of the {avail / 1024:.1f} GB available"
        )
    return ""


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


HEADER = (
    f"{'stage':<10} {'mode':<11} {'x':>4} {'runs':>7} {'seconds':>9} {'cpu s':>8} {'drv cpu':>8} {'wrk cpu':>8} "
    f"{'peak MB':>8} {'driver MB':>9} {'worker MB':>9} {'load':>5}  note"
)


def row(p: Point) -> str:
    def f(v: Any, w: int, d: int = 1) -> str:
        return f"{v:>{w}.{d}f}" if isinstance(v, (int, float)) and v is not None else f"{'-':>{w}}"

    sec = (
        f(p.seconds, 9)
        if p.status == "measured"
        else (f"~{p.seconds:.0f}".rjust(9) if p.seconds else f"{'-':>9}")
    )
    return (
        f"{p.stage:<10} {p.mode:<11} {p.factor:>4} {p.runs if p.runs else '-':>7} {sec} {f(p.cpu_seconds, 8)} "
        f"{f(p.driver_cpu, 8)} {f(p.worker_cpu, 8)} {f(p.peak_total_mb, 8, 0)} {f(p.peak_driver_mb, 9, 0)} {f(p.peak_worker_mb, 9, 0)} {f(p.load, 5)}  "
        f"{'' if p.status == 'measured' else p.status + ': '}{p.note}"
    )


def summary(points: list[Point]) -> list[str]:
    """The table, the growth exponents, the side-by-side ratios and the per-worker memory at the largest factor."""
    lines = [HEADER] + [row(p) for p in points]
    lines.append("")
    lines.append(
        "growth exponent k (seconds ~ runs^k, least squares on log-log; a partial point at its measured rate):"
    )
    for stage in dict.fromkeys(p.stage for p in points):
        for mode in dict.fromkeys(p.mode for p in points):
            pts = [p for p in points if p.stage == stage and p.mode == mode]
            k = fit_exponent(pts)
            lines.append(
                f"  {stage:<10} {mode:<11} k = {'-' if k is None else f'{k:.2f}'} "
                f"({sum(p.status == 'measured' for p in pts)} measured, {sum(p.status == 'partial' for p in pts)} partial)"
            )
    lines.append("")
    lines.append("in-process / cluster wall time, measured side by side:")
    for p in points:
        if p.mode != "in-process" or p.status != "measured":
            continue
        q = next(
            (
                q
                for q in points
                if q.stage == p.stage
                and q.factor == p.factor
                and q.mode != "in-process"
                and q.status == "measured"
            ),
            None,
        )
        if q and q.seconds:
            lines.append(
                f"  {p.stage:<10} {p.factor:>4}x  {p.seconds / q.seconds:.2f}  (cpu {p.cpu_seconds} s vs {q.cpu_seconds} s)"
            )
    lines.append("")
    lines.append(
        "projection to W workers from a cluster point's CPU: driver CPU + workers' CPU / W (CPU-bound, ideal "
        "balance; a lower bound on time):"
    )
    for p in points:
        if (
            p.mode != "in-process"
            and p.status == "measured"
            and p.driver_cpu is not None
            and p.worker_cpu is not None
        ):
            lines.append(
                f"  {p.stage:<10} {p.factor:>4}x  16 workers ~{p.driver_cpu + p.worker_cpu / 16:.0f} s "
                f"(driver {p.driver_cpu:.0f} s + workers {p.worker_cpu:.0f} s / 16)"
            )
    top = max(p.factor for p in points)
    lines.append("")
    lines.append(f"per-worker peak memory at {top}x (largest worker process):")
    for p in points:
        if p.factor == top and p.mode != "in-process":
            lines.append(
                f"  {p.stage:<10} {p.peak_worker_mb if p.status in FITTED else '-'} MB ({p.status})"
            )
    return lines


def plot(points: list[Point], path: Path) -> Path:
    """Seconds and peak memory against runs, per stage and mode, log-log, with the fitted power laws."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5))
    colors = dict(zip(STAGES, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
    for stage in dict.fromkeys(p.stage for p in points):
        for mode, style in zip(dict.fromkeys(p.mode for p in points), ("-", "--")):
            pts = [
                p
                for p in points
                if p.stage == stage and p.mode == mode and p.status in FITTED and p.runs
            ]
            if not pts:
                continue
            x = [p.runs for p in pts]
            k = fit_exponent(pts)
            lab = f"{stage} {mode}" + (f" (k={k:.2f})" if k is not None else "")
            axes[0].plot(
                x, [p.seconds for p in pts], style, marker="o", color=colors.get(stage), label=lab
            )
            rest = [
                p
                for p in points
                if p.stage == stage
                and p.mode == mode
                and p.status not in FITTED
                and p.runs
                and p.seconds
            ]
            if rest:
                axes[0].plot(
                    [pts[-1].runs] + [p.runs for p in rest],
                    [pts[-1].seconds] + [p.seconds for p in rest],
                    ":",
                    marker="x",
                    color=colors.get(stage),
                )
            mem = [(p.peak_worker_mb if mode != "in-process" else p.peak_total_mb) for p in pts]
            axes[1].plot(
                x, mem, style, marker="o", color=colors.get(stage), label=f"{stage} {mode}"
            )
    axes[0].set(
        xscale="log",
        yscale="log",
        xlabel="runs",
        ylabel="wall seconds",
        title="time per stage (x: extrapolated)",
    )
    axes[1].set(
        xscale="log",
        yscale="log",
        xlabel="runs",
        ylabel="peak MB",
        title="peak memory: in-process total, cluster largest worker",
    )
    for ax in axes:
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write(points: list[Point], out: Path) -> dict[str, Path]:
    """``bench_scale.json``, ``bench_scale.txt`` (the summary) and ``bench_scale.png`` under ``out``."""
    from earlyeval.core.atomic import write_json, write_text

    out.mkdir(parents=True, exist_ok=True)
    return {
        "json": write_json([asdict(p) for p in points], out / "bench_scale.json"),
        "table": write_text(out / "bench_scale.txt", "\n".join(summary(points)) + "\n"),
        "plot": plot(points, out / "bench_scale.png"),
    }


__all__ = [
    "Point",
    "STAGES",
    "bench_scale",
    "extrapolate",
    "fit_exponent",
    "measure",
    "plot",
    "run_stage",
    "summary",
    "write",
]

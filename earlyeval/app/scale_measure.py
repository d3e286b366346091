"""The measurement side of ``earlyeval bench-scale`` (``app.scale_bench``): one stage run in its own
(niced) subprocess, its memory and CPU sampled, a stage stopped at its time box measured as ``partial``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

STAGES = ("ingest", "featurize", "train", "evaluate")
SAMPLE_S = 0.25


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
    code = "import sys; from earlyeval.app.scale_measure import run_stage; run_stage(*sys.argv[1:])"
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


__all__ = ["Point", "STAGES", "measure", "run_stage"]

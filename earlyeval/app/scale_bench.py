"""``earlyeval bench-scale``: wall time and peak memory per stage as the runs grow, in this process and on a
LocalCluster, side by side (a benchmark, not a test: nothing here asserts a timing).

How it measures (subprocesses, memory sampler, skipped and partial points, the fitted exponent) and what was
measured: docs/scale.md, "Measured: time and memory against the number of runs".
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import psutil

from earlyeval.app.scale_measure import STAGES, Point, measure
from earlyeval.app.scale_report import extrapolate, row

# cluster stages run for max_seconds when predicted longer (their memory at 100x)
TIME_BOXED = (
    "ingest",
    "featurize",
)


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


__all__ = ["bench_scale"]

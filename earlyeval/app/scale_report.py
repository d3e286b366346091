"""The report side of ``earlyeval bench-scale`` (``app.scale_bench``): the fitted growth exponent, the
extrapolation, the table and summary, the plot and the written files."""

from __future__ import annotations

import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from earlyeval.app.scale_measure import STAGES, Point

# points the exponent is fitted on (partial: its full time at its measured rate)
FITTED = (
    "measured",
    "partial",
)


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


__all__ = ["extrapolate", "fit_exponent", "plot", "summary", "write"]

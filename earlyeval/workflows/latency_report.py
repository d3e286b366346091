"""The numbers of ``latency.json`` from the timed rows of a latency benchmark (``workflows.benchmark``): per-step
statistics per stage, per bucket of step numbers, per format, the long run's buckets; its summary lines and figure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from earlyeval.core.atomic import savefig
from earlyeval.core.trajectory import Trajectory

# run, format, t, wall, cpu, featurize, predict, halt, budget
Row = tuple[str, str, int, float, float, float, float, bool, float]
BUCKETS = [(lo, lo + 9) for lo in range(1, 100, 10)] + [(101, 10**9)]


def bucket_name(t: int) -> str:
    for lo, hi in BUCKETS:
        if lo <= t <= hi:
            return f"{lo}-{hi}" if hi < 10**9 else f"{lo}+"
    return "?"


def stats_us(xs: list[float] | np.ndarray) -> dict[str, Any]:
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


LONG_BUCKETS = ((1, 10), (91, 100), (9_991, 10_000))


def per_step_stats(real: list[Row]) -> dict[str, Any]:
    """Per-step statistics over the real runs' steps, each stage, and halting against non-halting steps."""
    return {
        "wall": stats_us([r[3] for r in real]),
        "cpu": stats_us([r[4] for r in real]),
        "featurize": stats_us([r[5] for r in real]),
        "predict": stats_us([r[6] for r in real]),
        "budget": stats_us([r[8] for r in real]),
        "other": stats_us([max(r[3] - r[5] - r[6] - r[8], 0.0) for r in real]),
        "halting_steps_wall": stats_us([r[3] for r in real if r[7]]),
        "non_halting_steps_wall": stats_us([r[3] for r in real if not r[7]]),
        "non_halting_steps_cpu": stats_us([r[4] for r in real if not r[7]]),
    }


def by_step_bucket(rows: list[Row]) -> dict[str, Any]:
    """Per bucket of step numbers (``BUCKETS``), real and synthetic steps together: is the cost flat in t?"""
    out: dict[str, Any] = {}
    for lo, hi in BUCKETS:
        sel = [r for r in rows if lo <= r[2] <= hi]
        out[bucket_name(lo)] = {
            "wall": stats_us([r[3] for r in sel]),
            "cpu": stats_us([r[4] for r in sel]),
            "featurize": stats_us([r[5] for r in sel]),
            "predict": stats_us([r[6] for r in sel]),
            "budget": stats_us([r[8] for r in sel]),
            "synthetic_share": round(sum(r[1] == "synthetic" for r in sel) / len(sel), 3)
            if sel
            else None,
        }
    return out


def synthetic_note(synth: Trajectory, n_long: int, min_long_runs: int) -> dict[str, Any]:
    """Why the synthetic long run was added, and what it is: real steps, not a real run."""
    return {
        "steps": len(synth.steps),
        "why": f"only {n_long} sampled real runs reach step 100 (< {min_long_runs})",
        "how": "real steps of the longest sampled runs, cycled and re-indexed into one run",
    }


def step_10_vs_100(by_bucket: dict[str, Any]) -> dict[str, Any]:
    """The headline flatness check: median wall and CPU time of steps 1-10 against steps 91-100."""
    b10, b100 = by_bucket["1-10"], by_bucket["91-100"]
    return {
        "median_us_steps_1_10": b10["wall"].get("median_us"),
        "median_us_steps_91_100": b100["wall"].get("median_us"),
        "cpu_median_us_steps_1_10": b10["cpu"].get("median_us"),
        "cpu_median_us_steps_91_100": b100["cpu"].get("median_us"),
    }


def by_format(rows: list[Row]) -> dict[str, Any]:
    """Per native format of the replayed runs."""
    out: dict[str, Any] = {}
    for fmt in sorted({r[1] for r in rows}):
        sel = [r for r in rows if r[1] == fmt]
        out[fmt] = {
            "runs": len({r[0] for r in sel}),
            "wall": stats_us([r[3] for r in sel]),
            "cpu": stats_us([r[4] for r in sel]),
            "featurize": stats_us([r[5] for r in sel]),
            "predict": stats_us([r[6] for r in sel]),
            "budget": stats_us([r[8] for r in sel]),
        }
    return out


def long_run_block(long_rows: list[tuple[int, float, float, float, float]]) -> dict[str, Any]:
    """The new-file-every-step run per bucket of ``LONG_BUCKETS``: per-step cost must not grow with t."""
    return {
        "steps": len(long_rows),
        "how": "one synthetic run whose every step edits a new file with new identifiers (benchmark.new_file_run), "
        "on a task with a gold patch; replayed through the same monitor after the real runs",
        "by_step_bucket": {
            f"{lo}-{hi}": {
                "wall": stats_us([r[1] for r in long_rows if lo <= r[0] <= hi]),
                "cpu": stats_us([r[2] for r in long_rows if lo <= r[0] <= hi]),
                "featurize": stats_us([r[3] for r in long_rows if lo <= r[0] <= hi]),
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


def plot_latency(rows: list[tuple], path: Path, bench: str) -> Path:
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

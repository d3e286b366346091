"""The report page's calibration per held-out agent: reliability curves and a table from the held-out predictions
(or, without them, one point per agent from loao.json), and a sentence per agent on its gap."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from earlyeval.report.html import agent_cell, fnum, join, legend, missed, note, num, png, table, tag
from earlyeval.report.html import pyplot as _plt
from earlyeval.report.page_inputs import Inputs, small_agents
from earlyeval.report.targets import CALIBRATION_GAP, calibration_gap


def _calibration_bins(
    y: np.ndarray, p: np.ndarray, w: np.ndarray, bins: int = 10
) -> list[tuple[float, float, float]]:
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    out = []
    for b in range(bins):
        m = idx == b
        if w[m].sum() > 0:
            out.append(
                (
                    float(np.average(p[m], weights=w[m])),
                    float(np.average(y[m], weights=w[m])),
                    float(w[m].sum()),
                )
            )
    return out


def section_calibration(inp: Inputs) -> Markup:
    plt = _plt()
    small = small_agents(inp)
    df = inp.preds
    if df is not None and {"agent", "run_id", "t", "y", "p_success"} <= set(df.columns):
        return _calibration_curves(plt, df, small)
    return _calibration_in_the_large(plt, inp, small)


def _calibration_curves(plt: Any, df: pd.DataFrame, small: set[str]) -> Markup:
    """The section from the held-out predictions: a reliability curve and a table row per agent."""
    agents = list(dict.fromkeys(df["agent"].astype(str)))
    n = len(agents)
    cols = 3
    rows_ = max(1, math.ceil(n / cols))
    fig, axes = plt.subplots(rows_, cols, figsize=(11, 3.3 * rows_), squeeze=False)
    trows: list[tuple[str, list[Any]]] = []
    notes: list[tuple[str, float, float]] = []
    for k, a in enumerate(agents):
        runs, mp, obs, brier = _calibration_panel(
            axes[k // cols][k % cols],
            a,
            df[df["agent"] == a],
            small,
            k % cols == 0,
            k // cols == rows_ - 1,
        )
        gap = calibration_gap(mp, obs)
        notes.append((a, mp, obs))
        trows.append(
            (
                "small" if a in small else "",
                [
                    agent_cell(a, a in small, runs),
                    str(runs),
                    fnum(mp),
                    fnum(obs),
                    _gap_cell(gap),
                    fnum(brier),
                ],
            )
        )
    for k in range(n, rows_ * cols):
        axes[k // cols][k % cols].axis("off")
    fig.tight_layout()
    return (
        png(fig)
        + table(["agent", "runs", "mean P(success)", "observed success", "gap", "Brier"], trows)
        + calibration_notes(notes, small)
        + legend(
            {
                "gap": f"mean P(success) − observed success; beyond ±{CALIBRATION_GAP:.2f} it is marked "
                "(report.targets.CALIBRATION_GAP) and explained above",
                "curve": "prefixes binned by predicted P(success) (10 bins); x = mean prediction, y = share of "
                "those prefixes whose run succeeded; dot size = weight; the grey diagonal is perfect calibration",
                "weights": "every prefix weighted 1/(T-1), so each run counts once",
                "Brier": "weighted mean of (P(success) - outcome)², lower is better",
                "source": "features/<bench>/loao_predictions.parquet: every held-out prefix, from a model that never saw its agent",
            }
        )
    )


def _calibration_panel(
    ax: Any, a: str, g: pd.DataFrame, small: set[str], ylabel: bool, xlabel: bool
) -> tuple[int, float, float, float]:
    """One agent's reliability curve drawn on ``ax``; its runs, mean P(success), observed success and Brier."""
    nrun = g.groupby("run_id")["t"].transform("size").to_numpy(np.float64)
    w = 1.0 / nrun
    y, p = g["y"].to_numpy(np.float64), g["p_success"].to_numpy(np.float64)
    ax.plot([0, 1], [0, 1], color="#999", lw=1)
    pts = _calibration_bins(y, p, w)
    if pts:
        px, py, pw = map(np.asarray, zip(*pts))
        ax.plot(px, py, "-o", color="#1f6feb", ms=3 + 9 * np.sqrt(pw / pw.max()).mean())
        ax.scatter(px, py, s=10 + 120 * pw / pw.max(), color="#1f6feb", zorder=3)
    runs = g["run_id"].nunique()
    ax.set_title(f"{a[:38]}{' (small)' if a in small else ''}\n{runs} runs", fontsize=9)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    if ylabel:
        ax.set_ylabel("observed success")
    if xlabel:
        ax.set_xlabel("predicted P(success)")
    brier = float(np.average((p - y) ** 2, weights=w))
    mp, obs = float(np.average(p, weights=w)), float(np.average(y, weights=w))
    return runs, mp, obs, brier


def _calibration_in_the_large(plt: Any, inp: Inputs, small: set[str]) -> Markup:
    """The coarse fallback without the predictions file: one point per agent from loao.json."""
    out = [inp.missing("loao_predictions.parquet")]
    agents = (inp.loao or {}).get("agents") or {}
    pts = [
        (a, num(b.get("mean_p_success")), num(b.get("resolve_rate")))
        for a, b in agents.items()
        if isinstance(b, dict)
    ]
    pts = [x for x in pts if x[1] is not None and x[2] is not None]
    if not pts:
        return join(out) + note(
            "loao.json holds no per-agent mean P(success) either: calibration unknown", missing=True
        )
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.plot([0, 1], [0, 1], color="#999", lw=1)
    for a, mp, rr in pts:
        ax.scatter(mp, rr, s=40, color="#f0b429" if a in small else "#1f6feb")
        ax.annotate(a[:24], (mp, rr), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("mean predicted P(success) over prefixes")
    ax.set_ylabel("true resolve rate")
    ax.set_title("per-agent calibration-in-the-large (loao.json)")
    out.append(png(fig))
    out.append(calibration_notes(pts, small))
    out.append(
        note(
            "coarse: one point per agent (mean prediction vs resolve rate); per-prefix reliability curves need the predictions file"
        )
    )
    return join(out)


def _gap_cell(gap: float | None) -> Any:
    if gap is None:
        return "–"
    text = f"{gap:+.2f}"
    return missed(text, f"|gap| > {CALIBRATION_GAP:.2f}") if abs(gap) > CALIBRATION_GAP else text


def calibration_notes(pts: list[tuple[str, float | None, float | None]], small: set[str]) -> Markup:
    """One sentence per held-out agent: its mean P(success) against its observed success, and what a large gap means."""
    items = []
    for a, mp, obs in pts:
        gap = calibration_gap(mp, obs)
        if gap is None:
            continue
        few = " (small: few runs)" if a in small else ""
        if abs(gap) <= CALIBRATION_GAP:
            items.append(
                tag(
                    "li",
                    f"{a}{few}: mean P(success) {mp:.2f} vs {obs:.2f} observed: calibrated in the "
                    f"large (gap {gap:+.2f}, within ±{CALIBRATION_GAP:.2f}).",
                )
            )
            continue
        way = (
            "under-predicts success: its P(failure) runs high, so halts that record a failure are the ones at risk, and "
            "success halts come late"
            if gap < 0
            else "over-predicts success: halts that record a success are the ones at risk, and failure halts come late"
        )
        items.append(
            tag(
                "li",
                tag(
                    "span",
                    f"{a}{few}: mean P(success) {mp:.2f} vs {obs:.2f} observed (gap {gap:+.2f})",
                    cls="gap",
                ),
                f": the model {way}; the thresholds were chosen without this agent's labels, so nothing "
                "corrected it (a warm start on a few labelled runs would check them).",
            )
        )
    return tag("ul", *items, cls="calnotes") if items else Markup("")

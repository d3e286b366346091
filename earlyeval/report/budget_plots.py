"""The budget report's two figures (matplotlib, Agg canvas: no pyplot state, no GUI backend).

Both are grids of panels at a readable size (11 pt ticks, 12 pt titles) with one legend for the
whole figure; no panel is left empty and no title is cut."""

from __future__ import annotations

from earlyeval.core.extras import require

require("plots", "the budget figures")

import math
from pathlib import Path
from typing import Any

import matplotlib as mpl
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from earlyeval.core.atomic import savefig
from earlyeval.core.plotting import LITERAL_TEXT
from earlyeval.evaluation.budget_loao import BudgetRun
from earlyeval.evaluation.budget_metrics import make_view
from earlyeval.fitting.budget_targets import run_slices

FONT = {
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 11,
    "figure.titlesize": 14,
    **LITERAL_TEXT,  # an agent's name is text, never TeX (core.plotting)
}
DPI = 110
METHOD_STYLE = (
    ("model", "C0", "o", "-", "model (CQR)"),
    ("linear", "C1", "s", "--", "linear baseline"),
    ("outcome_only", "C2", "^", ":", "outcome model only"),
)


def _figure(w: float, h: float) -> Figure:
    fig = Figure(figsize=(w, h), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _agent_title(agent: str) -> str:
    """The full agent name on at most two lines, split at its scaffold/model separator."""
    return agent.replace("__", "\n", 1) if len(agent) > 28 and "__" in agent else agent


def plot_intervals(run: BudgetRun, path: Path, dims: list[str] | None = None) -> Path:
    """budget_intervals.png (``intervals_figure``)."""
    with mpl.rc_context(FONT):
        savefig(intervals_figure(run, dims), path, dpi=DPI)
    return path


def intervals_figure(run: BudgetRun, dims: list[str] | None = None) -> Figure:
    """True remaining vs the conformalized bands along a few real held-out runs: one row per dimension,
    one column per run; the runs are ones predicted in every plotted dimension, so no cell is empty."""
    ds, b = run.ds, run.bcfg
    dims = dims or [d for d in ("steps", "output_tokens", "cost_usd") if d in run.dims][:2]
    picks = _example_runs(run, dims, b.n_example_runs)
    with mpl.rc_context(FONT):
        fig = _figure(4.6 * max(len(picks), 1), 3.9 * len(dims) + 1.0)
        axes = fig.subplots(len(dims), max(len(picks), 1), squeeze=False)
        slices = run_slices(ds.prefixes["run"].to_numpy())
        handles: list[Any] = []
        for i, d in enumerate(dims):
            R = run.dims[d]
            for j, r in enumerate(picks):
                ax = axes[i][j]
                a, e = slices[r]
                rows = np.arange(a, e)
                rows = rows[R.outer[rows] >= 0]
                v = make_view(run, R, rows)
                t = v.t
                lo9, hi9 = v.bounds[("model", 0.9)]
                lo8, hi8 = v.bounds[("model", 0.8)]
                hs = [
                    ax.fill_between(t, lo9, hi9, alpha=0.2, color="C0", label="model 90% interval"),
                    ax.fill_between(
                        t, lo8, hi8, alpha=0.35, color="C0", label="model 80% interval"
                    ),
                    ax.plot(t, v.mid["model"], "C0--", lw=1.2, label="model median")[0],
                ]
                llo, lhi = v.bounds[("linear", 0.9)]
                hs.append(ax.plot(t, llo, "C1:", lw=1.5, label="linear baseline 90%")[0])
                ax.plot(t, lhi, "C1:", lw=1.5)
                hs.append(ax.plot(t, v.remaining, "k.-", lw=1.4, ms=4, label="true remaining")[0])
                handles = handles or hs
                tr = ds.trajs[r]
                if i == 0:
                    ax.set_title(
                        f"{_agent_title(tr.agent)}\n{'resolved' if tr.outcome else 'failed'}, T = {len(tr.steps)}"
                    )
                ax.set_xlabel("prefix t (steps seen)")
                ax.xaxis.set_major_locator(MaxNLocator(integer=True))
                if j == 0:
                    ax.set_ylabel(f"remaining {d}")
                ax.set_yscale("symlog" if d == "steps" else "log")
                ax.grid(True, which="major", alpha=0.3)
        if not picks:
            axes[0][0].text(
                0.5,
                0.5,
                "no held-out run is predicted in every dimension",
                ha="center",
                va="center",
            )
            axes[0][0].set_axis_off()
        fig.suptitle(f"{ds.bench}: remaining budget along held-out runs (LOAO, conformalized)")
        if handles:
            fig.legend(
                handles=handles, loc="outside lower center", ncol=len(handles), frameon=False
            )
    return fig


def _example_runs(run: BudgetRun, dims: list[str], n: int) -> list[int]:
    """Deterministic picks: per the largest held-out agents, a resolved and a failed run of median length
    among the runs predicted (usage known, held out) in every one of `dims`."""
    prow = run.ds.prefixes["run"].to_numpy()
    ok = set.intersection(
        *[
            set(prow[run.dims[d].outer >= 0].tolist())
            & set(np.flatnonzero(run.targets[d].run_known).tolist())
            for d in dims
        ]
    )
    large = sorted(
        [g for g in run.groups if not g.small], key=lambda g: -run.ds.n_runs(g.agents[0])
    )
    picks: list[int] = []
    for g in large:
        for y in (1, 0):
            cand = [
                i
                for i, t in enumerate(run.ds.trajs)
                if t.agent in g.agents and t.outcome == y and i in ok and len(t.steps) >= 5
            ]
            if cand:
                Ts = np.asarray([len(run.ds.trajs[i].steps) for i in cand])
                picks.append(cand[int(np.argmin(np.abs(Ts - np.median(Ts))))])
            if len(picks) >= n:
                return picks
    return picks


def _bin_tick(label: str) -> str:
    """'10%-20%' -> '10-20', '>=100%' -> '≥100' (the axis label says %)."""
    return label.replace(">=", "≥").replace("%", "").replace("-", "–")


def plot_late_recognition(rep: dict[str, Any], path: Path) -> Path:
    """budget_late_recognition.png (``late_recognition_figure``)."""
    with mpl.rc_context(FONT):
        savefig(late_recognition_figure(rep), path, dpi=DPI)
    return path


def late_recognition_figure(rep: dict[str, Any]) -> Figure:
    """Mean P(feasible) on failed runs vs the share of the budget already used: a 2-column grid, one
    panel per dimension with held-out runs, one legend."""
    dims = [d for d in rep["dimensions"] if rep["dimensions"][d]["pooled"].get("n_runs")]
    ncol = min(2, max(len(dims), 1))
    nrow = max(math.ceil(len(dims) / ncol), 1)
    with mpl.rc_context(FONT):
        fig = _figure(7.0 * ncol, 4.4 * nrow + 1.2)
        axes = fig.subplots(nrow, ncol, squeeze=False, sharey=True)
        handles: list[Any] = []
        for k, ax in enumerate(axes.flat):
            if k >= len(dims):
                ax.set_axis_off()  # an odd count leaves one cell: nothing to draw there
                continue
            d = dims[k]
            blk = rep["dimensions"][d]
            P = blk["pooled"]
            labels = [r["bin"] for r in P["late_recognition"]["model"]["bins"]]
            for m, color, marker, ls, name in METHOD_STYLE:
                rows = P["late_recognition"][m]["bins"]
                x = [i for i, r in enumerate(rows) if r["mean_p_feasible"] is not None]
                h = ax.plot(
                    x,
                    [rows[i]["mean_p_feasible"] for i in x],
                    color=color,
                    marker=marker,
                    ls=ls,
                    ms=6,
                    lw=1.8,
                    label=name,
                )[0]
                if len(handles) < len(METHOD_STYLE):
                    handles.append(h)
            ax.axhline(0.5, color="grey", lw=1.0)
            ax.axvline(5.5, color="grey", lw=1.0, ls=":")
            ax.text(5.6, 0.95, "60 % of B", color="grey", va="top", fontsize=10)
            ax.set_xticks(range(len(labels)))
            ax.set_xticklabels(
                [_bin_tick(lb) for lb in labels], rotation=45, ha="right", rotation_mode="anchor"
            )
            ax.set_ylim(0, 1)
            n_failed = P["late_recognition"]["model"].get("n_failed_runs")
            ax.set_title(f"{d}: B = {blk['budget_B']:g}  ({n_failed} failed runs)")
            ax.set_xlabel("budget used, % of B")
            if k % ncol == 0:
                ax.set_ylabel("mean P(feasible), failed runs")
            ax.grid(True, axis="y", alpha=0.3)
        fig.suptitle(f"{rep['bench']}: late recognition (LOAO, pooled large held-out agents)")
        if handles:
            fig.legend(
                handles=handles, loc="outside lower center", ncol=len(handles), frameon=False
            )
    return fig

"""The budget report's two figures (matplotlib, Agg canvas: no pyplot state, no GUI backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .evaluation import BudgetRun
from .report import make_view
from .targets import run_slices


def plot_intervals(run: BudgetRun, path: Path, dims: list[str] | None = None) -> Path:
    """True remaining vs the conformalized bands along a few real held-out runs."""
    ds, b = run.ds, run.bcfg
    dims = dims or [d for d in ("steps", "output_tokens", "cost_usd") if d in run.dims][:2]
    picks = _example_runs(run, dims[0], b.n_example_runs)
    fig = Figure(figsize=(4.2 * max(len(picks), 1), 3.4 * len(dims)))
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(dims), len(picks), squeeze=False)
    slices = run_slices(ds.prefixes["run"].to_numpy())
    for i, d in enumerate(dims):
        R = run.dims[d]
        for j, r in enumerate(picks):
            ax = axes[i][j]
            a, e = slices[r]
            rows = np.arange(a, e)
            rows = rows[R.outer[rows] >= 0]
            if len(rows) == 0:
                ax.set_axis_off()
                continue
            v = make_view(run, R, rows)
            t = v.t
            lo9, hi9 = v.bounds[("model", 0.9)]
            lo8, hi8 = v.bounds[("model", 0.8)]
            ax.fill_between(t, lo9, hi9, alpha=0.2, color="C0", label="model 90%")
            ax.fill_between(t, lo8, hi8, alpha=0.35, color="C0", label="model 80%")
            ax.plot(t, v.mid["model"], "C0--", lw=1, label="model median")
            llo, lhi = v.bounds[("linear", 0.9)]
            ax.plot(t, llo, "C1:", lw=1.2, label="linear 90%")
            ax.plot(t, lhi, "C1:", lw=1.2)
            ax.plot(t, v.remaining, "k.-", lw=1.2, ms=3, label="true remaining")
            tr = ds.trajs[r]
            ax.set_title(f"{tr.agent[:30]}\n{'resolved' if tr.outcome else 'failed'}, T={len(tr.steps)}", fontsize=8)
            ax.set_xlabel("prefix t")
            ax.set_ylabel(f"remaining {d}")
            ax.set_yscale("symlog" if d == "steps" else "log")
            if i == 0 and j == 0:
                ax.legend(fontsize=6)
    fig.suptitle(f"{ds.bench}: remaining budget along held-out runs (LOAO, conformalized)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path


def _example_runs(run: BudgetRun, dim: str, n: int) -> list[int]:
    """Deterministic picks: per the largest held-out agents, a resolved and a failed run of median length."""
    R = run.dims[dim]
    tg = run.targets[dim]
    prow = run.ds.prefixes["run"].to_numpy()
    predicted = set(prow[R.outer >= 0].tolist())
    others = set().union(*[set(prow[run.dims[d].outer >= 0].tolist()) for d in run.dims])
    large = sorted([g for g in run.groups if not g.small], key=lambda g: -run.ds.n_runs(g.agents[0]))
    picks: list[int] = []
    for g in large:
        for y in (1, 0):
            cand = [i for i, t in enumerate(run.ds.trajs) if t.agent in g.agents and t.outcome == y and i in predicted
                    and tg.run_known[i] and len(t.steps) >= 5 and i in others]
            if cand:
                Ts = np.asarray([len(run.ds.trajs[i].steps) for i in cand])
                picks.append(cand[int(np.argmin(np.abs(Ts - np.median(Ts))))])
            if len(picks) >= n:
                return picks
    return picks


def plot_late_recognition(rep: dict[str, Any], path: Path) -> Path:
    """Mean P(feasible) on failed runs vs the share of the budget already used."""
    dims = list(rep["dimensions"])
    fig = Figure(figsize=(4.2 * len(dims), 3.4))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(dims), squeeze=False)
    for ax, d in zip(axes[0], dims):
        P = rep["dimensions"][d]["pooled"]
        if not P.get("n_runs"):
            ax.set_axis_off()
            continue
        for m, style in (("model", "C0o-"), ("linear", "C1s--"), ("outcome_only", "C2^:")):
            rows = P["late_recognition"][m]["bins"]
            x = [k for k, r in enumerate(rows) if r["mean_p_feasible"] is not None]
            ax.plot(x, [rows[k]["mean_p_feasible"] for k in x], style, label=m, ms=4)
        labels = [r["bin"] for r in P["late_recognition"]["model"]["bins"]]
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, rotation=60, fontsize=6)
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.axvline(5.5, color="grey", lw=0.8, ls=":")
        ax.set_ylim(0, 1)
        ax.set_title(f"{d}: B = {rep['dimensions'][d]['budget_B']:g}", fontsize=9)
        ax.set_xlabel("budget used (spent / B)")
        ax.set_ylabel("mean P(feasible), failed runs")
        ax.legend(fontsize=7)
    fig.suptitle(f"{rep['bench']}: late recognition (LOAO, pooled large held-out agents)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return path

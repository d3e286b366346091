"""One self-contained HTML page a person reads, from the reports a benchmark already has.

Nothing fetched, nothing recomputed that a report states; a missing input is a note naming its command. Inputs
and rules: docs/architecture.md, "The HTML report".
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from earlyeval.config.workspace import features_dir, reports_dir
from earlyeval.core import atomic
from earlyeval.fitting.metrics import TASK_SKIP_T, halting
from earlyeval.report.html import (
    CSS,
    agent_cell,
    esc,
    fnum,
    legend,
    missed,
    note,
    num,
    pct,
    png,
    signed,
    table,
)
from earlyeval.report.html import pyplot as _plt
from earlyeval.report.page_costs import section_budget, section_dollars, section_latency
from earlyeval.report.page_inputs import Inputs, small_agents
from earlyeval.report.page_pass import section_pass
from earlyeval.report.page_rules import _th as _pair
from earlyeval.report.page_rules import section_loso, section_rules
from earlyeval.report.page_summary import section_summary
from earlyeval.report.provenance import provenance
from earlyeval.report.targets import CALIBRATION_GAP, TARGETS, calibration_gap, exact, misses

SECTIONS = {  # id -> heading; the test checks every heading is on the page
    "summary": "Summary",
    "results": "Results by protocol",
    "rules": "Threshold rules and failure-only mode",
    "loso": "Leave-one-scaffold-out",
    "frontier": "Savings / accuracy frontier",
    "calibration": "Calibration per held-out agent",
    "halts": "Halt steps: task skip vs in-run",
    "pass": "Benchmark passes",
    "dollars": "Dollars saved",
    "budget": "Budget coverage per agent",
    "latency": "Monitor latency",
}


# ------------------------------------------------------------------ sections

RESULT_LEGEND = {
    "agent": "the held-out agent (scaffold__model); its runs never reached fit, calibration, thresholds or task priors. "
    "'small' = fewer runs than holdout_min_runs: the small agents are held out together, their numbers are noisy "
    "and they are not in the pooled row.",
    "runs": "labelled runs of the agent evaluated",
    "rate": "true resolve rate of those runs",
    "AUROC": "area under the ROC curve of P(success) over every prefix, each run weighted 1/(T-1)",
    "halted": "share of runs the policy halted before their end",
    "halted acc": "share of halted runs whose predicted outcome equals the true outcome",
    "outcome acc": "share of all runs whose recorded outcome (predicted if halted, true otherwise) is right",
    "saved": "steps not run / all steps of the agent's runs",
    "task skip": "part of 'saved' from halts at t <= 1: the task was skipped on what was known before the trajectory",
    "in-run": "part of 'saved' from halts at t >= 2: predicted from the trajectory",
    "shift pp": "recorded resolve rate minus true resolve rate, percentage points",
    "τs / τf": "thresholds on P(success) / P(failure), chosen by inner LOAO without this agent's labels ('off': that side never halts)",
    "pooled": "all large held-out agents together, each predicted by its own fold",
}


def _th(th: dict[str, Any] | None) -> str:
    return _pair(th)


def _result_row(
    name: str, b: dict[str, Any], cls: str, small: bool = False
) -> tuple[str, list[Any]]:
    """One row of a results table; a cell whose metric misses its target (``report.targets``) is marked."""
    miss = misses(b)

    def cell(key: str, text: str) -> Any:
        return missed(text, f"{miss[key]} (here {exact(b, key)})") if key in miss else text

    return (
        cls,
        [
            agent_cell(name, small, b.get("n_runs")) if cls != "pooled" else esc(name),
            str(b.get("n_runs", "–")),
            pct(b.get("resolve_rate")),
            cell("auroc_success", fnum(b.get("auroc_success"))),
            pct(b.get("halted_fraction")),
            cell("halted_accuracy", pct(b.get("halted_accuracy"))),
            pct(b.get("outcome_accuracy")),
            cell("steps_saved", pct(b.get("steps_saved"))),
            pct(b.get("steps_saved_task_skip")),
            cell("steps_saved_in_run", pct(b.get("steps_saved_in_run"))),
            cell("resolve_rate_shift_pp", signed(b.get("resolve_rate_shift_pp"))),
            _th(b.get("thresholds")),
        ],
    )


def target_summary(agents: dict[str, Any], large: list[str]) -> str:
    """The headline's target misses, per large held-out agent, in words (the cells are marked in the table)."""
    lines = []
    for a in large:
        b = agents.get(a)
        if isinstance(b, dict) and misses(b):
            what = "; ".join(f"{text} ({exact(b, key)})" for key, text in misses(b).items())
            lines.append(f"<li><b>{esc(a)}</b>: misses {esc(what)}</li>")
    met = len([a for a in large if isinstance(agents.get(a), dict)]) - len(lines)
    head = (
        f"Targets (per large held-out agent, as_of: {esc('; '.join(t.text for t in TARGETS))}): "
        f"{met} of {met + len(lines)} agents meet all"
    )
    if not lines:
        return f'<div class="targets ok">{head}.</div>'
    return f'<div class="targets">{head}; missed cells are marked ✗ in red.<ul>{"".join(lines)}</ul></div>'


def section_results(inp: Inputs) -> str:
    if inp.loao is None:
        return inp.missing("loao.json")
    rep = inp.loao
    small = small_agents(inp)
    prots = rep.get("protocols") or {}
    doc = prots.get("doc") or {}
    names = [k for k in prots if k != "doc" and isinstance(prots[k], dict)]
    if not names:  # an older report: its top-level block is the one protocol
        prots, names = {"as_of": rep}, ["as_of"]
    header = [
        "agent",
        "runs",
        "rate",
        "AUROC",
        "halted",
        "halted acc",
        "outcome acc",
        "saved",
        "task skip",
        "in-run",
        "shift pp",
        "τs / τf",
    ]
    out = [
        note(
            f"threshold selection: {rep.get('threshold_selection', '?')}. "
            + str(rep.get("threshold_selection_detail", ""))
        )
    ]
    for p in names:
        blk = prots[p]
        rows = []
        agents = blk.get("agents") or {}
        for a in sorted(agents, key=lambda a: (a in small, a)):
            b = agents[a]
            if isinstance(b, dict):
                sm = a in small or bool(b.get("small_n"))
                rows.append(_result_row(a, b, "small" if sm else "", sm))
        if isinstance(blk.get("pooled"), dict):
            rows.append(_result_row("pooled (large held-out agents)", blk["pooled"], "pooled"))
        mshift = num(blk.get("mean_abs_resolve_rate_shift_pp"))
        out.append(f"<h3>{esc(p)}{' (headline)' if p == 'as_of' else ''}</h3>")
        if doc.get(p):
            out.append(f'<p class="note">{esc(doc[p])}</p>')
        if p == "as_of":
            large = [
                a
                for a in (rep.get("holdout_agents") or blk.get("holdout_agents") or agents)
                if a not in small
            ]
            out.append(target_summary(agents, large))
        out.append(table(header, rows))
        if mshift is not None:
            out.append(f"<p>mean |shift| over the large agents: {mshift:.2f} pp</p>")
    if small:
        out.append(
            note(
                f"small agents ({', '.join(sorted(small))}): flagged, shown with every protocol, not pooled. "
                "A small agent's halted accuracy rests on a handful of runs."
            )
        )
    out.append(legend(RESULT_LEGEND))
    return "".join(out)


def _pareto(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Upper-right frontier: for rising savings, the best accuracy not beaten at higher savings."""
    order = np.argsort(-x, kind="stable")
    xs, ys, best = [], [], -np.inf
    for i in order:
        if y[i] > best:
            best = y[i]
            xs.append(x[i])
            ys.append(y[i])
    return np.asarray(xs[::-1]), np.asarray(ys[::-1])


def section_frontier(inp: Inputs) -> str:
    plt = _plt()
    out = []
    pooled = (inp.loao or {}).get("pooled") or {}
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    have_sweep = inp.sweep is not None and {
        "mode",
        "agent",
        "steps_saved",
        "outcome_accuracy",
    } <= set(inp.sweep.columns)
    if have_sweep:
        df = inp.sweep[inp.sweep["agent"] == "pooled"]
        styles = {
            "label_free": ("#1f6feb", "label-free (no labels of the new agent)"),
            "warm_start_10": ("#2da44e", "warm start 10 %"),
            "warm_start_20": ("#8250df", "warm start 20 %"),
        }
        for mode, (c, lab) in styles.items():
            g = df[df["mode"] == mode].dropna(subset=["steps_saved", "outcome_accuracy"])
            if g.empty:
                continue
            if mode == "label_free":
                ax.scatter(
                    100 * g["steps_saved"], 100 * g["outcome_accuracy"], s=5, color=c, alpha=0.15
                )
            fx, fy = _pareto(g["steps_saved"].to_numpy(), g["outcome_accuracy"].to_numpy())
            ax.plot(100 * fx, 100 * fy, color=c, lw=2, label=f"{lab}: frontier over (τs, τf)")
        for mode, c in (("step_cap", "#cf222e"), ("repeat_action", "#bf8700")):
            g = df[df["mode"] == mode].sort_values("steps_saved")
            if not g.empty:
                ax.plot(
                    100 * g["steps_saved"],
                    100 * g["outcome_accuracy"],
                    "--",
                    color=c,
                    lw=1.3,
                    label=f"baseline {mode}",
                )
        src = "sweep.csv (pooled rows)"
    else:
        out.append(
            inp.missing("sweep.csv")
            if inp.sweep is None
            else note(
                "sweep.csv lacks the columns mode, agent, steps_saved, outcome_accuracy",
                missing=True,
            )
        )
    swept = set(inp.sweep["mode"]) if have_sweep else set()
    for name, b in (
        (inp.loao or {}).get("baselines") or {}
    ).items():  # the operating points the sweep has no curve for
        if (
            isinstance(b, dict)
            and num(b.get("steps_saved")) is not None
            and not any(name.startswith(m) for m in swept)
        ):
            ax.scatter(
                100 * b["steps_saved"],
                100 * (num(b.get("outcome_accuracy")) or 0),
                marker="x",
                s=40,
                label=f"baseline {name} (loao.json)",
            )
    if not have_sweep:
        for k, b in ((inp.loao or {}).get("warm_start_pooled") or {}).items():
            if isinstance(b, dict) and num(b.get("steps_saved")) is not None:
                ax.scatter(
                    100 * b["steps_saved"],
                    100 * (num(b.get("outcome_accuracy")) or 0),
                    marker="s",
                    s=30,
                    label=f"warm start {k}",
                )
        src = "loao.json operating points only (no threshold sweep)"
    if num(pooled.get("steps_saved")) is not None:
        ax.scatter(
            [100 * pooled["steps_saved"]],
            [100 * num(pooled.get("outcome_accuracy"))],
            marker="*",
            s=260,
            color="black",
            zorder=5,
            label="honest operating point (inner-LOAO thresholds)",
        )
    orc = (inp.loao or {}).get("oracle_pooled") or {}
    if num(orc.get("steps_saved")) is not None:
        ax.scatter(
            [100 * orc["steps_saved"]],
            [100 * num(orc.get("outcome_accuracy"))],
            marker="P",
            s=90,
            color="#888",
            zorder=5,
            label="oracle (own labels; not honest)",
        )
    if not ax.has_data():
        plt.close(fig)
        return "".join(out) + note(
            "nothing to plot: neither sweep.csv nor loao.json has pooled savings", missing=True
        )
    ax.set_xlabel("steps saved, % of all steps (pooled held-out agents)")
    ax.set_ylabel("outcome accuracy, % of runs")
    ax.set_ylim(max(50, ax.get_ylim()[0]), 100.5)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(f"{inp.bench}: what each threshold pair would give ({src})")
    out.append(png(fig))
    out.append(
        legend(
            {
                "frontier": "for each level of steps saved, the best pooled outcome accuracy any (τs, τf) of the grid reaches; "
                "picking a point on it needs the held-out labels, so only the star is honest",
                "star": "the thresholds evaluate chose without the held-out agents' labels (loao.json pooled)",
                "baselines": "step_cap k: halt every run after k steps predicting failure; repeat_action: halt on a repeated command; "
                "prior_only: the same model and threshold rule on the task-level features alone (task skips only)",
            }
        )
    )
    return "".join(out)


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


def section_calibration(inp: Inputs) -> str:
    plt = _plt()
    small = small_agents(inp)
    df = inp.preds
    if df is not None and {"agent", "run_id", "t", "y", "p_success"} <= set(df.columns):
        return _calibration_curves(plt, df, small)
    return _calibration_in_the_large(plt, inp, small)


def _calibration_curves(plt: Any, df: pd.DataFrame, small: set[str]) -> str:
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


def _calibration_in_the_large(plt: Any, inp: Inputs, small: set[str]) -> str:
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
        return "".join(out) + note(
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
    return "".join(out)


def _gap_cell(gap: float | None) -> Any:
    if gap is None:
        return "–"
    text = f"{gap:+.2f}"
    return missed(text, f"|gap| > {CALIBRATION_GAP:.2f}") if abs(gap) > CALIBRATION_GAP else text


def calibration_notes(pts: list[tuple[str, float | None, float | None]], small: set[str]) -> str:
    """One sentence per held-out agent: its mean P(success) against its observed success, and what a large gap means."""
    items = []
    for a, mp, obs in pts:
        gap = calibration_gap(mp, obs)
        if gap is None:
            continue
        tag = " (small: few runs)" if a in small else ""
        if abs(gap) <= CALIBRATION_GAP:
            items.append(
                f"<li>{esc(a)}{tag}: mean P(success) {mp:.2f} vs {obs:.2f} observed: calibrated in the large "
                f"(gap {gap:+.2f}, within ±{CALIBRATION_GAP:.2f}).</li>"
            )
            continue
        way = (
            "under-predicts success: its P(failure) runs high, so halts that record a failure are the ones at risk, and "
            "success halts come late"
            if gap < 0
            else "over-predicts success: halts that record a success are the ones at risk, and failure halts come late"
        )
        items.append(
            f'<li><span class="gap">{esc(a)}{tag}: mean P(success) {mp:.2f} vs {obs:.2f} observed (gap {gap:+.2f})</span>: '
            f"the model {way}; the thresholds were chosen without this agent's labels, so nothing corrected it "
            "(a warm start on a few labelled runs would check them).</li>"
        )
    return f'<ul class="calnotes">{"".join(items)}</ul>' if items else ""


def halt_steps(df: pd.DataFrame, min_t: int, task_skips: bool = False) -> pd.DataFrame:
    """Per held-out run: T, y, the halt step (0 = ran to the end) and predicted outcome under its agent's thresholds,
    each prefix gated as the evaluation gated it (its ``gate`` column, the task-skip policy of loao.json)."""
    rows = []
    for (agent, rid), g in df.groupby(["agent", "run_id"], sort=False):
        g = g.sort_values("t")
        t, pred = halting(
            g["p_success"].to_numpy(np.float64),
            g["p_failure"].to_numpy(np.float64),
            float(g["tau_s"].iloc[0]),
            float(g["tau_f"].iloc[0]),
            min_t,
            gate=g["gate"].to_numpy(np.int64),
            task_skips=task_skips,
        )
        rows.append((str(agent), str(rid), int(g["T"].iloc[0]), int(g["y"].iloc[0]), t, pred))
    return pd.DataFrame(rows, columns=["agent", "run_id", "T", "y", "t_halt", "pred"])


def section_halts(inp: Inputs) -> str:
    plt = _plt()
    small = small_agents(inp)
    df = inp.preds
    need = {"agent", "run_id", "t", "T", "y", "p_success", "p_failure", "tau_s", "tau_f", "gate"}
    if df is None or not need <= set(df.columns):
        out = [inp.missing("loao_predictions.parquet")]
        agents = (inp.loao or {}).get("agents") or {}
        if agents:
            rows = [
                (
                    "small" if a in small else "",
                    [
                        agent_cell(a, a in small, b.get("n_runs")),
                        pct(b.get("steps_saved_task_skip")),
                        pct(b.get("steps_saved_in_run")),
                    ],
                )
                for a, b in agents.items()
                if isinstance(b, dict)
            ]
            out.append(
                note(
                    "per-run halt steps need the predictions file; loao.json gives only the split of steps saved:"
                )
            )
            out.append(table(["agent", "saved by task skip (t ≤ 1)", "saved in-run (t ≥ 2)"], rows))
        return "".join(out)
    config = (inp.loao or {}).get("config") or {}
    h = halt_steps(
        df, int(config.get("min_halt_step", 1) or 1), bool(config.get("task_skips", False))
    )
    halted = h[h["t_halt"] > 0]
    skip = halted[halted["t_halt"] <= TASK_SKIP_T]
    inrun = halted[halted["t_halt"] > TASK_SKIP_T]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 3]})
    for ax, part, title in (
        (ax1, skip, f"task skip (t ≤ {TASK_SKIP_T})"),
        (ax2, inrun, f"in-run (t ≥ {TASK_SKIP_T + 1})"),
    ):
        fail, succ = part[part["pred"] == 0]["t_halt"], part[part["pred"] == 1]["t_halt"]
        if part.empty:
            ax.text(0.5, 0.5, "no halts", ha="center", transform=ax.transAxes)
        elif ax is ax1:  # a handful of step values: one stacked bar each
            ts = sorted(set(part["t_halt"]))
            nf = [int((fail == t).sum()) for t in ts]
            ax.bar([str(t) for t in ts], nf, color="#cf222e", width=0.5)
            ax.bar(
                [str(t) for t in ts],
                [int((succ == t).sum()) for t in ts],
                bottom=nf,
                color="#2da44e",
                width=0.5,
            )
        else:
            hi = int(part["t_halt"].max())
            lo = int(part["t_halt"].min())
            bins = np.arange(lo - 0.5, hi + 1.5, max(1, (hi - lo + 1) // 40))
            ax.hist(
                [fail, succ],
                bins=bins,
                stacked=True,
                color=["#cf222e", "#2da44e"],
                label=["predicted failure", "predicted success"],
            )
        ax.set_title(f"{title}: {len(part)} runs")
        ax.set_xlabel("halt step t")
    ax1.set_ylabel("halted runs")
    ax2.legend(fontsize=8)
    fig.suptitle(
        f"{len(halted)} of {len(h)} held-out runs halted (all agents, small included)", fontsize=11
    )
    fig.tight_layout()
    rows = []
    for a, g in h.groupby("agent", sort=False):
        n = len(g)
        hs = g[g["t_halt"] > 0]
        sk = int((hs["t_halt"] <= TASK_SKIP_T).sum())
        ir = len(hs) - sk
        med = float(hs.loc[hs["t_halt"] > TASK_SKIP_T, "t_halt"].median()) if ir else None
        rows.append(
            (
                "small" if a in small else "",
                [
                    agent_cell(a, a in small, n),
                    str(n),
                    f"{sk} ({pct(sk / n, 0)})",
                    f"{ir} ({pct(ir / n, 0)})",
                    "–" if med is None else f"{med:g}",
                    f"{n - len(hs)}",
                ],
            )
        )
    return (
        png(fig)
        + table(
            ["agent", "runs", "task skip", "in-run", "median in-run halt step", "ran to the end"],
            rows,
        )
        + legend(
            {
                "task skip": f"halted at t ≤ {TASK_SKIP_T}: decided on what was known before the agent's trajectory "
                "said anything (task prior, gold patch size); the savings of skipping a task nobody solves",
                "in-run": f"halted at t ≥ {TASK_SKIP_T + 1}: predicted from the trajectory",
                "halt step": "the first prefix t with P(success) ≥ τs or P(failure) ≥ τf (metrics.halting, the Monitor's rule), "
                f"t ≥ min_halt_step = {int(config.get('min_halt_step', 1) or 1)}, with the thresholds the agent was evaluated with",
                "colour": "predicted outcome recorded at the halt",
            }
        )
    )


BUILDERS: dict[str, Callable[[Inputs], str]] = {
    "summary": section_summary,
    "results": section_results,
    "rules": section_rules,
    "loso": section_loso,
    "frontier": section_frontier,
    "calibration": section_calibration,
    "halts": section_halts,
    "pass": section_pass,
    "dollars": section_dollars,
    "budget": section_budget,
    "latency": section_latency,
}


def render(inp: Inputs) -> str:
    parts = []
    for sid, title in SECTIONS.items():
        try:
            body = BUILDERS[sid](inp)
        except Exception as e:  # noqa: BLE001 - one section's surprise must not cost the whole page
            body = note(
                f"this section could not be built from the reports: {type(e).__name__}: {e}",
                missing=True,
            )
        parts.append(f'<section id="{sid}"><h2>{esc(title)}</h2>{body}</section>')
    nav = "".join(f'<a href="#{s}">{esc(t)}</a>' for s, t in SECTIONS.items())
    found = [
        n
        for n in (
            "loao.json",
            "sweep.csv",
            "budget.json",
            "routing.json",
            "latency.json",
            "loao_predictions.parquet",
        )
        if n not in inp.problems
    ]
    rep = inp.loao or {}
    prov = " · ".join(
        f"<b>{esc(k)}</b> {esc(v)}" for k, v in provenance(inp.bench, inp.loao, inp.ingest).items()
    )
    head = (
        f"<h1>earlyeval report: {esc(inp.bench)}</h1>"
        f'<p class="provenance">{prov}</p>'
        f"<p>Leave-one-agent-out: every number about an agent comes from models that never saw that agent's runs. "
        f"Held-out agents: {len(rep.get('holdout_agents') or [])} large, {len(rep.get('small_agents') or [])} small. "
        f"Read from: {esc(', '.join(found) or 'nothing')}.</p><nav>{nav}</nav>"
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>earlyeval report: {esc(inp.bench)}</title>'
        f"<style>{CSS}</style></head><body>{head}{''.join(parts)}</body></html>\n"
    )


def write_report(bench: str, out: Path | str | None = None) -> Path:
    """Write reports/<bench>/report.html (atomically) from whatever reports the benchmark has.  ``out``: a file,
    or a directory (an existing one, or a path ending in a separator) that gets ``report.html``."""
    rdir, fdir = reports_dir(bench), features_dir(bench)
    inp = Inputs(bench, rdir, fdir)
    dest = Path(out) if out else rdir / "report.html"
    if out and (dest.is_dir() or str(out).endswith(("/", "\\"))):
        dest = dest / "report.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(dest, render(inp))
    return dest

"""One self-contained HTML page a person reads, from the reports a benchmark already has.

``earlyeval report --bench B`` reads ``reports/<B>/`` (loao.json, sweep.csv, budget.json, routing.json,
latency.json: whichever exist) and ``features/<B>/loao_predictions.parquet`` and writes
``reports/<B>/report.html``: inline CSS, every plot a PNG embedded as a base64 data URI, nothing
fetched. Nothing is recomputed that a report already states; what the page derives (halt steps,
calibration bins) comes from the held-out predictions through ``metrics.halting``, the one halting
rule. A missing or unreadable input gives its section a note saying which command writes it, never
a crash.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from earlyeval.core import atomic
from earlyeval.modeling.metrics import TASK_SKIP_T, halting
from earlyeval.config.workspace import features_dir, reports_dir
from earlyeval.report.html import CSS, agent_cell, esc, fnum, legend, note, num, pct, png, signed, table, usd
from earlyeval.report.html import pyplot as _plt
from earlyeval.report.page_inputs import Inputs
from earlyeval.workflows.benchmark import latency_summary

SECTIONS = {  # id -> heading; the test checks every heading is on the page
    "results": "Results by protocol",
    "frontier": "Savings / accuracy frontier",
    "calibration": "Calibration per held-out agent",
    "halts": "Halt steps: task skip vs in-run",
    "dollars": "Dollars saved",
    "budget": "Budget coverage per agent",
    "latency": "Monitor latency",
}


def small_agents(inp: Inputs) -> set[str]:
    s = set((inp.loao or {}).get("small_agents") or [])
    for a, b in ((inp.loao or {}).get("agents") or {}).items():
        if isinstance(b, dict) and b.get("small_n"):
            s.add(a)
    return s


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
    "τs / τf": "thresholds on P(success) / P(failure), chosen by inner LOAO without this agent's labels ('–': never)",
    "pooled": "all large held-out agents together, each predicted by its own fold",
}


def _th(th: dict[str, Any] | None) -> str:
    if not isinstance(th, dict):
        return "–"
    s, f = num(th.get("success")), num(th.get("failure"))
    return f"{'–' if s is None or s >= 5 else f'{s:.3g}'} / {'–' if f is None or f >= 5 else f'{f:.3g}'}"


def _result_row(name: str, b: dict[str, Any], cls: str, small: bool = False) -> tuple[str, list[str]]:
    return (cls, [agent_cell(name, small, b.get("n_runs")) if cls != "pooled" else esc(name), str(b.get("n_runs", "–")),
                  pct(b.get("resolve_rate")), fnum(b.get("auroc_success")), pct(b.get("halted_fraction")),
                  pct(b.get("halted_accuracy")), pct(b.get("outcome_accuracy")), pct(b.get("steps_saved")),
                  pct(b.get("steps_saved_task_skip")), pct(b.get("steps_saved_in_run")),
                  signed(b.get("resolve_rate_shift_pp")), _th(b.get("thresholds"))])


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
    header = ["agent", "runs", "rate", "AUROC", "halted", "halted acc", "outcome acc", "saved", "task skip", "in-run",
              "shift pp", "τs / τf"]
    out = [note(f"threshold selection: {rep.get('threshold_selection', '?')}. " + str(rep.get("threshold_selection_detail", "")))]
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
        out.append(table(header, rows))
        if mshift is not None:
            out.append(f"<p>mean |shift| over the large agents: {mshift:.2f} pp</p>")
    if small:
        out.append(note(f"small agents ({', '.join(sorted(small))}): flagged, shown with every protocol, not pooled. "
                        "A small agent's halted accuracy rests on a handful of runs."))
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
    have_sweep = inp.sweep is not None and {"mode", "agent", "steps_saved", "outcome_accuracy"} <= set(inp.sweep.columns)
    if have_sweep:
        df = inp.sweep[inp.sweep["agent"] == "pooled"]
        styles = {"label_free": ("#1f6feb", "label-free (no labels of the new agent)"),
                  "warm_start_10": ("#2da44e", "warm start 10 %"), "warm_start_20": ("#8250df", "warm start 20 %")}
        for mode, (c, lab) in styles.items():
            g = df[df["mode"] == mode].dropna(subset=["steps_saved", "outcome_accuracy"])
            if g.empty:
                continue
            if mode == "label_free":
                ax.scatter(100 * g["steps_saved"], 100 * g["outcome_accuracy"], s=5, color=c, alpha=0.15)
            fx, fy = _pareto(g["steps_saved"].to_numpy(), g["outcome_accuracy"].to_numpy())
            ax.plot(100 * fx, 100 * fy, color=c, lw=2, label=f"{lab}: frontier over (τs, τf)")
        for mode, c in (("step_cap", "#cf222e"), ("repeat_action", "#bf8700")):
            g = df[df["mode"] == mode].sort_values("steps_saved")
            if not g.empty:
                ax.plot(100 * g["steps_saved"], 100 * g["outcome_accuracy"], "--", color=c, lw=1.3, label=f"baseline {mode}")
        src = "sweep.csv (pooled rows)"
    else:
        out.append(inp.missing("sweep.csv") if inp.sweep is None else note("sweep.csv lacks the columns mode, agent, steps_saved, "
                                                                          "outcome_accuracy", missing=True))
    swept = set(inp.sweep["mode"]) if have_sweep else set()
    for name, b in ((inp.loao or {}).get("baselines") or {}).items():  # the operating points the sweep has no curve for
        if isinstance(b, dict) and num(b.get("steps_saved")) is not None and not any(name.startswith(m) for m in swept):
            ax.scatter(100 * b["steps_saved"], 100 * (num(b.get("outcome_accuracy")) or 0), marker="x", s=40,
                       label=f"baseline {name} (loao.json)")
    if not have_sweep:
        for k, b in ((inp.loao or {}).get("warm_start_pooled") or {}).items():
            if isinstance(b, dict) and num(b.get("steps_saved")) is not None:
                ax.scatter(100 * b["steps_saved"], 100 * (num(b.get("outcome_accuracy")) or 0), marker="s", s=30,
                           label=f"warm start {k}")
        src = "loao.json operating points only (no threshold sweep)"
    if num(pooled.get("steps_saved")) is not None:
        ax.scatter([100 * pooled["steps_saved"]], [100 * num(pooled.get("outcome_accuracy"))], marker="*", s=260,
                   color="black", zorder=5, label="honest operating point (inner-LOAO thresholds)")
    orc = (inp.loao or {}).get("oracle_pooled") or {}
    if num(orc.get("steps_saved")) is not None:
        ax.scatter([100 * orc["steps_saved"]], [100 * num(orc.get("outcome_accuracy"))], marker="P", s=90, color="#888",
                   zorder=5, label="oracle (own labels; not honest)")
    if not ax.has_data():
        plt.close(fig)
        return "".join(out) + note("nothing to plot: neither sweep.csv nor loao.json has pooled savings", missing=True)
    ax.set_xlabel("steps saved, % of all steps (pooled held-out agents)")
    ax.set_ylabel("outcome accuracy, % of runs")
    ax.set_ylim(max(50, ax.get_ylim()[0]), 100.5)
    ax.legend(fontsize=8, loc="lower left")
    ax.set_title(f"{inp.bench}: what each threshold pair would give ({src})")
    out.append(png(fig))
    out.append(legend({"frontier": "for each level of steps saved, the best pooled outcome accuracy any (τs, τf) of the grid reaches; "
                                   "picking a point on it needs the held-out labels, so only the star is honest",
                       "star": "the thresholds evaluate chose without the held-out agents' labels (loao.json pooled)",
                       "baselines": "step_cap k: halt every run after k steps predicting failure; repeat_action: halt on a repeated command; "
                                    "prior_only: the same model and threshold rule on the task-level features alone (task skips only)"}))
    return "".join(out)


def _calibration_bins(y: np.ndarray, p: np.ndarray, w: np.ndarray, bins: int = 10) -> list[tuple[float, float, float]]:
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    out = []
    for b in range(bins):
        m = idx == b
        if w[m].sum() > 0:
            out.append((float(np.average(p[m], weights=w[m])), float(np.average(y[m], weights=w[m])), float(w[m].sum())))
    return out


def section_calibration(inp: Inputs) -> str:
    plt = _plt()
    small = small_agents(inp)
    df = inp.preds
    if df is not None and {"agent", "run_id", "t", "y", "p_success"} <= set(df.columns):
        agents = list(dict.fromkeys(df["agent"].astype(str)))
        n = len(agents)
        cols = 3
        rows_ = max(1, math.ceil(n / cols))
        fig, axes = plt.subplots(rows_, cols, figsize=(11, 3.3 * rows_), squeeze=False)
        trows = []
        for k, a in enumerate(agents):
            g = df[df["agent"] == a]
            nrun = g.groupby("run_id")["t"].transform("size").to_numpy(np.float64)
            w = 1.0 / nrun
            y, p = g["y"].to_numpy(np.float64), g["p_success"].to_numpy(np.float64)
            ax = axes[k // cols][k % cols]
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
            if k % cols == 0:
                ax.set_ylabel("observed success")
            if k // cols == rows_ - 1:
                ax.set_xlabel("predicted P(success)")
            brier = float(np.average((p - y) ** 2, weights=w))
            trows.append(("small" if a in small else "", [agent_cell(a, a in small, runs), str(runs),
                                                          fnum(np.average(p, weights=w)), fnum(np.average(y, weights=w)),
                                                          fnum(brier)]))
        for k in range(n, rows_ * cols):
            axes[k // cols][k % cols].axis("off")
        fig.tight_layout()
        return (png(fig) + table(["agent", "runs", "mean P(success)", "observed success", "Brier"], trows)
                + legend({"curve": "prefixes binned by predicted P(success) (10 bins); x = mean prediction, y = share of "
                                   "those prefixes whose run succeeded; dot size = weight; the grey diagonal is perfect calibration",
                          "weights": "every prefix weighted 1/(T-1), so each run counts once",
                          "Brier": "weighted mean of (P(success) - outcome)², lower is better",
                          "source": "features/<bench>/loao_predictions.parquet: every held-out prefix, from a model that never saw its agent"}))
    out = [inp.missing("loao_predictions.parquet")]
    agents = (inp.loao or {}).get("agents") or {}
    pts = [(a, num(b.get("mean_p_success")), num(b.get("resolve_rate"))) for a, b in agents.items() if isinstance(b, dict)]
    pts = [x for x in pts if x[1] is not None and x[2] is not None]
    if not pts:
        return "".join(out) + note("loao.json holds no per-agent mean P(success) either: calibration unknown", missing=True)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.plot([0, 1], [0, 1], color="#999", lw=1)
    for a, mp, rr in pts:
        ax.scatter(mp, rr, s=40, color="#f0b429" if a in small else "#1f6feb")
        ax.annotate(a[:24], (mp, rr), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("mean predicted P(success) over prefixes")
    ax.set_ylabel("true resolve rate")
    ax.set_title("per-agent calibration-in-the-large (loao.json)")
    out.append(png(fig))
    out.append(note("coarse: one point per agent (mean prediction vs resolve rate); per-prefix reliability curves need the predictions file"))
    return "".join(out)


def halt_steps(df: pd.DataFrame, min_t: int) -> pd.DataFrame:
    """Per held-out run: T, y, the halt step (0 = ran to the end) and predicted outcome under its agent's thresholds."""
    rows = []
    for (agent, rid), g in df.groupby(["agent", "run_id"], sort=False):
        g = g.sort_values("t")
        t, pred = halting(g["p_success"].to_numpy(np.float64), g["p_failure"].to_numpy(np.float64),
                          float(g["tau_s"].iloc[0]), float(g["tau_f"].iloc[0]), min_t)
        rows.append((str(agent), str(rid), int(g["T"].iloc[0]), int(g["y"].iloc[0]), t, pred))
    return pd.DataFrame(rows, columns=["agent", "run_id", "T", "y", "t_halt", "pred"])


def section_halts(inp: Inputs) -> str:
    plt = _plt()
    small = small_agents(inp)
    df = inp.preds
    need = {"agent", "run_id", "t", "T", "y", "p_success", "p_failure", "tau_s", "tau_f"}
    if df is None or not need <= set(df.columns):
        out = [inp.missing("loao_predictions.parquet")]
        agents = (inp.loao or {}).get("agents") or {}
        if agents:
            rows = [("small" if a in small else "", [agent_cell(a, a in small, b.get("n_runs")), pct(b.get("steps_saved_task_skip")),
                                                     pct(b.get("steps_saved_in_run"))]) for a, b in agents.items() if isinstance(b, dict)]
            out.append(note("per-run halt steps need the predictions file; loao.json gives only the split of steps saved:"))
            out.append(table(["agent", "saved by task skip (t ≤ 1)", "saved in-run (t ≥ 2)"], rows))
        return "".join(out)
    min_t = int(((inp.loao or {}).get("config") or {}).get("min_halt_step", 1) or 1)
    h = halt_steps(df, min_t)
    halted = h[h["t_halt"] > 0]
    skip = halted[halted["t_halt"] <= TASK_SKIP_T]
    inrun = halted[halted["t_halt"] > TASK_SKIP_T]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1, 3]})
    for ax, part, title in ((ax1, skip, f"task skip (t ≤ {TASK_SKIP_T})"), (ax2, inrun, f"in-run (t ≥ {TASK_SKIP_T + 1})")):
        fail, succ = part[part["pred"] == 0]["t_halt"], part[part["pred"] == 1]["t_halt"]
        if part.empty:
            ax.text(0.5, 0.5, "no halts", ha="center", transform=ax.transAxes)
        elif ax is ax1:  # a handful of step values: one stacked bar each
            ts = sorted(set(part["t_halt"]))
            nf = [int((fail == t).sum()) for t in ts]
            ax.bar([str(t) for t in ts], nf, color="#cf222e", width=0.5)
            ax.bar([str(t) for t in ts], [int((succ == t).sum()) for t in ts], bottom=nf, color="#2da44e", width=0.5)
        else:
            hi = int(part["t_halt"].max())
            lo = int(part["t_halt"].min())
            bins = np.arange(lo - 0.5, hi + 1.5, max(1, (hi - lo + 1) // 40))
            ax.hist([fail, succ], bins=bins, stacked=True, color=["#cf222e", "#2da44e"],
                    label=["predicted failure", "predicted success"])
        ax.set_title(f"{title}: {len(part)} runs")
        ax.set_xlabel("halt step t")
    ax1.set_ylabel("halted runs")
    ax2.legend(fontsize=8)
    fig.suptitle(f"{len(halted)} of {len(h)} held-out runs halted (all agents, small included)", fontsize=11)
    fig.tight_layout()
    rows = []
    for a, g in h.groupby("agent", sort=False):
        n = len(g)
        hs = g[g["t_halt"] > 0]
        sk = int((hs["t_halt"] <= TASK_SKIP_T).sum())
        ir = len(hs) - sk
        med = float(hs.loc[hs["t_halt"] > TASK_SKIP_T, "t_halt"].median()) if ir else None
        rows.append(("small" if a in small else "", [agent_cell(a, a in small, n), str(n), f"{sk} ({pct(sk / n, 0)})",
                                                     f"{ir} ({pct(ir / n, 0)})", "–" if med is None else f"{med:g}",
                                                     f"{n - len(hs)}"]))
    return (png(fig) + table(["agent", "runs", "task skip", "in-run", "median in-run halt step", "ran to the end"], rows)
            + legend({"task skip": f"halted at t ≤ {TASK_SKIP_T}: decided on what was known before the agent's trajectory "
                                   "said anything (task prior, gold patch size); the savings of skipping a task nobody solves",
                      "in-run": f"halted at t ≥ {TASK_SKIP_T + 1}: predicted from the trajectory",
                      "halt step": "the first prefix t with P(success) ≥ τs or P(failure) ≥ τf (metrics.halting, the Monitor's rule), "
                                   f"t ≥ min_halt_step = {min_t}, with the thresholds the agent was evaluated with",
                      "colour": "predicted outcome recorded at the halt"}))


def section_dollars(inp: Inputs) -> str:
    out = []
    pricing = (inp.routing or {}).get("pricing") or {}
    agents = (inp.loao or {}).get("agents") or {}
    small = small_agents(inp)
    if pricing and agents:
        rows, tot_all, tot_saved = [], 0.0, 0.0
        for a, b in agents.items():
            pr = pricing.get(a) or {}
            total, saved = num(pr.get("total_usd")), num(b.get("steps_saved"))
            est = None if total is None or saved is None else total * saved
            if est is not None and a not in small:
                tot_all += total
                tot_saved += est
            rows.append(("small" if a in small else "", [agent_cell(a, a in small, b.get("n_runs")), esc(pr.get("source", "unknown")),
                                                         usd(total), pct(saved), usd(est)]))
        rows.append(("pooled", ["large agents", "", usd(tot_all), pct(tot_saved / tot_all) if tot_all else "–", usd(tot_saved)]))
        out.append("<h3>Halting policy (as_of, honest thresholds), priced</h3>")
        out.append(table(["agent", "price source", "spend of all runs", "steps saved", "≈ dollars saved"], rows))
        out.append(legend({"spend of all runs": "routing.json pricing: what the agent's runs cost in total",
                           "price source": "per-step: the runs' own per-step cost; instance-total-pro-rata: the run's instance_cost "
                                           "charged t/T for t of T steps; catalog-usd-per-step: a catalog price per step",
                           "≈ dollars saved": "spend × steps saved: an estimate that charges every step the agent's mean price per "
                                              "step; exact only for a constant catalog price per step; where runs differ in price "
                                              "per step (per-step costs, pro-rata instance totals) the true figure differs"}))
    else:
        out.append(note("dollars of the halting policy: unknown (needs routing.json's pricing and loao.json)", missing=True))
        if inp.routing is None:
            out.append(inp.missing("routing.json"))
    pairs = (inp.routing or {}).get("pairs") or {}
    if pairs:
        rows = []
        for name, p in pairs.items():
            pol = p.get("policies") or {}
            base, stop = pol.get("always_cheap") or {}, pol.get("stop_on_predicted_failure") or {}
            bc, sc = num(base.get("total_cost_usd")), num(stop.get("total_cost_usd"))
            rows.append(("", [esc(name), str(p.get("n_tasks", "–")), usd(bc), usd(sc), usd(None if bc is None or sc is None else bc - sc),
                              pct(base.get("resolve_rate")), pct(stop.get("resolve_rate")), str(stop.get("n_stopped", "–"))]))
        out.append(f"<h3>Routing simulation ({esc(next(iter(pairs.values())).get('protocol', '?'))}): stop the cheap agent on predicted failure</h3>")
        out.append(table(["cheap->strong pair", "tasks", "always cheap", "stop on predicted failure", "saved", "resolve (always cheap)",
                          "resolve (stop)", "runs stopped"], rows))
        out.append(legend({"always cheap / stop": "total dollars of one pass over the shared tasks, real per-run prices (routing.json)",
                           "saved": "always cheap minus stop-on-predicted-failure"}))
    bud = ((inp.budget or {}).get("dimensions") or {}).get("cost_usd")
    if isinstance(bud, dict):
        es = (((bud.get("pooled") or {}).get("early_stop") or {}).get("model") or {})
        out.append(f"<p>Budget early stop on \"impossible\" (cost_usd, B = {usd(bud.get('budget_B'))} per run, pooled): "
                   f"{pct(es.get('saved_on_failed'))} of the dollars of failed runs saved, at {fnum(es.get('success_rate_cost_pp'), 2)} pp "
                   f"of success rate ({es.get('n_runs', '?')} runs whose cost is known).</p>")
    elif inp.budget is None:
        out.append(inp.missing("budget.json"))
    return "".join(out)


def section_budget(inp: Inputs) -> str:
    if inp.budget is None:
        return inp.missing("budget.json")
    dims = inp.budget.get("dimensions") or {}
    small = small_agents(inp)
    out = [note(f"protocol: {inp.budget.get('protocol', '?')}. " + str((inp.budget.get("method") or {}).get("metrics", "")))]
    for d, blk in dims.items():
        if not isinstance(blk, dict):
            continue
        agents = blk.get("agents") or {}
        online = (blk.get("online") or {}).get("agents") or {}
        levels = sorted({lv for b in agents.values() if isinstance(b, dict) for lv in ((b.get("coverage") or {}).get("model") or {})})
        rows = []

        def row(name: str, b: dict[str, Any], on: dict[str, Any], cls: str, sm: bool) -> tuple[str, list[str]]:
            cov = b.get("coverage") or {}
            cells = [agent_cell(name, sm, b.get("n_runs")) if cls != "pooled" else esc(name), str(b.get("n_runs", "–"))]
            for lv in levels:
                for v in ((cov.get("model") or {}).get(lv), (cov.get("linear") or {}).get(lv), (on.get("coverage") or {}).get(lv)):
                    off = num(v) is not None and abs(num(v) - float(lv)) > 0.05
                    cells.append(f'<span class="off">{pct(v)}</span>' if off else pct(v))
            return cls, cells

        for a in sorted(agents, key=lambda a: (a in small, a)):
            b = agents[a]
            if isinstance(b, dict):
                sm = a in small or bool(b.get("small_n"))
                rows.append(row(a, b, online.get(a) or {}, "small" if sm else "", sm))
        if isinstance(blk.get("pooled"), dict):
            rows.append(row("pooled (large agents)", blk["pooled"], (blk.get("online") or {}).get("pooled") or {}, "pooled", False))
        header = ["agent", "runs"] + [f"{h} {float(lv):.0%}" for lv in levels for h in ("model", "linear", "online")]
        excl = blk.get("runs_excluded_unknown") or {}
        out.append(f"<h3>{esc(d)} (B = {fnum(blk.get('budget_B'), 2 if d == 'cost_usd' else 0)})</h3>")
        out.append(table(header, rows))
        if excl:
            out.append(note("not in this dimension (usage unknown, never counted as 0): "
                            + ", ".join(f"{a} ({n} runs)" for a, n in excl.items())))
    out.append(legend({"model p%": "share of prefixes (each run weighted 1/(T-1)) whose remaining usage lies in the model's "
                                   "conformalized p% interval; nominal = p%",
                       "linear p%": "the same for the linear baseline (spend per step so far × median remaining length)",
                       "online p%": "intervals re-conformalized on the new agent's own finished runs (no outcome labels); "
                                    "uses the new agent's data, so not the label-free headline",
                       "red": "more than 5 percentage points from nominal",
                       "B": "the budget: 75 % quantile of run totals of every labelled run whose usage is known"}))
    return "".join(out)


def section_latency(inp: Inputs) -> str:
    if inp.latency is None:
        return inp.missing("latency.json")

    try:
        return f"<pre>{esc(latency_summary(inp.latency))}</pre>"
    except (KeyError, TypeError, ValueError) as e:
        return note(f"latency.json: unexpected content ({type(e).__name__}: {e})", missing=True)


BUILDERS: dict[str, Callable[[Inputs], str]] = {
    "results": section_results, "frontier": section_frontier, "calibration": section_calibration,
    "halts": section_halts, "dollars": section_dollars, "budget": section_budget, "latency": section_latency,
}


def render(inp: Inputs) -> str:
    parts = []
    for sid, title in SECTIONS.items():
        try:
            body = BUILDERS[sid](inp)
        except Exception as e:  # noqa: BLE001 - one section's surprise must not cost the whole page
            body = note(f"this section could not be built from the reports: {type(e).__name__}: {e}", missing=True)
        parts.append(f'<section id="{sid}"><h2>{esc(title)}</h2>{body}</section>')
    nav = "".join(f'<a href="#{s}">{esc(t)}</a>' for s, t in SECTIONS.items())
    found = [n for n in ("loao.json", "sweep.csv", "budget.json", "routing.json", "latency.json", "loao_predictions.parquet")
             if n not in inp.problems]
    rep = inp.loao or {}
    head = (f"<h1>earlyeval report: {esc(inp.bench)}</h1>"
            f"<p>Leave-one-agent-out: every number about an agent comes from models that never saw that agent's runs. "
            f"Held-out agents: {len(rep.get('holdout_agents') or [])} large, {len(rep.get('small_agents') or [])} small. "
            f"Read from: {esc(', '.join(found) or 'nothing')}.</p><nav>{nav}</nav>")
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>earlyeval report: {esc(inp.bench)}</title>'
            f"<style>{CSS}</style></head><body>{head}{''.join(parts)}</body></html>\n")


def write_report(bench: str, out: Path | None = None) -> Path:
    """Write reports/<bench>/report.html (atomically) from whatever reports the benchmark has."""
    rdir, fdir = reports_dir(bench), features_dir(bench)
    inp = Inputs(bench, rdir, fdir)
    dest = out or rdir / "report.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(dest, render(inp))
    return dest

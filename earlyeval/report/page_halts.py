"""The report page's halt steps: task skips against in-run halts, per held-out run from the predictions (the
Monitor's rule, ``metrics.halting``), else the split of steps saved from loao.json."""

from __future__ import annotations

import numpy as np
import pandas as pd
from markupsafe import Markup

from earlyeval.fitting.metrics import TASK_SKIP_T, halting
from earlyeval.report.html import agent_cell, join, legend, note, pct, png, table
from earlyeval.report.html import pyplot as _plt
from earlyeval.report.page_inputs import Inputs, small_agents


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


def section_halts(inp: Inputs) -> Markup:
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
        return join(out)
    config = (inp.loao or {}).get("config") or {}
    min_t = int(config.get("min_halt_step", 1) or 1)
    h = halt_steps(df, min_t, bool(config.get("task_skips", False)))
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
                f"t ≥ min_halt_step = {min_t}, with the thresholds the agent was evaluated with",
                "colour": "predicted outcome recorded at the halt",
            }
        )
    )

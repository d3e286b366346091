"""The report page's savings / accuracy frontier: the threshold sweep's frontiers (sweep.csv), the baselines and
the honest operating point (loao.json), one figure."""

from __future__ import annotations

import numpy as np
from markupsafe import Markup

from earlyeval.report.html import join, legend, note, num, png
from earlyeval.report.html import pyplot as _plt
from earlyeval.report.page_inputs import Inputs


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


def section_frontier(inp: Inputs) -> Markup:
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
        return join(out) + note(
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
    return join(out)

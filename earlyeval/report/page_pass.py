"""The report page's benchmark-pass section: each held-out agent's simulated passes (loao.json ``agents.<a>.pass``,
``pass_pooled``) beside the static model and prior-only, and the savings by how far the pass has gone (a plot)."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from earlyeval.report.html import (
    agent_cell,
    join,
    legend,
    note,
    num,
    pct,
    png,
    pyplot,
    signed,
    table,
)
from earlyeval.report.page_inputs import Inputs, small_agents

PASS_LEGEND = {
    "W": "parallel workers of the simulated pass: a run reads only runs finished before it started",
    "saved": "steps saved, audited runs (never halted) counted at full cost; task skip (t ≤ 1) + in-run",
    "moves": "threshold moves certified by the audit sample (anytime-valid), summed over the seeds' passes",
    "vs static": "the pass's steps saved minus the static model's (same agent, same fold), in points",
    "prior-only saved": "the task-prior lookup's steps saved (loao.json baselines.prior_only: pooled only)",
}


def _workers(rep: dict[str, Any]) -> list[str]:
    return [k for k in (rep.get("pass_pooled") or {}) if k.startswith("W=")]


def _row(
    name: str,
    blk: dict[str, Any],
    static: dict[str, Any],
    prior: dict[str, Any],
    w: str,
    cls: str = "",
) -> tuple:
    moves = blk.get("threshold_moves")
    gain = (
        None
        if num(blk.get("steps_saved")) is None or num(static.get("steps_saved")) is None
        else float(blk["steps_saved"]) - float(static["steps_saved"])
    )
    return (
        cls,
        [
            name,
            w,
            pct(blk.get("halted_accuracy")),
            pct(blk.get("steps_saved")),
            pct(blk.get("steps_saved_task_skip")),
            pct(blk.get("steps_saved_in_run")),
            pct(blk.get("audited_share")),
            str(sum(moves)) if isinstance(moves, list) else "–",
            signed(None if gain is None else 100 * gain) + " pp",
            pct(static.get("steps_saved")),
            pct(prior.get("steps_saved")),
        ],
    )


def pass_figure(rep: dict[str, Any], agents: list[str], w: str) -> Any:
    """Steps saved in each fifth of the pass order (runs finished grow left to right), one line per agent."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for a in agents:
        fifths = ((rep["agents"][a].get("pass") or {}).get(w) or {}).get(
            "steps_saved_by_fifth_of_pass"
        ) or []
        if fifths:
            ax.plot(
                range(1, len(fifths) + 1),
                [None if v is None else 100 * v for v in fifths],
                "o-",
                label=a,
                lw=1,
            )
    ax.set_xlabel(
        "fifth of the pass (runs in pass order; the later fifths start after more runs finished)"
    )
    ax.set_ylabel("steps saved (%)")
    ax.set_title(f"savings as the pass goes on ({w}, mean over the seeds' orders)", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="best")
    fig.tight_layout()
    return fig


def section_pass(inp: Inputs) -> Markup:
    rep = inp.loao
    if rep is None:
        return inp.missing("loao.json")
    ws = _workers(rep)
    if not ws:
        return note("no benchmark-pass simulation in this loao.json")
    small = small_agents(inp)
    agents = rep.get("agents") or {}
    large = [
        a
        for a in rep.get("holdout_agents") or agents
        if a not in small and isinstance((agents.get(a) or {}).get("pass"), dict)
    ]
    rows = []
    for a in large:
        b = agents[a]
        prior = (b.get("baselines") or {}).get("prior_only") or {}
        rows += [_row(agent_cell(a, False, b.get("n_runs")), b["pass"][w], b, prior, w) for w in ws]
    pooled_prior = (rep.get("baselines") or {}).get("prior_only") or {}
    rows += [
        _row(
            "pooled (large held-out agents)",
            rep["pass_pooled"][w],
            rep.get("pooled") or {},
            pooled_prior,
            w,
            "pooled",
        )
        for w in ws
    ]
    first = agents[large[0]]["pass"] if large else {}
    out = [
        note(
            f"as_of; audit share {pct(first.get('audit_share'))}, seeds {first.get('seeds', '?')}, label-free pair "
            f"from each agent's fold; pass features {'on' if first.get('pass_features') else 'off'}"
        ),
        table(
            [
                "agent",
                "W",
                "halted acc",
                "saved",
                "task skip",
                "in-run",
                "audited",
                "moves",
                "vs static",
                "static saved",
                "prior-only saved",
            ],
            rows,
        ),
    ]
    if large:
        out.append(png(pass_figure(rep, large, "W=8" if "W=8" in ws else ws[0])))
    out.append(legend(PASS_LEGEND))
    return join(out)


__all__ = ["pass_figure", "section_pass"]

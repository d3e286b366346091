"""The report page's results by protocol: one table per protocol (held-out agents, their pooled row), the
headline's target misses in words, and the legend."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from earlyeval.report.html import (
    agent_cell,
    fnum,
    join,
    legend,
    missed,
    note,
    num,
    pct,
    signed,
    table,
    tag,
)
from earlyeval.report.page_inputs import Inputs, small_agents
from earlyeval.report.page_rules import pair_text
from earlyeval.report.targets import TARGETS, exact, misses

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
            agent_cell(name, small, b.get("n_runs")) if cls != "pooled" else name,
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
            pair_text(b.get("thresholds")),
        ],
    )


def target_summary(agents: dict[str, Any], large: list[str]) -> Markup:
    """The headline's target misses, per large held-out agent, in words (the cells are marked in the table)."""
    lines = []
    for a in large:
        b = agents.get(a)
        if isinstance(b, dict) and misses(b):
            what = "; ".join(f"{text} ({exact(b, key)})" for key, text in misses(b).items())
            lines.append(tag("li", tag("b", a), f": misses {what}"))
    met = len([a for a in large if isinstance(agents.get(a), dict)]) - len(lines)
    head = (
        f"Targets (per large held-out agent, as_of: {'; '.join(t.text for t in TARGETS)}): "
        f"{met} of {met + len(lines)} agents meet all"
    )
    if not lines:
        return tag("div", f"{head}.", cls="targets ok")
    return tag(
        "div", f"{head}; missed cells are marked ✗ in red.", tag("ul", *lines), cls="targets"
    )


def section_results(inp: Inputs) -> Markup:
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
        out.append(tag("h3", f"{p}{' (headline)' if p == 'as_of' else ''}"))
        if doc.get(p):
            out.append(note(doc[p]))
        if p == "as_of":
            large = [
                a
                for a in (rep.get("holdout_agents") or blk.get("holdout_agents") or agents)
                if a not in small
            ]
            out.append(target_summary(agents, large))
        out.append(table(header, rows))
        if mshift is not None:
            out.append(tag("p", f"mean |shift| over the large agents: {mshift:.2f} pp"))
    if small:
        out.append(
            note(
                f"small agents ({', '.join(sorted(small))}): flagged, shown with every protocol, not pooled. "
                "A small agent's halted accuracy rests on a handful of runs."
            )
        )
    out.append(legend(RESULT_LEGEND))
    return join(out)

"""The report page's summary at its top: the headline figures read off the reports (as_of, pooled over the
large held-out agents), one dollar figure per policy, and the blocks the sections below go into."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from earlyeval.report.html import fnum, join, legend, note, num, pct, table, tag, usd
from earlyeval.report.page_inputs import Inputs


def _saved(b: dict[str, Any]) -> str:
    return f"{pct(b.get('steps_saved'))} ({pct(b.get('steps_saved_task_skip'))} task skip, {pct(b.get('steps_saved_in_run'))} in-run)"


def _dollars(b: dict[str, Any]) -> str:
    d = b.get("dollars") or {}
    if num(d.get("usd_saved")) is None:
        return "unknown"
    return (
        f"{usd(d.get('usd_saved'))} of {usd(d.get('total_usd'))} ({pct(d.get('usd_saved_share'))})"
    )


def _row(name: str, b: dict[str, Any] | None) -> tuple[str, list[Any]]:
    b = b or {}
    return (
        "",
        [
            name,
            fnum(b.get("auroc_success")),
            pct(b.get("halted_accuracy")),
            _saved(b),
            _dollars(b),
        ],
    )


def _policies(rep: dict[str, Any]) -> list[tuple[str, list[str]]]:
    pooled = rep.get("pooled") or {}
    rows = [
        _row("benchmark pass (halt on both outcomes)", pooled),
        _row("failure-only live mode (halt_on: failure)", pooled.get("failure_only")),
    ]
    po = (rep.get("baselines") or {}).get("prior_only")
    if po:
        rows.append(_row("prior-only baseline (task-level features: task skips only)", po))
    for share, b in (rep.get("warm_start_pooled") or {}).items():
        rows.append(_row(f"warm start {share} (labelled runs completed first, at full cost)", b))
    return rows


def _ablations(rep: dict[str, Any]) -> Markup:
    rows = [
        (
            "",
            [
                str(a.get("name", "?")),
                fnum(a.get("mean_auroc")),
                pct((a.get("pooled") or {}).get("halted_accuracy")),
                pct((a.get("pooled") or {}).get("steps_saved")),
            ],
        )
        for a in rep.get("ablations") or []
    ]
    if not rows:
        return note(
            "ablations: none in this loao.json (`earlyeval evaluate` without --no-ablations writes them)"
        )
    return tag("h3", "Ablations (as_of)") + table(
        [
            "ablation",
            "mean AUROC per held-out agent",
            "halted acc (pooled)",
            "steps saved (pooled)",
        ],
        rows,
    )


def _routing(inp: Inputs) -> Markup:
    pairs = (inp.routing or {}).get("pairs") or {}
    if not pairs:
        return (
            inp.missing("routing.json")
            if inp.routing is None
            else note("routing: no pair in routing.json")
        )
    rows = []
    for name, p in pairs.items():
        pol = p.get("policies") or {}
        base, stop, esc_ = (
            pol.get(k) or {}
            for k in ("always_cheap", "stop_on_predicted_failure", "escalate_on_predicted_failure")
        )
        saved = (
            None
            if num(base.get("total_cost_usd")) is None or num(stop.get("total_cost_usd")) is None
            else num(base["total_cost_usd"]) - num(stop["total_cost_usd"])
        )
        rows.append(
            (
                "",
                [
                    name,
                    usd(saved),
                    pct(base.get("resolve_rate")),
                    pct(stop.get("resolve_rate")),
                    pct(esc_.get("resolve_rate")),
                ],
            )
        )
    return tag("h3", "Routing (routing.json)") + table(
        [
            "cheap->strong pair",
            "stop on predicted failure: saved",
            "resolve: always cheap",
            "stop",
            "escalate",
        ],
        rows,
    )


def section_summary(inp: Inputs) -> Markup:
    rep = inp.loao
    if not rep:
        return inp.missing("loao.json")
    out = [
        table(
            [
                "policy (as_of, pooled over the large held-out agents)",
                "AUROC",
                "halted acc",
                "steps saved",
                "dollars saved",
            ],
            _policies(rep),
        ),
        legend(
            {
                "steps saved": "share of all steps not run; task skip = halted at t ≤ 1 (decided before the trajectory "
                "said anything), in-run = predicted from the trajectory",
                "dollars saved": "each run priced by its own catalog source (loao.json `dollars`); the one dollar "
                "figure per policy on this page",
                "warm start": "the share of the new agent's runs completed first; they count at full cost",
            }
        ),
        _ablations(rep),
        _routing(inp),
    ]
    return join(out)

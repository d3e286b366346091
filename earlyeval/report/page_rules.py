"""The report page's sections on how the thresholds are chosen and where they transfer: the threshold rule
against the other rule and the per-agent oracle frontier, the benchmark pass against failure-only live mode
(steps and dollars, from loao.json's own priced blocks), and leave-one-scaffold-out per protocol."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from earlyeval.core.decision import threshold_text
from earlyeval.report.html import (
    agent_cell,
    fnum,
    join,
    legend,
    note,
    num,
    pct,
    signed,
    table,
    tag,
    usd,
)
from earlyeval.report.page_inputs import Inputs, small_agents


def pair_text(th: Any) -> str:
    """A pair of thresholds: "off" for a side that never halts (``threshold_text``), "–" where none is known."""
    if not isinstance(th, dict):
        return "–"
    sides = (num(th.get(k)) for k in ("success", "failure"))
    return " / ".join("–" if v is None else threshold_text(v, ".3g") for v in sides)


def _saved(b: Any) -> str:
    if not isinstance(b, dict):
        return "–"
    return f"{pct(b.get('steps_saved'))} ({pct(b.get('steps_saved_in_run'))} in-run)"


def _usd(d: Any) -> str:
    if not isinstance(d, dict) or num(d.get("usd_saved_share")) is None:
        return "–"
    return f"{usd(d.get('usd_saved'))} ({pct(d.get('usd_saved_share'))})"


def rule_sentences(rep: dict[str, Any]) -> list[str]:
    """The threshold rule in words, its guarantee as stated, and on how many held-out agents it held in each
    protocol (loao.json's ``guarantee_held``): the page's note and the README's lines (tools/results_tables.py)."""
    cfg = rep.get("config") or {}
    agents = rep.get("agents") or {}
    large = [a for a in rep.get("holdout_agents") or [] if isinstance(agents.get(a), dict)]
    first = (agents[large[0]].get("threshold_selection") or {}) if large else {}
    words = f"{cfg.get('threshold_rule', '?')}"
    if first.get("rule") == "agent-quantile":
        words += (
            f", per side the share of runs halted wrongly at most {first['alpha']:g} ({first['risk']}) on all but "
            f"{first['violations_allowed']} of the inner agents (delta {first['delta']:g})"
        )
    out = [
        f"**The threshold rule** (`fitting/risk_control.py`, docs/architecture.md): {words}, "
        f"prior guard {'on' if cfg.get('prior_guard') else 'off'}."
    ]
    if first.get("guarantee"):
        out.append(
            f"The rule's guarantee, as stated (the first held-out agent's fold): {first['guarantee']}."
        )
    for name, prot in (rep.get("protocols") or {}).items():
        h = (prot.get("pooled") or {}).get("guarantee_held") if isinstance(prot, dict) else None
        if h:
            out.append(
                f"How it held ({name}): the success side on {h['held']['success']} of {h['agents']} held-out agents, "
                f"the failure side on {h['held']['failure']} of {h['agents']}, both on {h['held_both']} (promised: "
                f"each side violated with probability at most {h['promised_violation_at_most']:.3f})."
            )
    return out


def section_rules(inp: Inputs) -> Markup:
    rep = inp.loao
    if rep is None:
        return inp.missing("loao.json")
    small = small_agents(inp)
    agents = rep.get("agents") or {}
    large = [
        a
        for a in rep.get("holdout_agents") or agents
        if a not in small and isinstance(agents.get(a), dict)
    ]
    blocks = [(a, agents[a], "") for a in large] + [
        ("pooled (large held-out agents)", rep.get("pooled") or {}, "pooled")
    ]
    out = []
    out.extend(note(line.replace("**", "")) for line in rule_sentences(rep))
    rows = []
    for a, b, cls in blocks:
        o = b.get("other_rule") if isinstance(b.get("other_rule"), dict) else {}
        rows.append(
            (
                cls,
                [
                    agent_cell(a, False, b.get("n_runs")) if not cls else a,
                    pair_text(b.get("thresholds")),
                    pct(b.get("halted_accuracy")),
                    _saved(b),
                    pair_text(o.get("thresholds")),
                    pct(o.get("halted_accuracy")),
                    _saved(o) if o else "–",
                    pct(b.get("oracle_frontier_steps_saved")),
                ],
            )
        )
    out.append(tag("h3", "The threshold rule, the other rule, the oracle frontier (as_of)"))
    out.append(
        table(
            [
                "agent",
                "τs / τf",
                "halted acc",
                "saved",
                "other rule τs / τf",
                "halted acc",
                "saved",
                "oracle frontier",
            ],
            rows,
        )
    )
    share = num((rep.get("pooled") or {}).get("share_of_oracle_savings"))
    out.append(
        tag("p", f"share of the per-agent oracle's savings the rule reaches, pooled: {pct(share)}")
    )
    rows = []
    for a, b, cls in blocks:
        fo = b.get("failure_only") if isinstance(b.get("failure_only"), dict) else {}
        spend = (
            (b.get("dollars") or {}).get("total_usd")
            if isinstance(b.get("dollars"), dict)
            else None
        )
        rows.append(
            (
                cls,
                [
                    agent_cell(a, False, b.get("n_runs")) if not cls else a,
                    usd(spend),
                    pct(b.get("halted_accuracy")),
                    _saved(b),
                    _usd(b.get("dollars")),
                    pct(fo.get("halted_accuracy")),
                    _saved(fo),
                    _usd(fo.get("dollars")),
                ],
            )
        )
    out.append(tag("h3", "Benchmark pass (both halts) against failure-only live mode (as_of)"))
    out.append(
        table(
            [
                "agent",
                "spend",
                "both: halted acc",
                "saved",
                "$ saved",
                "failure-only: halted acc",
                "saved",
                "$ saved",
            ],
            rows,
        )
    )
    out.append(
        legend(
            {
                "other rule": "the same folds with the other threshold rule (agent-quantile / worst-case), for comparison",
                "oracle frontier": "the most steps any threshold pair saves on the agent's own labels at the rule's halted "
                "accuracy: an upper bound, never honest",
                "failure-only": "success halts off (a live adapter's default halt_on: failure): no run that may still "
                "submit a patch is thrown away",
                "spend": "what the priced runs cost in all; $ saved: the dollars of the steps the policy did not run. Each run is priced by its own catalog source (per-step costs, instance totals pro rata, or a "
                "catalog price per step); runs without a price are left out, counted in loao.json",
            }
        )
    )
    return join(out)


def section_loso(inp: Inputs) -> Markup:
    rep = inp.loao
    if rep is None:
        return inp.missing("loao.json")
    prots = {
        k: v
        for k, v in (rep.get("protocols") or {}).items()
        if isinstance(v, dict) and v.get("leave_one_scaffold_out")
    }
    if not prots and rep.get("leave_one_scaffold_out"):
        prots = {"as_of": rep}
    if not prots:
        return note(
            "no leave-one-scaffold-out in loao.json (one scaffold, or an older report)",
            missing=True,
        )
    out = []
    for p, blk in prots.items():
        rows = []
        for sc, s in blk["leave_one_scaffold_out"].items():
            for a, b in (s.get("agents") or {}).items():
                if isinstance(b, dict):
                    rows.append(
                        (
                            "small" if b.get("small_n") else "",
                            [
                                sc,
                                agent_cell(a, bool(b.get("small_n")), b.get("n_runs")),
                                fnum(b.get("auroc_success")),
                                pct(b.get("halted_accuracy")),
                                _saved(b),
                                signed(b.get("resolve_rate_shift_pp")),
                                pair_text(s.get("thresholds")),
                            ],
                        )
                    )
            pb = s.get("pooled") or {}
            rows.append(
                (
                    "pooled",
                    [
                        sc,
                        "pooled (large)",
                        fnum(pb.get("auroc_success")),
                        pct(pb.get("halted_accuracy")),
                        _saved(pb),
                        signed(pb.get("resolve_rate_shift_pp")),
                        "",
                    ],
                )
            )
        out.append(tag("h3", p))
        out.append(
            table(
                [
                    "held-out scaffold",
                    "agent",
                    "AUROC",
                    "halted acc",
                    "saved",
                    "shift pp",
                    "τs / τf",
                ],
                rows,
            )
        )
    out.append(
        legend(
            {
                "held-out scaffold": "every agent of the scaffold held out together; thresholds chosen on the "
                "other scaffolds as units, each predicted by a model that saw neither"
            }
        )
    )
    return join(out)

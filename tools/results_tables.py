"""Print the README's SWE-bench results tables (Markdown) from a loao.json, so that every number there
is read off the report, not typed: `python tools/results_tables.py reports/swebench/loao.json`."""

from __future__ import annotations

import json
import sys
from typing import Any

from earlyeval.config.catalog import load_catalog
from earlyeval.core.decision import threshold_text
from earlyeval.report.page_rules import rule_sentences
from earlyeval.report.targets import target_sentences


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def saved(b: dict[str, Any]) -> str:
    return f"{pct(b.get('steps_saved'))} ({pct(b.get('steps_saved_in_run'))} in-run)"


def _pair(th: dict[str, Any]) -> str:
    """(tau_s, tau_f) as printed everywhere: "off" for a side that never halts, "–" where none is known."""
    if not th:
        return "–"
    return ", ".join(threshold_text(th[k], "") if k in th else "–" for k in ("success", "failure"))


def cells(b: dict[str, Any] | None) -> list[str]:
    if not b:
        return ["–"] * 4
    auc = b.get("auroc_success")
    return [
        "–" if auc is None else f"{auc:.3f}",
        pct(b.get("halted_accuracy")),
        saved(b),
        f"{b.get('resolve_rate_shift_pp') or 0:+.1f}",
    ]


def main(path: str, bench: str = "swebench") -> None:
    rep = json.load(open(path))
    dates = {r.agent: r.date for r in load_catalog(bench).runs}
    prot = rep["protocols"]
    names = ["as_of", "current_pool", "no_prior"]
    agents = list(prot["as_of"]["agents"])
    small = set(rep.get("small_agents", []))
    print(
        "| held-out agent (date) | "
        + " | ".join(f"{p}: AUROC | halted acc | steps saved | shift pp" for p in names)
        + " |"
    )
    print("|---|" + "---|" * (4 * len(names)))
    for a in [x for x in agents if x not in small]:
        print(
            f"| {a} ({dates.get(a, '?')}) | "
            + " | ".join(" | ".join(cells(prot[p]["agents"].get(a))) for p in names)
            + " |"
        )
    print(
        "| **pooled** | " + " | ".join(" | ".join(cells(prot[p]["pooled"])) for p in names) + " |"
    )
    for a in [x for x in agents if x in small]:
        n = prot["as_of"]["agents"][a]["n_runs"]
        print(
            f"| *small:* {a} ({dates.get(a, '?')}; {n} runs) | "
            + " | ".join(" | ".join(cells(prot[p]["agents"].get(a))) for p in names)
            + " |"
        )
    print()
    po = rep["baselines"]["prior_only"]
    gain = po.get("model_gain", {})
    print(
        "| held-out agent | prior-only: AUROC | halted acc | steps saved (decided by the task alone; task skips off: from t = 2) | model − prior-only: steps saved | in-run | halted acc |"
    )
    print("|---|---|---|---|---|---|---|")
    # per agent, the baseline is the model's block minus its gain (the report keeps the gains per agent)
    keys = ("auroc_success", "halted_accuracy", "steps_saved", "steps_saved_in_run")
    rows = []
    for a in agents:
        g = gain.get("agents", {}).get(a)
        if a in small or not g:
            continue
        m = prot["as_of"]["agents"][a]
        rows.append(
            (a, {k: None if m.get(k) is None or g.get(k) is None else m[k] - g[k] for k in keys}, g)
        )
    for a, b, g in rows + [("**pooled**", po, gain.get("pooled"))]:
        gs = (
            ["–"] * 3
            if not g
            else [
                "–" if g.get(k) is None else f"{100 * g[k]:+.1f} pp"
                for k in ("steps_saved", "steps_saved_in_run", "halted_accuracy")
            ]
        )
        auc = "–" if b.get("auroc_success") is None else f"{b['auroc_success']:.3f}"
        print(
            f"| {a} | {auc} | {pct(b.get('halted_accuracy'))} | {pct(b.get('steps_saved'))} | "
            + " | ".join(gs)
            + " |"
        )
    print()
    print(
        "| warm start (as_of) | " + " | ".join(a for a in agents if a not in small) + " | pooled |"
    )
    print("|---|" + "---|" * (len(agents) - len(small) + 1))
    for sh in rep["warm_start_pooled"]:
        per = [rep["agents"][a]["warm_start"][sh] for a in agents if a not in small]
        pool = rep["warm_start_pooled"][sh]
        print(
            f"| {sh} (halted acc / saved) | "
            + " | ".join(
                f"{pct(w['halted_accuracy'])} / {pct(w['steps_saved'])}" for w in per + [pool]
            )
            + " |"
        )
    print()
    print(
        "| warm start, check rule (as_of) | "
        + " | ".join(a for a in agents if a not in small)
        + " | pooled |"
    )
    print("|---|" + "---|" * (len(agents) - len(small) + 1))
    for sh in rep.get("warm_start_check_pooled", {}):
        per = [rep["agents"][a]["warm_start_check"][sh] for a in agents if a not in small]
        pool = rep["warm_start_check_pooled"][sh]
        print(
            f"| {sh} (halted acc / saved) | "
            + " | ".join(
                f"{pct(w['halted_accuracy'])} / {pct(w['steps_saved'])}" for w in per + [pool]
            )
            + " |"
        )
    print()
    extra_tables(rep, agents, small)
    print(
        "| ablation (as_of) | mean AUROC | pooled halted acc | pooled saved (in-run) | min halted acc | mean abs shift pp |"
    )
    print("|---|---|---|---|---|---|")
    for ab in rep.get("ablations", []):
        hs = [
            b["halted_accuracy"]
            for b in ab["agents"].values()
            if b.get("halted_accuracy") is not None
        ]
        p = ab["pooled"]
        print(
            f"| {ab['name']} | {ab['mean_auroc']:.3f} | {pct(p['halted_accuracy'])} | {saved(p)} | {pct(min(hs) if hs else None)} | "
            f"{ab['mean_abs_resolve_rate_shift_pp']:.2f} |"
        )


def usd(d: dict[str, Any] | None) -> str:
    if not d or d.get("usd_saved_share") is None:
        return "–"
    return f"${d['usd_saved']:.2f} of ${d['total_usd']:.2f} ({pct(d['usd_saved_share'])})"


def extra_tables(rep: dict[str, Any], agents: list[str], small: set[str]) -> None:
    """The benchmark pass against the failure-only live mode, the two threshold rules and the oracle's share,
    and leave-one-scaffold-out per protocol."""
    large = [a for a in agents if a not in small]
    blocks = {**rep["agents"], "**pooled**": rep["pooled"]}
    print(
        "| held-out agent (as_of) | benchmark pass: halted acc | steps saved | dollars saved | failure-only: halted acc | steps saved | dollars saved |"
    )
    print("|---|---|---|---|---|---|---|")
    for a in large + ["**pooled**"]:
        b = blocks[a]
        fo = b.get("failure_only") or {}
        print(
            f"| {a} | {pct(b.get('halted_accuracy'))} | {saved(b)} | {usd(b.get('dollars'))} | "
            f"{pct(fo.get('halted_accuracy'))} | {saved(fo)} | {usd(fo.get('dollars'))} |"
        )
    print()
    print(
        "| held-out agent (as_of) | thresholds (τ_s, τ_f) | halted acc | steps saved | other rule: thresholds | halted acc | steps saved | oracle frontier: steps saved at the same halted acc |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for a in large + ["**pooled**"]:
        b = blocks[a]
        o = b.get("other_rule") or {}
        th = b.get("thresholds") or {}
        oth = o.get("thresholds") or {}
        tau = _pair(th)
        otau = _pair(oth)
        orc = b.get("oracle_frontier_steps_saved")
        print(
            f"| {a} | {tau} | {pct(b.get('halted_accuracy'))} | {saved(b)} | {otau} | {pct(o.get('halted_accuracy'))} | "
            f"{saved(o) if o else '–'} | {pct(orc)} |"
        )
    share = rep["pooled"].get("share_of_oracle_savings")
    print(f"\nshare of the per-agent oracle's savings reached by the rule, pooled: {pct(share)}")
    for line in rule_sentences(rep) + [""] + target_sentences(rep):
        print(line)
    print()
    for name, prot in rep["protocols"].items():
        if not isinstance(prot, dict) or not prot.get("leave_one_scaffold_out"):
            continue
        print(
            f"| leave-one-scaffold-out, {name} | held-out agents | AUROC | halted acc | steps saved | shift pp |"
        )
        print("|---|---|---|---|---|---|")
        for sc, blk in prot["leave_one_scaffold_out"].items():
            for a, b in blk["agents"].items():
                if b.get("small_n"):
                    continue
                print(f"| {sc} | {a} | " + " | ".join(cells(b)) + " |")
            print(f"| {sc} | **pooled** | " + " | ".join(cells(blk["pooled"])) + " |")
        print()


def summary(path: str) -> None:
    """The README's headline table: as_of pooled, benchmark pass and live failure-only, beside prior-only."""
    rep = json.loads(open(path).read())
    pooled = rep["protocols"]["as_of"]["pooled"]
    po = rep["baselines"]["prior_only"]

    def row(name: str, b: dict[str, Any], auc: bool) -> str:
        c = cells(b)
        return f"| {name} | {c[0] if auc else ''} | {c[1]} | {c[2]} | {c[3] if auc else ''} |"

    print("| as_of (pooled, large held-out agents) | AUROC | halted acc | steps saved | shift pp |")
    print("|---|---|---|---|---|")
    print(row("benchmark pass (halt on both outcomes)", pooled, True))
    print(
        row("live loop (halt on predicted failure only)", pooled.get("failure_only") or {}, False)
    )
    print(row("prior-only baseline, benchmark pass", po, True))
    print(row("prior-only baseline, failure only", po.get("failure_only") or {}, False))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--summary"]:
        summary(sys.argv[2])
    else:
        main(*sys.argv[1:])

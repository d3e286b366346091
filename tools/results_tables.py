"""Print the README's SWE-bench results tables (Markdown) from a loao.json, so that every number there
is read off the report, not typed: `python tools/results_tables.py reports/swebench/loao.json`."""

from __future__ import annotations

import json
import sys
from typing import Any

from earlyeval.config.catalog import load_catalog


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f} %"


def saved(b: dict[str, Any]) -> str:
    return f"{pct(b.get('steps_saved'))} ({pct(b.get('steps_saved_in_run'))} in-run)"


def cells(b: dict[str, Any] | None) -> list[str]:
    if not b:
        return ["–"] * 4
    auc = b.get("auroc_success")
    return ["–" if auc is None else f"{auc:.3f}", pct(b.get("halted_accuracy")), saved(b),
            f"{b.get('resolve_rate_shift_pp') or 0:+.1f}"]


def main(path: str, bench: str = "swebench") -> None:
    rep = json.load(open(path))
    dates = {r.agent: r.date for r in load_catalog(bench).runs}
    prot = rep["protocols"]
    names = ["as_of", "current_pool", "no_prior"]
    agents = list(prot["as_of"]["agents"])
    small = set(rep.get("small_agents", []))
    print("| held-out agent (date) | " + " | ".join(f"{p}: AUROC | halted acc | steps saved | shift pp" for p in names) + " |")
    print("|---|" + "---|" * (4 * len(names)))
    for a in [x for x in agents if x not in small]:
        print(f"| {a} ({dates.get(a, '?')}) | " + " | ".join(" | ".join(cells(prot[p]["agents"].get(a))) for p in names) + " |")
    print("| **pooled** | " + " | ".join(" | ".join(cells(prot[p]["pooled"])) for p in names) + " |")
    for a in [x for x in agents if x in small]:
        n = prot["as_of"]["agents"][a]["n_runs"]
        print(f"| *small:* {a} ({dates.get(a, '?')}; {n} runs) | " + " | ".join(" | ".join(cells(prot[p]["agents"].get(a))) for p in names) + " |")
    print()
    po = rep["baselines"]["prior_only"]
    gain = po.get("model_gain", {})
    print("| held-out agent | prior-only: AUROC | halted acc | steps saved (all task skip) | model − prior-only: steps saved | in-run | halted acc |")
    print("|---|---|---|---|---|---|---|")
    # per agent, the baseline is the model's block minus its gain (the report keeps the gains per agent)
    keys = ("auroc_success", "halted_accuracy", "steps_saved", "steps_saved_in_run")
    rows = []
    for a in agents:
        g = gain.get("agents", {}).get(a)
        if a in small or not g:
            continue
        m = prot["as_of"]["agents"][a]
        rows.append((a, {k: None if m.get(k) is None or g.get(k) is None else m[k] - g[k] for k in keys}, g))
    for a, b, g in rows + [("**pooled**", po, gain.get("pooled"))]:
        gs = ["–"] * 3 if not g else ["–" if g.get(k) is None else f"{100 * g[k]:+.1f} pp" for k in ("steps_saved", "steps_saved_in_run", "halted_accuracy")]
        auc = "–" if b.get("auroc_success") is None else f"{b['auroc_success']:.3f}"
        print(f"| {a} | {auc} | {pct(b.get('halted_accuracy'))} | {pct(b.get('steps_saved'))} | " + " | ".join(gs) + " |")
    print()
    print("| warm start (as_of) | " + " | ".join(a for a in agents if a not in small) + " | pooled |")
    print("|---|" + "---|" * (len(agents) - len(small) + 1))
    for sh in rep["warm_start_pooled"]:
        per = [rep["agents"][a]["warm_start"][sh] for a in agents if a not in small]
        pool = rep["warm_start_pooled"][sh]
        print(f"| {sh} (halted acc / saved) | " + " | ".join(f"{pct(w['halted_accuracy'])} / {pct(w['steps_saved'])}" for w in per + [pool]) + " |")
    print()
    print("| ablation (as_of) | mean AUROC | pooled halted acc | pooled saved (in-run) | min halted acc | mean abs shift pp |")
    print("|---|---|---|---|---|---|")
    for ab in rep.get("ablations", []):
        hs = [b["halted_accuracy"] for b in ab["agents"].values() if b.get("halted_accuracy") is not None]
        p = ab["pooled"]
        print(f"| {ab['name']} | {ab['mean_auroc']:.3f} | {pct(p['halted_accuracy'])} | {saved(p)} | {pct(min(hs) if hs else None)} | "
              f"{ab['mean_abs_resolve_rate_shift_pp']:.2f} |")


if __name__ == "__main__":
    main(*sys.argv[1:])

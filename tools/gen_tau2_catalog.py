"""Build earlyeval/catalogs/tau2.toml from the tau2 result files under the data root.

    python tools/gen_tau2_catalog.py [--data-root ../shared/data] [--out earlyeval/catalogs/tau2.toml]

One ``[[runs]]`` entry per result file.  Agent identity = the agent LLM
(``info.agent_info.llm``, provider prefix dropped, undated alias for the one
snapshot it stood for) x the file's policy variant (the ``scaffold``), decided
by the rules in ``policy_variant`` below, which are written from the file names,
``agent_info.implementation``, the domain name and the notes in
tau2/SOURCE.md.  Files of the same LLM and variant share one agent name.
The output is committed; rerun this only when the data changes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from earlyeval.config.catalog import data_root  # noqa: E402

SMALL_BELOW_TASKS = 40

# dated snapshot names that are the only snapshot behind the undated alias in these runs
_ALIASES = {"gpt-4.1-2025-04-14": "gpt-4.1", "gpt-4.1-mini-2025-04-14": "gpt-4.1-mini"}


def model_name(llm: str) -> str:
    """``openrouter/anthropic/claude-haiku-4.5`` -> ``claude-haiku-4.5``."""
    m = llm.strip()
    m = re.sub(r"^(openrouter/[^/]+/|xai/|gemini/|azure/|openai/|ollama_chat/|anthropic/)", "", m)
    return _ALIASES.get(m, m)


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", s).strip("-")


def policy_variant(fname: str, impl: str, domain: str, tools: set[str]) -> str:
    """The agent's policy variant (catalog ``scaffold``) of one result file."""
    if fname.startswith("toolorchestra_"):
        return "toolorchestra"  # NVIDIA's ToolOrchestra orchestrator (submission named by file)
    if impl == "llm_agent_solo":
        return "tau2-solo"  # no user simulator: the agent gets the ticket and acts alone
    if impl == "llm_agent_scala" or "run" in tools:
        return "tau2-scala-codeact"  # Linyxus' fork: the agent calls the domain API by writing Scala code in a `run` tool
    if impl in ("context_agent", "enhanced_agent", "retry_agent"):
        return {
            "context_agent": "tau2-enhanced-context",
            "enhanced_agent": "tau2-enhanced-full",
            "retry_agent": "tau2-enhanced-retry",
        }[impl]
    if impl in ("whissle", "whissle_voice"):
        return impl.replace("_", "-")
    if impl == "experimental_agent":
        return "distyl-experimental-agent"
    m = re.match(r"eval_(chloe|tudor)_(gpt4o|gpt5mini)-refined_", fname)
    if m:
        return f"refined-policy-{m.group(1)}-by-{m.group(2)}"  # prompt refined by <model>, annotated by <person>
    if fname.startswith("debug_gpt4o_without_escape"):
        return "old-policy-no-escape"
    if domain == "airline_tighter_policy":
        return "tighter-policy"
    if domain == "airline-relaxed":
        return "relaxed-policy"
    return "tau2-llm-agent"  # the default LLM agent with the domain's own policy


def model_of(fname: str, llm: str) -> tuple[str, str]:
    """(model used in the agent name, model text for the catalog)."""
    if fname.startswith("toolorchestra_"):
        return (
            "gpt-5",
            "gpt-5 (ToolOrchestra orchestrator per the submission; agent_info.llm says gpt-4.1-mini-2025-04-14)",
        )
    m = model_name(llm)
    return m, m


def scan(path: Path) -> dict:
    d = json.load(gzip.open(path) if path.suffix == ".gz" else open(path))
    info = d.get("info") or {}
    ai = info.get("agent_info") or {}
    ui = info.get("user_info") or {}
    env = info.get("environment_info") or {}
    sims = d["simulations"]
    tools: set[str] = set()
    costs: list[float] = []
    raw_costs: list[float] = []
    steps = 0
    for s in sims:
        for m in s["messages"]:
            if m.get("role") != "assistant":
                continue
            steps += 1
            for tc in m.get("tool_calls") or []:
                tools.add(tc.get("name"))
            if not m.get("usage"):
                continue
            if isinstance(m.get("cost"), (int, float)):
                costs.append(float(m["cost"]))
            ru = (
                ((m.get("raw_data") or {}).get("usage") or {})
                if isinstance(m.get("raw_data"), dict)
                else {}
            )
            if isinstance(ru.get("cost"), (int, float)):
                raw_costs.append(float(ru["cost"]))
    if any(c > 0 for c in costs):
        source, per_step = "per-message-cost", sum(costs) / steps
    elif any(c > 0 for c in raw_costs):
        source, per_step = "per-message-cost", sum(raw_costs) / steps
    else:
        source, per_step = "none", None
    return {
        "file": path.name,
        "date": str(d.get("timestamp") or "")[
            :10
        ],  # the result file's own timestamp: the run's date
        "impl": ai.get("implementation") or "",
        "llm": ai.get("llm") or "",
        "user_llm": ui.get("llm") or "",
        "domain": env.get("domain_name") or "",
        "n_sims": len(sims),
        "n_tasks": len({str(s.get("task_id")) for s in sims}),
        "task_keys": sorted({f"{env.get('domain_name') or ''}/{s.get('task_id')}" for s in sims}),
        "tools": tools,
        "price_source": source,
        "usd_per_step": per_step,
        "raw_billed": source == "per-message-cost" and not any(c > 0 for c in costs),
    }


def build(root: Path) -> str:
    rows = [scan(p) for p in sorted((root / "tau2").glob("*.json*"))]
    for r in rows:
        r["variant"] = policy_variant(r["file"], r["impl"], r["domain"], r["tools"])
        r["model_key"], r["model"] = model_of(r["file"], r["llm"])
        r["agent"] = f"{r['variant']}__{_slug(r['model_key'])}"
    # unknown prices: estimate per step from priced files of the same model, else the median of all
    by_model = defaultdict(list)
    for r in rows:
        if r["usd_per_step"] is not None:
            by_model[r["model_key"]].append(r["usd_per_step"])
    overall = statistics.median(v for vs in by_model.values() for v in vs)
    for r in rows:
        if r["usd_per_step"] is None:
            if by_model.get(r["model_key"]):
                r["usd_per_step"] = statistics.mean(by_model[r["model_key"]])
                r["price_basis"] = (
                    "estimate: mean agent cost per step of priced files of the same model"
                )
            else:
                r["usd_per_step"] = overall
                r["price_basis"] = "estimate: median agent cost per step over all priced tau2 files"
        elif r["raw_billed"]:
            r["price_basis"] = (
                "measured: provider-billed raw_data.usage.cost (tau2 cost field was 0)"
            )
        else:
            r["price_basis"] = "measured: mean agent cost per step in this file"

    # an agent is small when all its files together hold fewer than SMALL_BELOW_TASKS distinct tasks
    # (the held-out unit is the agent, not the file: Dataset.holdout_units honours this flag)
    agent_tasks: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        agent_tasks[r["agent"]].update(r["task_keys"])
    out = [HEADER.strip(), ""]
    for r in sorted(rows, key=lambda r: (r["agent"], r["file"])):
        name = re.sub(r"\.json(\.gz)?$", "", r["file"])
        small = len(agent_tasks[r["agent"]]) < SMALL_BELOW_TASKS
        out += [
            "[[runs]]",
            f"name = {json.dumps(name)}",
            'folder = "tau2"',
            f"glob = {json.dumps(r['file'])}",
            f"agent = {json.dumps(r['agent'])}",
            f"date = {json.dumps(r['date'])}  # the result file's own timestamp",
            f"scaffold = {json.dumps(r['variant'])}",
            f"model = {json.dumps(r['model'])}",
            'format = "tau2"',
            f"domain = {json.dumps(r['domain'])}",
            f"user_model = {json.dumps(model_name(r['user_llm']))}",
            f"small = {'true' if small else 'false'}",
            'labels = [{ format = "inline" }]',
            f"price = {{ source = {json.dumps(r['price_source'])}, usd_per_step = {r['usd_per_step']:.6f}, basis = {json.dumps(r['price_basis'])} }}",
            f"# {r['n_sims']} simulations, {r['n_tasks']} tasks, agent_info.implementation = {r['impl']!r}",
            "",
        ]
    return "\n".join(out)


HEADER = """
# tau2-bench: 144 real simulation-result files (see ../shared/data/tau2/SOURCE.md).
# Generated by tools/gen_tau2_catalog.py from the data files; edit the rules there.
#
# One [[runs]] entry per result file (folder "tau2", glob = the file name); one
# simulation = one trajectory, labelled inline by reward_info.reward.
# Agent identity = the agent LLM (info.agent_info.llm, provider prefix dropped)
# x the file's policy variant (`scaffold`): tau2-llm-agent (default agent, the
# domain's own policy), tau2-solo (no-user mode), tau2-scala-codeact (API calls
# written as Scala code), tau2-enhanced-*, refined-policy-*, tighter-/relaxed-policy,
# toolorchestra, whissle, ...  Files of one LLM and variant share the agent name.
# `small = true`: the agent (all its files together) has fewer than 40 distinct
# tasks (kept for training, too small to be a held-out agent alone).
# Labels: success iff reward >= success_min_reward (default 1 - 1e-6); set
# `success_min_reward = 0.5` in a run (or in [defaults]) to count partial rewards.
# price.source: "per-message-cost" = the file has a real agent cost per message
# (for the OpenRouter files the provider-billed raw_data.usage.cost, the tau2
# cost field being 0); "none" = cost unknown (absent or always 0): step costs
# are None, usd_per_step is then an estimate (see basis).

bench = "tau2"
families = ["behaviour", "text", "peer_prior"]

[settings]
# the shipped model's families (text is measured as an ablation in loao.json: it costs ~4x the
# per-step latency and is fitted per fold; peer_prior: see its settings below)
model_families = ["behaviour", "peer_prior"]
# Dialogues are short (median ~10 turns, some 2-3).  Step 0 is the hard-coded
# greeting, identical in every run; min_steps = 3 keeps every dialogue with at
# least one prefix that holds a real agent decision after the greeting, while
# dropping the 27 degenerate 1-2 turn runs.
min_steps = 3
holdout_min_runs = 40
# peer_prior (earlyeval/features/peer.py): the other training agents' success rate on the task.
# Rates only (counts off) and constrained to raise P(success): unconstrained, LightGBM inverted it
# on some held-out agents, and the counts shift between training rows (own agent left out) and a
# held-out agent.
# Measured (`earlyeval evaluate --bench tau2 --no-ablations`, LOAO, honest inner thresholds), behaviour
# -> behaviour + peer_prior: pooled AUROC 0.634 -> 0.711 (mean per agent 0.591 -> 0.717, 18 of 22
# held-out agents up); halting does not gain: halted 0.8 % -> 0.2 % of runs, steps saved 0.4 % -> 0.1 %,
# outcome accuracy 99.95 % -> 99.90 % (halted accuracy 15/16 -> 2/4).  Unconstrained with counts:
# pooled AUROC 0.615.
peer_prior = { counts = false, strength = 4.0 }
monotone = { peer_rate = 1, peer_agent_rate = 1, peer_shrunk = 1 }
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-root", default=None)
    ap.add_argument("--out", default=str(REPO / "earlyeval" / "catalogs" / "tau2.toml"))
    a = ap.parse_args()
    text = build(data_root(a.data_root))
    Path(a.out).write_text(text, encoding="utf-8")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()

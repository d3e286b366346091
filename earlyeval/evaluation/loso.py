"""Leave-one-scaffold-out: a new scaffold, not only a new agent.

Every scaffold with a large agent (while another scaffold has one) is held out with all its agents, large and
small; the model is fitted without any of them, and the thresholds are chosen by the configured rule with the
other scaffolds as the units, each predicted by a model that saw neither it nor the held-out scaffold (inner
leave-one-scaffold-out).  Reported per agent of the scaffold and pooled over its large agents, under whichever
protocol the runner's config has (as_of, current_pool, no_prior).
"""

from __future__ import annotations

from typing import Any

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.blocks import agent_block, pooled_block
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.evaluate import other_rule
from earlyeval.evaluation.fit_plan import scaffold_groups
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.guard import guarded
from earlyeval.fitting.metrics import RunSet
from earlyeval.fitting.thresholds import choose_thresholds


def inner_scaffold_units(
    runner: FoldRunner, held_out: frozenset, large: list[str]
) -> dict[str, RunSet]:
    """Per other scaffold with a large agent, its large agents' runs predicted by a model that saw neither the
    held-out scaffold nor that scaffold: the units of the threshold rule in leave-one-scaffold-out."""
    groups = scaffold_groups(runner.ds, large)
    out: dict[str, RunSet] = {}
    for sc, ags in groups.items():
        if set(ags) & held_out:
            continue
        ex = held_out | frozenset(ags)
        out[sc] = RunSet.concat([runner.predict(ex, b) for b in ags if b in large])
    return out


def run_loso(
    ds: Dataset,
    cfg: EvalConfig,
    runner: FoldRunner,
    large: list[str],
    fallback: FoldRunner | None = None,
) -> dict[str, Any]:
    """Leave-one-scaffold-out: each held-out scaffold (all its agents) predicted by a model without any of them,
    thresholds chosen by the same rule with the other scaffolds as the units (inner leave-one-scaffold-out),
    reported per agent of the scaffold and pooled over its large agents.  With a ``fallback`` runner (the prior
    guard's), each fold ships whichever model ranks the inner scaffolds better."""
    out = {}
    alt_cfg = other_rule(cfg)
    for scaffold, ags in scaffold_groups(ds, large).items():
        ex = frozenset(ags)
        r, units, choice = guarded(runner, fallback, lambda rr: inner_scaffold_units(rr, ex, large))
        method = f"inner leave-one-scaffold-out over {len(units)} scaffolds"
        th = choose_thresholds(units, cfg, method=method)
        th_alt = choose_thresholds(units, alt_cfg, method=method)
        if choice:
            th = {**th, "model_choice": choice}
        blocks, items, items_alt = {}, [], []
        for a in ags:
            rs = r.predict(ex, a)
            blocks[a] = agent_block(rs, th, cfg)
            blocks[a]["small_n"] = a not in large
            blocks[a]["other_rule"] = agent_block(rs, th_alt, alt_cfg)
            if a in large:
                items.append((rs, th))
                items_alt.append((rs, th_alt))
        out[scaffold] = {
            "held_out_agents": ags,
            "thresholds": th,
            "agents": blocks,
            "pooled": pooled_block(items, cfg),
            "other_rule": {"thresholds": th_alt, "pooled": pooled_block(items_alt, alt_cfg)},
        }
    return out

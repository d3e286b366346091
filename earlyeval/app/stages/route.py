"""``earlyeval route``'s stage: one (cheap, strong) pair of agents routed on a benchmark, merged into
``reports/<bench>/routing.json`` with its figure."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any, Callable, Sequence

from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.prices import price_runs, pricing_summary
from earlyeval.config.workspace import reports_dir
from earlyeval.core.atomic import write_json
from earlyeval.evaluation.dataset import Dataset, load_dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.settings import eval_config
from earlyeval.report.routing import plot_pair, routing_table
from earlyeval.workflows.routing_pair import build_pair, pair_blind, routing_predictions, task_key
from earlyeval.workflows.routing_simulation import DEFAULT_VALUES_OF_SOLVE, simulate_pair

log = logging.getLogger(__name__)


def route_bench(
    bench: str,
    cheap: str,
    strong: str,
    budget_usd: float | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    root: str | Path | None = None,
    values_of_solve: Sequence[float] = DEFAULT_VALUES_OF_SOLVE,
    seed: int = 0,
    ds: Dataset | None = None,
    cfg: EvalConfig | None = None,
) -> dict[str, Path]:
    """Route one (cheap, strong) pair on a benchmark; merge into reports/<bench>/routing.json and draw a PNG."""
    cfg = cfg or eval_config(bench, seed=seed)
    ds = ds or load_dataset(bench, cfg.families, root, progress=progress is not None)
    for a in (cheap, strong):
        if a not in ds.agents:
            raise ValueError(f"unknown agent {a!r} on {bench}; agents: {', '.join(ds.agents)}")
    if cheap == strong:
        raise ValueError("cheap and strong must be two different agents")
    if progress:
        progress(f"routing {cheap} -> {strong}: fits without both agents, thresholds by inner LOAO")
    blind = pair_blind(ds, {cheap, strong})
    runner = FoldRunner(blind, cfg, progress)
    rs, th, info = routing_predictions(runner, cheap, strong)
    costs = price_runs(ds.trajs, ds.catalog)
    pair = build_pair(blind, costs, cheap, strong, rs)
    block = simulate_pair(
        pair,
        th["failure"],
        budget_usd=budget_usd,
        values_of_solve=values_of_solve,
        min_t=cfg.min_halt_step,
        seed=seed,
    )
    block["route_model"] = {
        **info,
        "prior": "every run's prior_solve_rate excludes both routed agents' public results",
    }
    block["thresholds"] = th
    shared = set(pair.task_ids)
    pair_trajs = [t for t in ds.trajs if t.agent in (cheap, strong) and task_key(t) in shared]
    block["pricing"] = pricing_summary(pair_trajs, costs, ds.catalog)
    block["notes"] = [
        "costs are the recorded runs' real costs (per-step sums, or instance totals pro-rata t/T when the format "
        "only has totals; catalog usd_per_step only where neither exists): see pricing",
        "stopped tasks count as unresolved; an escalated task is charged the cheap prefix plus the strong agent's "
        "whole recorded run and gets the strong run's recorded outcome",
        "halting happens only at t < T (prefixes 1..T-1); runs shorter than 2 steps always complete",
        "gap_closed = (rr - rr_always_cheap) / (rr_always_strong - rr_always_cheap); per 100 USD of extra cost over always-cheap",
    ]
    out = reports_dir(bench)
    path = out / "routing.json"
    report = _read_json(path) or {}
    report.update({"bench": bench, "version": 1})
    # every run's task prior (features and the prior-gated policies) counts only submissions dated before it
    block["protocol"] = "as_of"
    report.setdefault("pairs", {})[f"{cheap}->{strong}"] = block
    report["pricing"] = pricing_summary(ds.trajs, costs, ds.catalog)
    write_json(report, path)
    png = plot_pair(block, out / f"routing_{_safe(cheap)}_{_safe(strong)}.png")
    if progress:
        for line in routing_table(block).splitlines():
            progress(line)
    return {"routing": path, "plot": png}


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        log.warning("%s is not valid JSON; starting it afresh", path)
        return None


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)

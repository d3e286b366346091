"""Cross-benchmark transfer: train on one benchmark, evaluate on another.

Leave-one-benchmark-out with the LOAO machinery, on the families both benchmarks have. The protocol and how to
read its table: docs/architecture.md, "Cross-benchmark transfer".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np

from earlyeval.config.catalog import load_catalog
from earlyeval.config.workspace import reports_dir
from earlyeval.core.atomic import write_json
from earlyeval.core.atomic import write_text as atomic_write_text
from earlyeval.evaluation.blocks import agent_block, pooled_block
from earlyeval.evaluation.dataset import Dataset, load_dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.holdout_groups import inner_sets
from earlyeval.evaluation.settings import eval_config
from earlyeval.features import Featurizer, build_family, fold_free
from earlyeval.fitting.thresholds import choose_thresholds
from earlyeval.tables.store import read_ingested_tasks, read_ingested_trajectories

KEYS = (
    "n_runs",
    "resolve_rate",
    "auroc_success",
    "halted_fraction",
    "halted_accuracy",
    "outcome_accuracy",
    "steps_saved",
    "resolve_rate_shift_pp",
    "economic_consistency",
)


def combined_dataset(benches: list[str], families: list[str], progress: bool = False) -> Dataset:
    trajs, tasks = [], {}
    for b in benches:
        for t in read_ingested_trajectories(b):
            if t.outcome is None:
                continue
            t.agent = f"{b}:{t.agent}"
            t.task_id = f"{b}:{t.task_id}"
            trajs.append(t)
        for k, v in read_ingested_tasks(b).items():
            v.task_id = f"{b}:{k}"
            tasks[v.task_id] = v
    ds = load_dataset(benches[0], [], trajs=trajs, tasks=tasks, progress=progress)
    ds.bench = "+".join(benches)
    for fam in fold_free(families):
        fz = Featurizer([build_family(fam)])
        ds.blocks[fam] = fz.prefix_matrix(
            ds.trajs, ds.contexts, progress=progress, desc=f"features: {fam}"
        )
        ds.block_names[fam] = fz.names
    return ds


def transfer(
    source: str,
    target: str,
    families: list[str] | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    families = families or ["behaviour"]
    scat, tcat = load_catalog(source), load_catalog(target)
    missing = [f for f in families if f not in scat.families or f not in tcat.families]
    if missing:
        raise ValueError(f"families {missing} do not exist on both {source} and {target}")
    cfg = eval_config(source, families=families, seed=seed)
    tmin = tcat.config.holdout_min_runs
    ds = combined_dataset([source, target], families)
    src_agents = [a for a in ds.agents if a.startswith(source + ":")]
    tgt_agents = [a for a in ds.agents if a.startswith(target + ":")]
    runner = FoldRunner(ds, cfg, progress)
    held = frozenset(tgt_agents)
    src_large = [a for a in src_agents if ds.n_runs(a) >= cfg.holdout_min_runs]
    inner, method = inner_sets(runner, held, src_large)
    th = choose_thresholds(inner, cfg, method=f"{method} over {source} agents only")
    agents, items = {}, []
    for a in tgt_agents:
        rs = runner.predict(held, a)
        blk = agent_block(rs, th, cfg)
        blk["small_n"] = ds.n_runs(a) < tmin
        agents[a.split(":", 1)[1]] = {k: blk.get(k) for k in KEYS} | {"small_n": blk["small_n"]}
        if not blk["small_n"]:
            items.append((rs, th))
    pooled = (
        pooled_block(items, cfg)
        if items
        else pooled_block([(runner.predict(held, a), th) for a in tgt_agents], cfg)
    )
    own = reports_dir(target, create=False) / "loao.json"
    reference = None
    if own.exists():
        o = json.loads(own.read_text())
        reference = {
            "pooled": {k: o["pooled"].get(k) for k in KEYS if k in o["pooled"]},
            "families": o["config"]["families"],
            "note": f"{target}'s own leave-one-agent-out (its own families)",
        }
    big = [
        agents[a.split(":", 1)[1]]["auroc_success"]
        for a in tgt_agents
        if not agents[a.split(":", 1)[1]]["small_n"]
    ]
    return {
        "source": source,
        "target": target,
        "families": families,
        "thresholds": th,
        "source_agents": [a.split(":", 1)[1] for a in src_agents],
        "agents": agents,
        "pooled": {k: pooled.get(k) for k in KEYS},
        "mean_auroc_large_agents": float(np.mean([x for x in big if x is not None]))
        if big
        else None,
        "target_own_loao": reference,
    }


def transfer_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| source → target | families | mean AUROC (target agents) | pooled AUROC | outcome acc | halted acc | steps saved | shift pp | target's own LOAO AUROC |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    f = lambda x, pct=False: "–" if x is None else (f"{100 * x:.1f}" if pct else f"{x:.3f}")
    for r in results:
        p = r["pooled"]
        own = (r.get("target_own_loao") or {}).get("pooled", {}).get("auroc_success")
        lines.append(
            f"| {r['source']} → {r['target']} | {','.join(r['families'])} | {f(r['mean_auroc_large_agents'])} | {f(p['auroc_success'])} | "
            f"{f(p['outcome_accuracy'], True)} | {f(p['halted_accuracy'], True)} | {f(p['steps_saved'], True)} | "
            f"{p['resolve_rate_shift_pp']:.1f} | {f(own)} |"
        )
    return "\n".join(lines)


def transfer_bench(
    source: str,
    target: str,
    families: list[str] | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Path]:
    res = transfer(source, target, families, seed, progress)
    out = reports_dir("transfer")
    out.mkdir(parents=True, exist_ok=True)
    tag = "-".join(res["families"])
    p = write_json(res, out / f"{source}__to__{target}__{tag}.json")
    results = [json.loads(x.read_text()) for x in sorted(out.glob("*__to__*.json"))]
    md = out / "transfer.md"
    atomic_write_text(
        md,
        "# Cross-benchmark transfer (train on one benchmark, evaluate on another)\n\n"
        + transfer_table(results)
        + "\n",
    )
    return {"report": p, "table": md}

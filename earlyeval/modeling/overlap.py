"""Whether scored runs overlap a model's training data (read from the bundle's manifest): their scores are in-sample."""

from __future__ import annotations

from typing import Any

from earlyeval.config.catalog import load_catalog
from earlyeval.core.errors import CatalogError
from earlyeval.core.trajectory import Trajectory


def _norm(s: Any) -> str:
    return "".join(ch for ch in str(s or "").lower() if ch.isalnum())


def training_identities(bundle: Any) -> tuple[dict[str, dict[str, list[str]]], str]:
    """Per training agent, its scaffolds and models: from the manifest (``training.agent_identity``, written
    by ``earlyeval train``), else from the training benchmark's catalog (models trained before it was recorded)."""
    tr = bundle.training or {}
    ident = tr.get("agent_identity")
    if isinstance(ident, dict) and ident:
        return ident, "manifest"
    out: dict[str, dict[str, list[str]]] = {}
    for b in tr.get("benchmarks", []):
        try:
            cat = load_catalog(str(b))
        except CatalogError:
            continue
        for r in cat.runs:
            if r.agent in (tr.get("agents") or {}):
                d = out.setdefault(r.agent, {"scaffold": [], "model": []})
                for k, v in (("scaffold", r.scaffold), ("model", r.model)):
                    if v and v not in d[k]:
                        d[k].append(v)
    return out, ("catalog" if out else "none")


def training_overlap(bundle: Any, trajs: list[Trajectory]) -> dict[str, Any]:
    """Whether the scored runs overlap the model's training data: by agent name, by agent identity
    (scaffold x model, compared lower-cased without non-alphanumerics) or by run id.  Scores on such
    runs are in-sample: they overstate what the model does on a new agent."""
    tr = bundle.training or {}
    names = set(tr.get("agents") or {})
    ident, ident_source = training_identities(bundle)
    pairs = {(_norm(s), _norm(m)): a for a, d in ident.items() for s in d.get("scaffold", []) for m in d.get("model", [])}
    run_ids = set(tr.get("run_ids") or [])
    agents: dict[str, Any] = {}
    for t in trajs:
        a = agents.setdefault(t.agent, {"runs": 0, "training_agents": set(), "by": set(), "run_ids_in_training": 0})
        a["runs"] += 1
        if t.agent in names:
            a["by"].add("agent name")
            a["training_agents"].add(t.agent)
        key = (_norm(t.meta.get("scaffold")), _norm(t.meta.get("model")))
        if all(key) and key in pairs:
            a["by"].add("scaffold x model")
            a["training_agents"].add(pairs[key])
        if t.run_id in run_ids:
            a["run_ids_in_training"] += 1
            a["by"].add("run id")
    hits = {k: {"runs": v["runs"], "training_agents": sorted(v["training_agents"]), "by": sorted(v["by"]),
                "run_ids_in_training": v["run_ids_in_training"]} for k, v in agents.items() if v["by"]}
    out: dict[str, Any] = {"overlap": bool(hits), "agents": hits, "identity_source": ident_source,
                           "run_ids_recorded": bool(run_ids), "warning": None}
    if hits:
        parts = []
        for k, v in hits.items():
            same = f" = training agent {', '.join(v['training_agents'])}" if v["training_agents"] else ""
            ids = f", {v['run_ids_in_training']}/{v['runs']} run ids in training" if v["run_ids_in_training"] else ""
            parts.append(f"{k}{same} (by {', '.join(v['by'])}{ids})")
        out["warning"] = ("these runs overlap the model's training data: " + "; ".join(parts)
                          + ". Their scores are in-sample and overstate accuracy on a new agent "
                          "(use `earlyeval evaluate` for held-out numbers).")
    return out

"""Whether scored runs overlap a model's training data (read from the bundle's manifest): their scores are in-sample.

Names are weak evidence, so ``earlyeval train`` also records the training runs by content. What is recorded and
where: docs/monitor.md, "Replaying finished runs" (training overlap, by content).
"""

from __future__ import annotations

from typing import Any, Iterable

from earlyeval.config.catalog import load_catalog
from earlyeval.core.content import FINGERPRINT, fingerprint
from earlyeval.core.errors import CatalogError
from earlyeval.core.trajectory import Trajectory

# the meta keys in which a reader records the model its files name (mini, SWE-agent 1.x, Moatless, tau2,
# ATIF: native_model; OpenHands completions: llm_model; OpenHands events: llm_models)
NATIVE_MODEL_KEYS = ("native_model", "llm_model", "llm_models", "atif_model")


def _norm(s: Any) -> str:
    return "".join(ch for ch in str(s or "").lower() if ch.isalnum())


def native_models(t: Trajectory) -> list[str]:
    """The model names the run's own files record, normalized (provider prefix dropped, lower-cased,
    alphanumerics only): ``google/gemini-3-pro-preview`` -> ``gemini3propreview``."""
    out: list[str] = []
    for k in NATIVE_MODEL_KEYS:
        v = t.meta.get(k)
        for name in v if isinstance(v, list) else [v]:
            n = _norm(str(name).rsplit("/", 1)[-1]) if isinstance(name, str) and name else ""
            if n and n not in out:
                out.append(n)
    return out


def content_record(trajs: Iterable[Trajectory], formats: dict[str, str]) -> dict[str, Any]:
    """What ``earlyeval train`` writes as ``training.content``: each run's fingerprint -> its agent, and per
    agent its formats and native model names; sorted, so that the same data gives the same manifest.
    ``formats``: catalog run name (``meta["run"]``) -> its format."""
    runs: dict[str, str] = {}
    native: dict[str, dict[str, set[str]]] = {}
    for t in trajs:
        runs[fingerprint(t)] = t.agent
        d = native.setdefault(t.agent, {"formats": set(), "models": set()})
        fmt = formats.get(str(t.meta.get("run", "")))
        if fmt:
            d["formats"].add(fmt)
        d["models"].update(native_models(t))
    return {
        "fingerprint": FINGERPRINT,
        "runs": dict(sorted(runs.items())),
        "native": {a: {k: sorted(v) for k, v in d.items()} for a, d in sorted(native.items())},
    }


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


def _content(tr: dict[str, Any]) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """The manifest's fingerprints (fingerprint -> agent) and native (format, model) pairs -> agent."""
    content = tr.get("content")
    c: dict[str, Any] = content if isinstance(content, dict) else {}
    if c.get("fingerprint") != FINGERPRINT:  # another definition (or none): nothing to compare with
        return {}, {}
    given = c.get("runs")
    runs: dict[Any, Any] = given if isinstance(given, dict) else {}
    pairs = {
        (f, m): a
        for a, d in (c.get("native") or {}).items()
        if isinstance(d, dict)
        for f in d.get("formats") or []
        for m in d.get("models") or []
    }
    return {str(k): str(v) for k, v in runs.items()}, pairs


def training_overlap(
    bundle: Any, trajs: list[Trajectory], fmt: str | dict[str, str] | None = None
) -> dict[str, Any]:
    """Whether the scored runs overlap the model's training data: by content (a run's fingerprint is a
    training run's: the same run, whatever its folder or name), by the scaffold x model its files record
    (``fmt``, or per run its catalog run name's in a dict, and the native model names, against the training
    agents'), by agent identity (catalog scaffold
    x model, compared lower-cased without non-alphanumerics), by agent name or by run id.  Scores on such
    runs are in-sample: they overstate what the model does on a new agent."""
    tr = bundle.training or {}
    names = set(tr.get("agents") or {})
    ident, ident_source = training_identities(bundle)
    pairs = {
        (_norm(s), _norm(m)): a
        for a, d in ident.items()
        for s in d.get("scaffold", [])
        for m in d.get("model", [])
    }
    run_ids = set(tr.get("run_ids") or [])
    fps, native = _content(tr)
    agents: dict[str, Any] = {}
    for t in trajs:
        a = agents.setdefault(
            t.agent,
            {
                "runs": 0,
                "training_agents": set(),
                "by": set(),
                "run_ids_in_training": 0,
                "runs_in_training": 0,
            },
        )
        a["runs"] += 1
        if t.agent in names:
            a["by"].add("agent name")
            a["training_agents"].add(t.agent)
        key = (_norm(t.meta.get("scaffold")), _norm(t.meta.get("model")))
        if all(key) and key in pairs:
            a["by"].add("scaffold x model")
            a["training_agents"].add(pairs[key])
        # a mixed folder: per run
        f = fmt.get(str(t.meta.get("run", ""))) if isinstance(fmt, dict) else fmt
        for m in native_models(t) if f else []:
            if f and (f, m) in native:
                a["by"].add("scaffold x model in the files")
                a["training_agents"].add(native[(f, m)])
        if t.run_id in run_ids:
            a["run_ids_in_training"] += 1
            a["by"].add("run id")
        hit = fps.get(fingerprint(t)) if fps else None
        if hit is not None:
            a["runs_in_training"] += 1
            a["by"].add("content")
            a["training_agents"].add(hit)
    hits = {
        k: {
            "runs": v["runs"],
            "training_agents": sorted(v["training_agents"]),
            "by": sorted(v["by"]),
            "run_ids_in_training": v["run_ids_in_training"],
            "runs_in_training": v["runs_in_training"],
        }
        for k, v in agents.items()
        if v["by"]
    }
    out: dict[str, Any] = {
        "overlap": bool(hits),
        "agents": hits,
        "identity_source": ident_source,
        "run_ids_recorded": bool(run_ids),
        "content_checked": bool(fps),
        "warning": None,
    }
    if hits:
        parts = []
        for k, v in hits.items():
            same = (
                f" = training agent {', '.join(v['training_agents'])}"
                if v["training_agents"]
                else ""
            )
            runs = (
                f", {v['runs_in_training']}/{v['runs']} runs are training runs (same task and steps)"
                if v["runs_in_training"]
                else ""
            )
            ids = (
                f", {v['run_ids_in_training']}/{v['runs']} run ids in training"
                if v["run_ids_in_training"]
                else ""
            )
            parts.append(f"{k}{same} (by {', '.join(v['by'])}{runs}{ids})")
        same_runs = sum(max(v["runs_in_training"], v["run_ids_in_training"]) for v in hits.values())
        why = (
            f"{same_runs} of them are training runs themselves: their scores are in-sample"
            if same_runs
            else "no run is itself a training run, but the model was trained on the same agent: its scores are a known "
            "agent's"
        )
        out["warning"] = (
            "these runs overlap the model's training data: "
            + "; ".join(parts)
            + f". {why} and overstate "
            "accuracy on a new agent (use `earlyeval evaluate` for held-out numbers)."
        )
    return out

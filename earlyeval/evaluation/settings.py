"""A benchmark's evaluation settings (``EvalConfig``) from its catalog, below the pipeline so that
sweep, transfer and routing can read them without importing the application layer."""

from __future__ import annotations

from typing import Any

from earlyeval.config.catalog import load_catalog
from earlyeval.evaluation.evaluate import EvalConfig


def eval_config(bench: str, **overrides: Any) -> EvalConfig:
    """The benchmark's evaluation settings: catalog [settings] and families, then CLI overrides."""
    cat = load_catalog(bench)
    s = cat.settings
    cfg = EvalConfig(
        families=list(s.get("model_families", cat.families)),
        min_steps=int(s.get("min_steps", 10)),
        holdout_min_runs=int(s.get("holdout_min_runs", 100)),
        target_accuracy=float(s.get("target_accuracy", 0.95)),
        twin=str(s.get("twin", "mirror")),
        constraint=str(s.get("constraint", "recall")),
        inner_holdout=str(s.get("inner_holdout", "agent")),
        confidence=None if str(s.get("confidence", 0.9)).lower() == "none" else float(s.get("confidence", 0.9)),
        threshold_rule=str(s.get("threshold_rule", "worst-case")),
        risk_alpha=float(s.get("risk_alpha", 0.01)),
        risk_delta=float(s.get("risk_delta", 0.15)),
        risk=str(s.get("risk", "mass")),
        prior_guard=s.get("prior_guard", False) is True,
    )
    if "monotone" in s:
        cfg.monotone = dict(s["monotone"])
    if "peer_prior" in s:  # [settings.peer_prior]: PeerPriorFamily parameters (strength, counts)
        cfg.peer_params = dict(s["peer_prior"])
    for k, v in overrides.items():
        if v is not None:
            setattr(cfg, k, v)
    return cfg

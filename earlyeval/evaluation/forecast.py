"""Will it pay? What a new agent should expect of a trained model, told before anything is spent.

The forecast is the benchmark's own leave-one-agent-out: its large held-out agents pooled, each under its own fold's
thresholds (benchmark mode and the live default), with the spread over agents and the threshold rule's guarantee for
this number of agents. ``train`` writes it into the model directory and says it; ``score``, a pass and every adapter
log its sentence when they load the model; a model expected to halt below its target ships in shadow mode. The
forecast is itself checked: each held-out agent's realised numbers against the forecast a model that never saw it
would have made (its fold's inner units, pooled at its fold's thresholds). docs/monitor.md, "Will it pay".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from earlyeval.evaluation.blocks import pooled_block
from earlyeval.evaluation.evaluate import LoaoResult
from earlyeval.evaluation.loao_report import live_pair

KEYS = (
    "halted_accuracy",
    "steps_saved",
    "resolve_rate_shift_pp",
    "halted_fraction",
    "auroc_success",
)
WITHIN = 0.05  # how close a checked forecast must come to the realised halted accuracy and savings


def _numbers(b: dict[str, Any]) -> dict[str, Any]:
    return {k: b.get(k) for k in KEYS}


def spread(items: list[tuple[Any, dict[str, Any]]], cfg: Any, key: str) -> dict[str, float | None]:
    """min and max of ``key`` over the agents ``items`` ((RunSet, thresholds) each, its own block)."""
    vals = []
    for rs, th in items:
        b = pooled_block([(rs, th)], cfg)
        if b.get(key) is not None:
            vals.append(float(b[key]))
    return {"min": min(vals), "max": max(vals)} if vals else {"min": None, "max": None}


def wide(sp: dict[str, dict[str, float | None]], within: float = WITHIN) -> list[str]:
    """The quantities whose spread over agents is wider than +-``within``: a new agent's may be that far off."""
    return [
        k
        for k, v in sp.items()
        if v["min"] is not None
        and v["max"] is not None
        and v["max"] - v["min"] > 2 * within + 1e-12
    ]


def forecast(res: LoaoResult, cfg: Any) -> dict[str, Any]:
    """The forecast of a model trained like ``res``'s folds: benchmark mode and the live default pooled over the
    large held-out agents, the spread of halted accuracy and savings over them, the guarantee and a verdict."""
    if not res.holdout:
        return unknown_forecast("no agent large enough to hold out")
    items = [(res.sets[a], res.thresholds[a]) for a in res.holdout]
    both = pooled_block(items, cfg)
    live = pooled_block([(res.sets[a], live_pair(res, a)) for a in res.holdout], cfg)
    g = res.thresholds[res.holdout[0]].get("guarantee_per_side")
    target = float(cfg.target_accuracy)
    acc = both.get("halted_accuracy")
    saved = both.get("steps_saved") or 0.0
    weak_guarantee = g is not None and g > float(cfg.risk_delta) + 1e-12
    short = acc is not None and acc < target
    verdict = "no halts" if acc is None else ("below target" if short else "pays")
    out = {
        "agents": len(res.holdout),
        "benchmark_mode": _numbers(both),
        "live_failure_only": _numbers(live),
        "spread": (sp := {k: spread(items, cfg, k) for k in ("halted_accuracy", "steps_saved")}),
        "uncertain": wide(sp),
        "target_halted_accuracy": target,
        "guarantee_per_side": g,
        "guarantee_configured": float(cfg.risk_delta),
        "guarantee_weaker_than_configured": weak_guarantee,
        "verdict": verdict,
        "default_mode": "shadow" if (short or acc is None) else "halt",
    }
    out["sentence"] = sentence(out, saved)
    return out


def unknown_forecast(why: str) -> dict[str, Any]:
    """No forecast could be made: said, and the model ships in shadow mode (whether it pays is unknown)."""
    return {
        "agents": 0,
        "verdict": "unknown",
        "default_mode": "shadow",
        "sentence": f"WARNING: no forecast for a new agent ({why}): ships in shadow mode (decides, halts "
        "nothing) unless halting is turned on",
    }


def sentence(f: dict[str, Any], saved: float) -> str:
    """The one line train, score, a pass and the adapters say of the forecast."""
    b = f["benchmark_mode"]
    acc, shift = b.get("halted_accuracy"), b.get("resolve_rate_shift_pp") or 0.0
    g = f.get("guarantee_per_side")
    head = (
        f"forecast for a new agent (leave-one-agent-out over {f['agents']} agents): "
        + (
            "no run halted"
            if acc is None
            else f"{100 * acc:.1f} % halted accuracy, {100 * saved:.1f} % of steps saved, shift {shift:+.1f} pp"
        )
        + (
            f" (live failure-only: {100 * (f['live_failure_only'].get('steps_saved') or 0.0):.1f} % saved)"
        )
    )
    if g is not None:
        head += (
            f"; each side's error share above its alpha for at most {100 * g:.0f} % of new agents"
        )
    unsure = ""
    for k in f.get("uncertain") or []:
        lo, hi = f["spread"][k]["min"], f["spread"][k]["max"]
        what = "halted accuracy" if k == "halted_accuracy" else "steps saved"
        unsure += f"; {what} went from {100 * lo:.0f} to {100 * hi:.0f} % across agents: a new agent's may differ more"
    if f["verdict"] == "pays":
        return head + unsure + "."
    why = (
        "it would halt no run"
        if f["verdict"] == "no halts"
        else f"below the {100 * f['target_halted_accuracy']:.0f} % target"
    )
    warn = f"; {why}: ships in shadow mode (decides, halts nothing) unless halting is turned on"
    if f.get("guarantee_weaker_than_configured"):
        warn += f"; with {f['agents']} agents the guarantee is weaker than the configured {f['guarantee_configured']:g}"
    return "WARNING: " + head + unsure + warn + "."


def forecast_check(res: LoaoResult, cfg: Any, within: float = WITHIN) -> dict[str, Any]:
    """Per held-out agent: the forecast a model that never saw it would have made (its fold's inner units pooled
    at its fold's thresholds) against its realised halted accuracy and savings; within ``within`` or not."""
    out: dict[str, Any] = {}
    for a in res.holdout:
        inner = res.inner.get(a) or {}
        if not inner:
            continue
        th = res.thresholds[a]
        fc = pooled_block([(rs, th) for rs in inner.values()], cfg)
        got = pooled_block([(res.sets[a], th)], cfg)
        sp = {
            k: spread([(rs, th) for rs in inner.values()], cfg, k)
            for k in ("halted_accuracy", "steps_saved")
        }
        row: dict[str, Any] = {"forecast": _numbers(fc), "realised": _numbers(got), "spread": sp}
        for k in ("halted_accuracy", "steps_saved"):
            f, r = fc.get(k), got.get(k)
            row[f"{k}_gap"] = None if f is None or r is None else float(r - f)
        gaps = [
            abs(row[f"{k}_gap"])
            for k in ("halted_accuracy", "steps_saved")
            if row[f"{k}_gap"] is not None
        ]
        row["within"] = bool(gaps) and max(gaps) <= within + 1e-12
        # a forecast whose inner agents spread wider than +-within said so (its sentence warns): not a miss
        row["warned"] = sorted(wide(sp, within))
        row["within_or_warned"] = bool(gaps) and all(
            row[f"{k}_gap"] is None or abs(row[f"{k}_gap"]) <= within + 1e-12 or k in row["warned"]
            for k in ("halted_accuracy", "steps_saved")
        )
        out[a] = row
    checked = [r for r in out.values() if any(r[f"{k}_gap"] is not None for k in ("steps_saved",))]
    return {
        "within": within,
        "agents": out,
        "agents_within": sum(r["within"] for r in checked),
        "agents_within_or_warned": sum(r["within_or_warned"] for r in checked),
        "agents_checked": len(checked),
        "max_abs_gap": {
            k: float(
                np.nanmax([abs(r[f"{k}_gap"]) for r in out.values() if r[f"{k}_gap"] is not None])
            )
            if any(r[f"{k}_gap"] is not None for r in out.values())
            else None
            for k in ("halted_accuracy", "steps_saved")
        },
    }

"""A scored run's tokens and dollars: what it spent as it was and what the monitor's halt saved, per run
(score.json's ``usage``) and summed over the runs whose usage is known (``savings``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from earlyeval.config.prices import PriceError, run_cost
from earlyeval.core.trajectory import Trajectory


def usage_of(traj: Trajectory, halt_t: int | None) -> dict[str, Any]:
    """Tokens and dollars the run spent as it was, and what halting after ``halt_t`` steps saves.

    Tokens are known for a dimension only when every step has a count; dollars come from
    ``prices.run_cost`` (per-step costs, or the instance total pro rata); unknown stays None."""
    T = len(traj.steps)
    t = T if not halt_t else int(halt_t)
    out: dict[str, Any] = {}
    for dim in ("input_tokens", "output_tokens"):
        vals = [getattr(s, dim) for s in traj.steps]
        if T and all(v is not None for v in vals):
            tot, spent = float(sum(vals)), float(sum(vals[:t]))
            out[dim] = {"total": tot, "spent": spent, "saved": tot - spent}
        else:
            out[dim] = None
    try:
        c = run_cost(traj)
        out["cost_usd"] = {
            "total": c.total,
            "spent": c.upto(t),
            "saved": c.total - c.upto(t),
            "source": c.source,
        }
    except PriceError:
        out["cost_usd"] = None
    return out


def savings_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals over the runs whose usage is known, and how many runs that is (None when no run has it)."""
    out: dict[str, Any] = {"runs": len(records)}
    for dim in ("input_tokens", "output_tokens", "cost_usd"):
        known = [r["usage"][dim] for r in records if r["usage"].get(dim) is not None]
        blk: dict[str, Any] = {"runs_known": len(known)}
        if known:
            tot, saved = sum(k["total"] for k in known), sum(k["saved"] for k in known)
            blk.update(
                total=tot,
                spent=tot - saved,
                saved=saved,
                saved_fraction=saved / tot if tot > 0 else None,
            )
            if dim == "cost_usd":
                blk["sources"] = dict(Counter(k["source"] for k in known))
        else:
            blk.update(total=None, spent=None, saved=None, saved_fraction=None)
        out[dim] = blk
    return out

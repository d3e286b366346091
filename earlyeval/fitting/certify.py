"""Certifying halting thresholds on K labelled runs of one new agent (the warm start's rule).

A warm start may make the label-free pair bolder only as far as exact binomial tests in fixed sequences certify
it, and more cautious only when the runs reject it, so a few lucky runs cannot move the thresholds. The tests,
their levels, the guarantee and its price: docs/monitor.md, "Warm start" (the certificate in detail).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from earlyeval.fitting.metrics import NEVER, RunSet
from earlyeval.model.policy import FAILURE, SUCCESS, first_halt_grid

Pair = tuple[float, float]


def lower_tail(errors: int, n: int, eps: float) -> float:
    """P(Bin(n, eps) <= errors): the exact p-value of "error rate >= eps" (1.0 without a trial)."""
    from scipy.stats import (
        binom,  # here, not at the top: the live Monitor imports this module (as metrics.wilson_lower)
    )

    return 1.0 if n <= 0 else float(binom.cdf(errors, n, eps))


def upper_tail(errors: int, n: int, eps: float) -> float:
    """P(Bin(n, eps) >= errors): the exact p-value of "error rate <= eps" (1.0 without a trial or error)."""
    from scipy.stats import binom

    return 1.0 if n <= 0 or errors <= 0 else float(binom.sf(errors - 1, n, eps))


def min_runs_to_certify(target: float, delta: float) -> int:
    """Runs of one outcome, all without error, that certify that side at all: the smallest n with target^n <= delta."""
    return int(np.ceil(np.log(delta) / np.log(target)))


def warm_path(taus: Sequence[float], base: Pair) -> tuple[list[Pair], list[Pair]]:
    """(bolder, cautious): the fixed sequences the warm start tests, both starting next to ``base``.

    Bolder: step k takes, on each side, the k-th grid value below the base's (the lowest once exhausted),
    until both sides are at the grid's bottom.  Cautious: the k-th grid value above, up to NEVER."""
    grid = np.unique(np.asarray(list(taus) + [NEVER], dtype=np.float64))
    below = [grid[grid < b - 1e-12][::-1] for b in base]
    above = [grid[grid > b + 1e-12] for b in base]

    def walk(steps: list[np.ndarray]) -> list[Pair]:
        out: list[Pair] = []
        for k in range(max(len(s) for s in steps)):
            pair = tuple(
                float(s[min(k, len(s) - 1)]) if len(s) else float(b) for s, b in zip(steps, base)
            )
            if not out or pair != out[-1]:
                out.append(pair)  # type: ignore[arg-type]
        return out

    return walk(below), walk(above)


def error_counts(rs: RunSet, pairs: Sequence[Pair], min_t: int = 1) -> list[dict[str, int]]:
    """Per pair, on labelled runs: successes and how many were halted as failures, failures and how many
    were halted as successes, and the runs halted (one ``policy.first_halt_grid`` call for every pair)."""
    pos, neg = rs.y == 1, rs.y == 0
    base = {"n_pos": int(pos.sum()), "n_neg": int(neg.sum())}
    if len(rs) == 0:
        return [{**base, "e_s": 0, "e_f": 0, "halted": 0} for _ in pairs]
    ts, tf = sorted({p[0] for p in pairs}), sorted({p[1] for p in pairs})
    t, out = first_halt_grid(*rs.halt_probs(), ts, tf, min_t)
    halted = t > 0
    e_s = (pos[:, None, None] & halted & (out == FAILURE)).sum(0)
    e_f = (neg[:, None, None] & halted & (out == SUCCESS)).sum(0)
    n_h = halted.sum(0)
    res = []
    for a, b in pairs:
        i, j = ts.index(a), tf.index(b)
        res.append({**base, "e_s": int(e_s[i, j]), "e_f": int(e_f[i, j]), "halted": int(n_h[i, j])})
    return res


def _sides(c: dict[str, int], constraint: str) -> list[tuple[int, int]]:
    """(errors, trials) per side the constraint puts a bound on."""
    if constraint == "recall":
        return [(c["e_s"], c["n_pos"]), (c["e_f"], c["n_neg"])]
    if constraint == "accuracy":
        return [(c["e_s"] + c["e_f"], c["n_pos"] + c["n_neg"])]
    raise ValueError(f"constraint must be 'accuracy' or 'recall', not {constraint!r}")


def certify_pvalue(c: dict[str, int], target: float, constraint: str = "recall") -> float:
    """p-value of "the pair misses the target" (intersection-union: the largest side p-value)."""
    return max(lower_tail(e, n, 1.0 - target) for e, n in _sides(c, constraint))


def veto_pvalue(c: dict[str, int], target: float, constraint: str = "recall") -> float:
    """p-value of "the pair meets the target": the smallest side p-value, Sidak-corrected over the sides
    (independent given the outcomes, see ``side_level``)."""
    sides = _sides(c, constraint)
    return 1.0 - (1.0 - min(upper_tail(e, n, 1.0 - target) for e, n in sides)) ** len(sides)


def side_level(delta: float) -> float:
    """Each side's level: the sides' tests read disjoint runs (successes, failures), independent given the
    outcomes, so (1 - a)^2 = 1 - delta (Sidak) holds both at once with probability 1 - delta."""
    return 1.0 - float(np.sqrt(1.0 - delta))


def side_path(taus: Sequence[float], base: Pair, side: int) -> list[Pair]:
    """Pairs bolder than ``base`` on one side only (0: tau_s, 1: tau_f), one grid step at a time, the other side fixed."""
    grid = np.unique(np.asarray(list(taus) + [NEVER], dtype=np.float64))
    return [
        ((float(v), base[1]) if side == 0 else (base[0], float(v)))
        for v in grid[grid < base[side] - 1e-12][::-1]
    ]


def certify(
    warm: RunSet,
    base: Pair,
    taus: Sequence[float],
    target: float,
    delta: float,
    constraint: str = "recall",
    min_t: int = 1,
) -> dict[str, Any]:
    """The warm start's pair on K labelled runs (module docstring): bolder only if certified, more cautious
    only if the base is shown to miss the target; otherwise the base.  Reads ``warm``'s labels only."""
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1), not {delta}")
    base = (float(base[0]), float(base[1]))
    bolder, cautious = warm_path(taus, base)
    sides = [side_path(taus, base, 0), side_path(taus, base, 1)] if constraint == "recall" else []
    every = list(dict.fromkeys([base, *bolder, *cautious, *(p for s in sides for p in s)]))
    counts = dict(zip(every, error_counts(warm, every, min_t)))
    eps = 1.0 - target
    tests: list[dict[str, Any]] = []

    def record(pair: Pair, kind: str, p: float) -> float:
        tests.append({"pair": list(pair), "test": kind, "p_value": p, **counts[pair]})
        return p

    chosen, decision = base, "kept"
    if record(base, "veto", veto_pvalue(counts[base], target, constraint)) <= delta:
        decision = "raised"
        chosen = cautious[-1] if cautious else base
        for pair in cautious:
            if record(pair, "veto", veto_pvalue(counts[pair], target, constraint)) > delta:
                chosen = pair
                break
    elif constraint == "recall":
        # one fixed sequence per side, each at side_level(delta): lowering tau_f (tau_s) can only add successes
        # halted as failures (failures halted as successes), per run, so each side is certified on its own
        out, level = list(base), side_level(delta)
        for side, (e_key, n_key) in ((1, ("e_s", "n_pos")), (0, ("e_f", "n_neg"))):
            for pair in sides[side]:
                c = counts[pair]
                if (
                    record(
                        pair,
                        f"certify {'tau_f' if side else 'tau_s'}",
                        lower_tail(c[e_key], c[n_key], eps),
                    )
                    > level
                ):
                    break
                out[side] = pair[side]
        chosen = (out[0], out[1])
        decision = "lowered" if chosen != base else "kept"
    else:
        for pair in bolder:
            if record(pair, "certify", certify_pvalue(counts[pair], target, constraint)) > delta:
                break
            chosen, decision = pair, "lowered"
    n_pos, n_neg = int((warm.y == 1).sum()), int((warm.y == 0).sum())
    what = "success and failure recall" if constraint == "recall" else "outcome accuracy"
    return {
        "success": chosen[0],
        "failure": chosen[1],
        "decision": decision,
        "base": list(base),
        "target_accuracy": target,
        "delta": delta,
        "constraint": constraint,
        "n_pos": n_pos,
        "n_neg": n_neg,
        "min_runs_per_side_to_certify": min_runs_to_certify(
            target, side_level(delta) if constraint == "recall" else delta
        ),
        "tests": tests,
        "guarantee": GUARANTEE[constraint].format(
            conf=1 - delta, k=len(warm), target=target, delta=delta, what=what
        ),
    }


GUARANTEE = {
    "recall": (
        "with probability >= {conf:g} over the {k} warm runs (i.i.d. from the agent's run distribution): if tau_f "
        "is lowered, success recall >= {target:g}; if tau_s is lowered, failure recall >= {target:g}; a side not "
        "lowered keeps at least the label-free pair's recall (exact binomial tails, one fixed sequence per side "
        "at 1 - sqrt(1 - {delta:g}) each); a label-free pair meeting the target is raised with probability <= {delta:g}"
    ),
    "accuracy": (
        "with probability >= {conf:g} over the {k} warm runs (i.i.d. from the agent's run distribution), a pair "
        "bolder than the label-free one has outcome accuracy >= {target:g} (exact binomial tail, fixed-sequence "
        "testing from the label-free pair); a label-free pair meeting the target is raised with probability <= {delta:g}"
    ),
}

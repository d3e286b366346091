"""The certification of a benchmark pass (issue 28 item 3): the audit sample, the halts an audited run would
have had, the anytime-valid choice of thresholds from graded audit runs, the pass order and its simulated
workers.  Pure functions of their arguments, shared by the live ``Pass`` (``live.benchpass``), ``score --pass``
and the evaluation's pass simulator.  The guarantee: docs/monitor.md, "A benchmark pass".
"""

from __future__ import annotations

import hashlib
import heapq
from typing import Any, Callable, Mapping

import numpy as np

from earlyeval.core.decision import NEVER
from earlyeval.model.anytime import cs_bounds, cs_lower_above, cs_upper_at_most
from earlyeval.model.policy import CONTINUE, SUCCESS, step_outcome

# the most simulated workers a pass may name (more than its runs change nothing: each run starts at 0)
MAX_WORKERS = 1_000_000
# the defaults: audited share, guarantee level, error bound
AUDIT_SHARE, ALPHA, MAX_ERROR = 0.10, 0.05, 0.03
# candidate taus per side, fixed before any label (with the label-free tau added): bolder and more cautious
GRID = (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995)


def audited(seed: int, run_id: str, share: float) -> bool:
    """Whether ``run_id`` is in the audit sample: a hash of (seed, run_id) only, never of a prediction or order."""
    h = hashlib.sha256(f"{int(seed)}:{run_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64 < share


def would_halt(probs: list[list[float] | None], ts: float, tf: float, min_t: int) -> str | None:
    """The outcome ("success"/"failure") the rule would halt an audited run with at (ts, tf), or None.  ``probs``
    holds (p_s, p_f) per prefix t = 1, 2, ...; None where the run could not halt (context, fail-open)."""
    for t, pp in enumerate(probs, start=1):
        if pp is None:
            continue
        code = step_outcome(pp[0], pp[1], ts, tf, t, min_t)
        if code != CONTINUE:
            return "success" if code == SUCCESS else "failure"
    return None


def candidate_taus(base: tuple[float, float]) -> list[float]:
    """The taus each side may be certified at: GRID plus the label-free pair, fixed before any label."""
    return sorted(set(GRID) | {base[0], base[1]} - {NEVER})


def run_errors(
    probs: list[list[float] | None],
    outcome: int,
    base: tuple[float, float],
    min_t: int,
    taus: list[float],
) -> dict[tuple[int, float], tuple[int, int]]:
    """One graded audit run's (error, halted) per (side, tau): side 0 moves tau_s (tau_f at the base), side 1
    tau_f.  Counts over runs add up, so a pass certifies incrementally (``certify_counts``)."""
    out = {}
    for i, side in enumerate(("success", "failure")):
        for tau in taus:
            ts, tf = (tau, base[1]) if i == 0 else (base[0], tau)
            h = would_halt(probs, ts, tf, min_t)
            out[(i, tau)] = (
                int(h == side and int(outcome) != (1 if side == "success" else 0)),
                int(h == side),
            )
    return out


def certify_counts(
    counts: Mapping[tuple[int, float], tuple[int, int]],
    n_audit: int,
    base: tuple[float, float],
    alpha: float,
    max_error: float,
) -> dict[str, Any]:
    """The certified (tau_s, tau_f) from summed ``run_errors`` counts, and the bounds behind it.

    Per side and per candidate tau, the confidence sequence at level alpha / (2 * candidates) holds for every
    tau, both sides and every time at once with probability >= 1 - alpha (union bound), for audit runs i.i.d.
    from the pass's run distribution."""
    out: dict[str, Any] = {"n_audited_graded": n_audit, "alpha": alpha, "max_error": max_error}
    taus = candidate_taus(base)
    a = alpha / (2 * len(taus))
    pair = list(base)
    for i, side in enumerate(("success", "failure")):
        en = {tau: counts.get((i, tau), (0, 0)) for tau in taus}
        # e / n > max_error puts the upper bound above it too: only the others need the tail sum
        ok = [
            t
            for t in taus
            if en[t][1] > 0
            and en[t][0] <= max_error * en[t][1]
            and cs_upper_at_most(en[t][0], en[t][1], a, max_error)
        ]
        b = base[i]
        if (
            b < NEVER and b in en and cs_lower_above(en[b][0], en[b][1], a, max_error)
        ):  # label-free tau rejected
            up = [t for t in ok if t > b]
            pair[i] = min(up) if up else NEVER
        elif ok and min(ok) < b:  # certified bolder
            pair[i] = min(ok)
        shown = {t: [*en[t], *cs_bounds(en[t][0], en[t][1], a)] for t in {b, pair[i]} if t in en}
        out[side] = {
            "tau": pair[i],
            "counts": {f"{t:g}": list(v) for t, v in en.items()},
            "bounds": {f"{t:g}": v for t, v in shown.items()},
        }
    out["pair"] = pair
    return out


def certify_pass(
    audit: list[dict[str, Any]],
    base: tuple[float, float],
    min_t: int,
    alpha: float,
    max_error: float,
) -> dict[str, Any]:
    """``certify_counts`` over the graded audit runs (each a record with ``probs`` and ``outcome``)."""
    taus = candidate_taus(base)
    counts: dict[tuple[int, float], tuple[int, int]] = {}
    for r in audit:
        for k, (e, n) in run_errors(r["probs"], r["outcome"], base, min_t, taus).items():
            e0, n0 = counts.get(k, (0, 0))
            counts[k] = (e0 + e, n0 + n)
    return certify_counts(counts, len(audit), base, alpha, max_error)


def pass_order(run_ids: list[str], seed: int) -> list[int]:
    """Indices into ``run_ids`` in pass order: sorted by run id, then shuffled by numpy ``default_rng(seed)``
    (the order ``score --pass`` replays and the evaluation's pass simulator draws)."""
    by_id = sorted(range(len(run_ids)), key=lambda i: (run_ids[i], i))
    return [by_id[int(k)] for k in np.random.default_rng(seed).permutation(len(by_id))]


def run_on_workers(
    order: list[int],
    workers: int,
    run: Callable[[int, int, int], int],
    deliver: Callable[[int], None],
) -> None:
    """Runs in ``order`` on ``workers`` simulated workers, time counted in steps.  A run starts when a worker
    frees up, after every run finished at or before then is delivered (``deliver(i)``); ``run(i, k, start)``
    plays run i (the k-th started) and returns its duration.  What run i can read was delivered before it."""
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
        raise ValueError(f"--pass-workers {workers!r}: a number of workers in [1, {MAX_WORKERS}]")
    # a worker past the number of runs never gets one: the heap holds at most one per run, whatever W is
    free = [(0, w) for w in range(min(workers, max(len(order), 1)))]  # (time it frees up, worker)
    done: list[
        tuple[int, int, int]
    ] = []  # (finish time, start order, run): the events not yet delivered
    for k, i in enumerate(order):
        start, w = heapq.heappop(free)
        while done and done[0][0] <= start:
            deliver(heapq.heappop(done)[2])
        dur = int(run(i, k, start))
        heapq.heappush(done, (start + dur, k, i))
        heapq.heappush(free, (start + dur, w))
    while done:
        deliver(heapq.heappop(done)[2])

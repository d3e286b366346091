"""The pass simulator (issue 28 item 5): each held-out agent's runs replayed as benchmark passes.

A held-out agent's predictions come from its leave-one-agent-out fold (a model without it); its runs arrive in
seeded orders (``benchpass.pass_order``) on W simulated workers (``benchpass.run_on_workers``, time in steps).
A seeded share of the runs (``benchpass.audited``, drawn from (seed, run id) before any prediction) is never
halted and counts at full cost; each graded audit run re-certifies the thresholds with the live Pass's rule
(``benchpass.run_errors`` / ``certify_counts``), starting from the fold's label-free pair.  Run i is halted at
the pair in force when it started, so it reads only runs finished before then.  docs/evaluation.md.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from earlyeval.evaluation.blocks import dollars_at
from earlyeval.fitting.metrics import RunSet, outcome_metrics
from earlyeval.live.benchpass import (
    ALPHA,
    AUDIT_SHARE,
    MAX_ERROR,
    audited,
    candidate_taus,
    certify_counts,
    pass_order,
    run_errors,
    run_on_workers,
)
from earlyeval.live.pass_certify import would_halt
from earlyeval.model.policy import NEVER, first_halt, first_halt_grid, halting_pair
from earlyeval.model.shift_test import ShiftTest

SEEDS = (0, 1, 2, 3, 4)
WORKERS = (1, 8, 32)
KEYS = (
    "halted_fraction",
    "halted_accuracy",
    "outcome_accuracy",
    "steps_saved",
    "steps_saved_task_skip",
    "steps_saved_in_run",
    "resolve_rate_shift_pp",
    "input_tokens_saved",
    "output_tokens_saved",
)
QUANTILES = 5  # savings by pass position: the runs in each fifth of the order


Repredict = Callable[[int, list[int]], "tuple[np.ndarray, np.ndarray] | None"]


def _pair_in_force(
    state: dict[str, Any], base: tuple[float, float], alpha: float, max_error: float, halt_on: str
) -> list[float]:
    """The pair the audit counts so far certify (``certify_counts``), with the side the shift test fired on off,
    as the live Pass derives it (``pass_state.Certifier.certified``)."""
    cert = certify_counts(state["counts"], state["n_audit"], base, alpha, max_error)
    pair = list(halting_pair(*cert["pair"], halt_on))
    fired = state["shift"].rejected
    if fired is not None:  # that side is off for the rest of the pass
        pair[0 if fired == "over" else 1] = NEVER
    return pair


def simulate_pass(
    rs: RunSet,
    base: tuple[float, float],
    min_t: int,
    seed: int,
    workers: int,
    audit_share: float = AUDIT_SHARE,
    alpha: float = ALPHA,
    max_error: float = MAX_ERROR,
    repredict: Repredict | None = None,
    halt_on: str = "both",
) -> dict[str, Any]:
    """One pass of ``rs``'s runs: per run the halting prefix (0 = not halted), the recorded outcome, whether it
    was audited, the pair it ran under and how many runs had finished when it started; the certification history.

    ``repredict(i, refs)``: run i's (p_s, p_f) with the pass features read against ``refs``, the audited runs
    delivered before it started (None: ``rs``'s own, the cold start).  ``halt_on``: a side it turns off is NEVER
    from the start and stays off, as in the live Pass (the evaluation's passes halt on both)."""
    base = halting_pair(*base, halt_on)
    n = len(rs)
    taus = candidate_taus(base)
    grid = [*taus, NEVER]
    hp_s, hp_f = rs.halt_probs()  # the gated view: what the rule may halt on
    t_grid, o_grid = first_halt_grid(hp_s, hp_f, grid, grid, min_t)
    col = {t: j for j, t in enumerate(grid)}
    aud = np.asarray([audited(seed, r, audit_share) for r in rs.run_ids], dtype=bool)
    t_halt = np.zeros(n, dtype=np.int64)
    pred = np.full(n, -1, dtype=np.int64)
    used = np.zeros((n, 2))
    finished_at_start = np.zeros(n, dtype=np.int64)
    position = np.zeros(n, dtype=np.int64)
    start_at = np.zeros(n, dtype=np.int64)
    state: dict[str, Any] = {
        "pair": [float(base[0]), float(base[1])],
        "counts": {},
        "n_audit": 0,
        "finished": 0,
        "history": [],
        "refs": [],
        "shift": ShiftTest(),  # the live Pass's shift test (pass_state.Certifier.certified), run alike
    }
    probs_of: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    with_refs = np.zeros(n, dtype=bool)

    def run(i: int, k: int, start: int) -> int:
        ts, tf = state["pair"]
        used[i] = (ts, tf)
        finished_at_start[i], position[i], start_at[i] = state["finished"], k, start
        got = repredict(i, list(state["refs"])) if repredict is not None else None
        got = rs.gated_probs(i, *got) if got is not None else None
        probs_of[i] = got if got is not None else (hp_s[i], hp_f[i])
        with_refs[i] = got is not None
        if not aud[i] and got is None:
            js, jf = col[min(ts, NEVER)], col[min(tf, NEVER)]
            t_halt[i], pred[i] = t_grid[i, js, jf], o_grid[i, js, jf]
        elif not aud[i]:
            th, o = first_halt([got[0]], [got[1]], min(ts, NEVER), min(tf, NEVER), min_t)
            t_halt[i], pred[i] = th[0], o[0]
        return int(t_halt[i]) if t_halt[i] > 0 else int(rs.T[i])

    def deliver(i: int) -> None:
        state["finished"] += 1
        if not aud[i]:
            return
        state["refs"].append(i)
        probs = [[float(a), float(b)] for a, b in zip(*probs_of[i])]
        # judged at the pair in force when it is graded, before its own counts: as the live Pass re-derives it
        state["shift"].update(would_halt(probs, *state["pair"], min_t), int(rs.y[i]))
        for key, (e, m) in run_errors(probs, int(rs.y[i]), base, min_t, taus).items():
            e0, m0 = state["counts"].get(key, (0, 0))
            state["counts"][key] = (e0 + e, m0 + m)
        state["n_audit"] += 1
        pair = _pair_in_force(state, base, alpha, max_error, halt_on)
        if pair != state["pair"]:
            state["history"].append(
                {
                    "n_finished": state["finished"],
                    "n_audited_graded": state["n_audit"],
                    "pair": pair,
                }
            )
        state["pair"] = [float(pair[0]), float(pair[1])]

    run_on_workers(pass_order(list(rs.run_ids), seed), workers, run, deliver)
    return {
        "t_halt": t_halt,
        "pred": pred,
        "audited": aud,
        "thresholds": used,
        "finished_at_start": finished_at_start,
        "position": position,
        "start": start_at,
        "finish": start_at + np.where(t_halt > 0, t_halt, rs.T),
        "history": state["history"],
        "final_pair": state["pair"],
        "with_reference": with_refs,
    }


def pass_metrics(
    rs: RunSet, sim: dict[str, Any], costs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Policy metrics of one simulated pass over every run (audited runs at full cost), and by pass position."""
    m = outcome_metrics(rs.y, rs.T, sim["t_halt"], sim["pred"], rs.in_tokens, rs.out_tokens)
    out = {k: m.get(k) for k in KEYS}
    out["audited_share"] = float(np.mean(sim["audited"])) if len(rs) else None
    out["with_reference_share"] = float(np.mean(sim["with_reference"])) if len(rs) else None
    out["threshold_moves"] = len(sim["history"])
    out["final_pair"] = list(sim["final_pair"])
    if costs is not None:
        out["usd_saved_share"] = dollars_at(rs, costs, sim["t_halt"])["usd_saved_share"]
    by_pos = []
    for q in np.array_split(np.argsort(sim["position"], kind="stable"), QUANTILES):
        saved = np.where(sim["t_halt"][q] > 0, rs.T[q] - sim["t_halt"][q], 0).sum()
        by_pos.append(float(saved / rs.T[q].sum()) if len(q) and rs.T[q].sum() > 0 else None)
    out["steps_saved_by_fifth_of_pass"] = by_pos
    return out


def _mean(draws: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in keys:
        vals = [d[k] for d in draws if d.get(k) is not None]
        out[k] = float(np.mean(vals)) if vals else None
        if k == "steps_saved" and vals:
            out["steps_saved_std"] = float(np.std(vals))
    return out


def pass_block(
    rs: RunSet,
    base: tuple[float, float],
    min_t: int,
    costs: dict[str, Any] | None = None,
    seeds: tuple[int, ...] = SEEDS,
    workers: tuple[int, ...] = WORKERS,
    audit_share: float = AUDIT_SHARE,
    repredict: Repredict | None = None,
) -> dict[str, Any]:
    """One agent's passes: per W, the metrics averaged over ``seeds`` (the order and the audit draw both);
    ``repredict`` as in ``simulate_pass`` (None: every run cold, the static predictions)."""
    out: dict[str, Any] = {
        "seeds": list(seeds),
        "audit_share": audit_share,
        "label_free": list(base),
        "pass_features": repredict is not None,
    }
    for w in workers:
        draws = [
            pass_metrics(
                rs, simulate_pass(rs, base, min_t, s, w, audit_share, repredict=repredict), costs
            )
            for s in seeds
        ]
        blk = _mean(draws, (*KEYS, "audited_share", "with_reference_share", "usd_saved_share"))
        blk["threshold_moves"] = [d["threshold_moves"] for d in draws]
        blk["final_pairs"] = [d["final_pair"] for d in draws]
        fifths = np.asarray(
            [[np.nan if v is None else v for v in d["steps_saved_by_fifth_of_pass"]] for d in draws]
        )
        blk["steps_saved_by_fifth_of_pass"] = [
            None if np.all(np.isnan(c)) else float(np.nanmean(c)) for c in fifths.T
        ]
        out[f"W={w}"] = blk
    return out


def pass_pooled(
    agents: dict[str, dict[str, Any]], sets: dict[str, RunSet], holdout: list[str]
) -> dict[str, Any]:
    """The pass blocks pooled over the held-out agents: savings weighted by steps, halted accuracy by halted runs
    (the seed-averaged halted share), the rest by runs."""

    def weight(a: str, w: str, k: str) -> float:
        if k.startswith(("steps_saved", "input", "output")):
            return float(sets[a].T.sum())
        if k == "halted_accuracy":  # over the halted runs, as the static pooled block counts it
            return len(sets[a]) * (agents[a]["pass"][w].get("halted_fraction") or 0.0)
        return float(len(sets[a]))

    out: dict[str, Any] = {}
    keys = next((list(b["pass"]) for a, b in agents.items() if a in holdout and "pass" in b), [])
    for w in [k for k in keys if k.startswith("W=")]:
        blk: dict[str, Any] = {}
        for k in (*KEYS, "audited_share", "with_reference_share"):
            v = np.asarray(
                [
                    np.nan if agents[a]["pass"][w].get(k) is None else agents[a]["pass"][w][k]
                    for a in holdout
                ]
            )
            wt = np.asarray([weight(a, w, k) for a in holdout])
            ok = ~np.isnan(v)
            blk[k] = float(np.sum(v[ok] * wt[ok]) / np.sum(wt[ok])) if ok.any() else None
        out[w] = blk
    return out

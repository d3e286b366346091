"""A plain re-computation of a loao.json agent block, independent of earlyeval.fitting.metrics/policy.

Per-step loops and pair counting, written from the documented rule (earlyeval/model/policy.py docstring)
and the metric definitions (README): a report's numbers are checked against it, not only its keys.
"""

from __future__ import annotations

import math

import numpy as np


def plain_halt(
    p_s, p_f, tau_s: float, tau_f: float, min_t: int, gates=None, task_skips: bool = False
) -> tuple[int, int]:
    """(t_halt, predicted) of one run: the first prefix t >= min_t with p_s >= tau_s or p_f >= tau_f; 0, -1 if none.
    With ``gates`` (bit 1: an action read, bit 2: the run's own evidence): a prefix before any action, or t = 1,
    halts on neither side unless ``task_skips``; the success side only where bit 2 is set."""
    for t in range(1, len(p_s) + 1):
        if t < min_t:
            continue
        g = 3 if gates is None else int(gates[t - 1])
        task_level = t == 1 or not g & 1
        if task_level and not task_skips:
            continue
        s, f = p_s[t - 1] >= tau_s, p_f[t - 1] >= tau_f  # NaN compares False: never crosses
        s = s and bool(g & 2)
        if s or f:
            return t, int(s and (not f or p_s[t - 1] - tau_s >= p_f[t - 1] - tau_f))
    return 0, -1


def plain_auroc(y, p, w) -> float | None:
    """Weighted AUROC by pair counting: P(score of a positive > score of a negative), ties count 1/2."""
    y, p, w = map(np.asarray, (y, p, w))
    pos, neg = y == 1, y == 0
    if not pos.any() or not neg.any():
        return None
    wp, wn = w[pos], w[neg]
    gt = (p[pos][:, None] > p[neg][None, :]) + 0.5 * (p[pos][:, None] == p[neg][None, :])
    return float((wp[:, None] * wn[None, :] * gt).sum() / (wp.sum() * wn.sum()))


def plain_tokens_saved(tokens, halts) -> float | None:
    tot = saved = 0.0
    known = False
    for tok, h in zip(tokens, halts):
        if tok is None or len(tok) == 0 or any(math.isnan(x) for x in tok):
            continue
        known = True
        tot += float(sum(tok))
        saved += float(sum(tok[h:])) if h > 0 else 0.0
    return saved / tot if known and tot > 0 else None


def plain_block(rs, tau_s: float, tau_f: float, min_t: int) -> dict:
    """The headline metrics of one RunSet under (tau_s, tau_f), by hand."""
    gates = rs.gates or [None] * len(rs.p_s)
    halts = [
        plain_halt(a, b, tau_s, tau_f, min_t, g, rs.task_skips)
        for a, b, g in zip(rs.p_s, rs.p_f, gates)
    ]
    y, T = [int(v) for v in rs.y], [int(v) for v in rs.T]
    n = len(y)
    halted = [h > 0 for h, _ in halts]
    recorded = [p if h > 0 else yy for (h, p), yy in zip(halts, y)]
    correct = [r == yy for r, yy in zip(recorded, y)]
    npos, nneg = sum(y), n - sum(y)
    sr = sum(c for c, yy in zip(correct, y) if yy == 1) / npos if npos else None
    fr = sum(c for c, yy in zip(correct, y) if yy == 0) / nneg if nneg else None
    saved = [T[i] - halts[i][0] if halted[i] else 0 for i in range(n)]
    skip = [halted[i] and halts[i][0] <= 1 for i in range(n)]
    ys, ps, pf, ws = [], [], [], []
    for yy, a, b in zip(y, rs.p_s, rs.p_f):
        for k in range(len(a)):  # every prefix t < T, each run weighing 1 in total
            ys.append(yy), ps.append(a[k]), pf.append(b[k]), ws.append(1.0 / len(a))
    return {
        "n_runs": n,
        "resolve_rate": sum(y) / n,
        "halted_fraction": sum(halted) / n,
        "halted_accuracy": (sum(c for c, h in zip(correct, halted) if h) / sum(halted))
        if any(halted)
        else None,
        "outcome_accuracy": sum(correct) / n,
        "success_recall": sr,
        "failure_recall": fr,
        "economic_consistency": None if sr is None or fr is None else min(sr, fr),
        "steps_saved": sum(saved) / sum(T),
        "steps_saved_task_skip": sum(s for s, k in zip(saved, skip) if k) / sum(T),
        "steps_saved_in_run": sum(s for s, k in zip(saved, skip) if not k) / sum(T),
        "input_tokens_saved": plain_tokens_saved(rs.in_tokens, [h for h, _ in halts])
        if rs.in_tokens
        else None,
        "predicted_resolve_rate": sum(recorded) / n,
        "resolve_rate_shift_pp": 100.0 * (sum(recorded) - sum(y)) / n,
        "halted_as_success": sum(1 for h, p in halts if h > 0 and p == 1),
        "halted_as_failure": sum(1 for h, p in halts if h > 0 and p == 0),
        "auroc_success": plain_auroc(ys, ps, ws),
        "auroc_failure": plain_auroc([1 - v for v in ys], pf, ws),
        "total_steps": sum(T),
    }


def plain_step_cap(rs, k: int) -> dict:
    """The step-cap baseline: every run longer than k halted after step k as a failure."""
    y, T = [int(v) for v in rs.y], [int(v) for v in rs.T]
    n = len(y)
    halted = [t > k for t in T]
    recorded = [0 if h else yy for h, yy in zip(halted, y)]
    return {
        "halted_fraction": sum(halted) / n,
        "outcome_accuracy": sum(r == yy for r, yy in zip(recorded, y)) / n,
        "steps_saved": sum(t - k for t, h in zip(T, halted) if h) / sum(T),
    }


def assert_agent_block_values(blk: dict, rs, th: dict, oracle_th: dict, min_t: int) -> None:
    """Every headline number of a loao.json agent block (and of its oracle and step-cap baselines) equals the plain
    re-computation from the fold's predictions and thresholds."""
    assert blk["thresholds"] == {"success": th["success"], "failure": th["failure"]}
    for got, ref in (
        (blk, plain_block(rs, th["success"], th["failure"], min_t)),
        (blk["oracle"], plain_block(rs, oracle_th["success"], oracle_th["failure"], min_t)),
    ):
        for k, v in ref.items():
            assert got[k] == (None if v is None else _approx(v)), (k, got[k], v)
    for k in (20, 30, 40):
        ref = plain_step_cap(rs, k)
        for key, v in ref.items():
            assert blk["baselines"][f"step_cap_{k}"][key] == _approx(v), (k, key)


def _approx(v):
    import pytest

    return pytest.approx(v, rel=1e-12, abs=1e-12)

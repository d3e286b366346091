"""Does an early-stopped score follow the agent? Synthetic regressions and improvements, and real pairs.

A team re-runs a benchmark to learn which change helped: an early-stopped resolve rate is only worth its savings
if it moves when the agent moves. Three checks, on the held-out agents of a leave-one-agent-out (each predicted by
its own fold's model and scored under its own fold's thresholds, nothing fitted on it):

* regressions: a share k of an agent's runs replaced by broken runs made from them (cut after 1-3 steps, looping
  on one command, or empty after 1-3 real steps; labelled failed, each seeded), through the fold's model;
* improvements: a share k of an agent's failed runs on tasks another agent solved, replaced by that agent's
  successful runs (predicted by a model that saw neither agent);
* real pairs: every two held-out agents on their common tasks, the early-stopped difference in resolve rate
  against the full-run one (sign and McNemar significance), and the rank correlation over all agents.

docs/architecture.md, "Fidelity".
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Sequence

import numpy as np

from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.evaluation.evaluate import LoaoResult
from earlyeval.evaluation.fold_runner import FoldRunner, runset
from earlyeval.evaluation.holdout_groups import inner_plan
from earlyeval.evaluation.pass_predict import cold
from earlyeval.fitting.metrics import RunSet, apply_policy, spearman
from earlyeval.model.outcome import split_proba

SHARES = (0.1, 0.3, 0.5, 1.0)  # the share k of an agent's runs a synthetic change replaces
BROKEN = ("cut", "loop", "empty")  # how a broken run is made from a real one
KEEP = (1, 2, 3)  # a broken run keeps this many of the real run's first steps (seeded)


# ------------------------------------------------------------------ broken runs


def broken_run(t: Trajectory, kind: str, keep: int) -> Trajectory:
    """``t`` broken after its first ``keep`` steps, labelled failed: ``cut`` ends there, ``loop`` repeats the
    last kept step's command (and its answer) to the run's length, ``empty`` goes on with empty steps."""
    if kind not in BROKEN:
        raise ValueError(f"kind must be one of {BROKEN}, not {kind!r}")
    head = [dataclasses.replace(s) for s in t.steps[:keep]]
    n = len(t.steps)
    if kind == "cut" or not head:
        steps = head
    elif kind == "loop":
        last = head[-1]
        steps = head + [dataclasses.replace(last, index=i) for i in range(len(head), n)]
    else:
        steps = head + [Step(index=i, action="", kind="other") for i in range(len(head), n)]
    return dataclasses.replace(
        t,
        run_id=f"{t.run_id}#broken-{kind}",
        steps=steps,
        outcome=0,
        meta={**t.meta, "broken": kind},
    )


def predict_runs(runner: FoldRunner, exclude: frozenset, trajs: list[Trajectory]) -> RunSet:
    """Runs that are not in the runner's dataset, predicted by its fit without ``exclude`` with the same feature
    path as its own runs (``FoldRunner.features`` on a dataset of just these runs), gated by its config."""
    ds = runner.ds
    mini = load_dataset(
        ds.bench,
        runner.cfg.families,
        trajs=trajs,
        tasks=ds.tasks,
        progress=False,
        prior_table=ds.prior_table,
    )
    mr = FoldRunner(mini, runner.cfg)
    fitted = runner.fit(exclude)
    runs = np.arange(len(mini.trajs))
    rows = mr.rows_of(runs, 2)
    X, names = mr.features(fitted, runs, rows)
    ps, pf = split_proba(fitted.model.predict_proba(cold(X, names)))
    return runset(mini, runs, rows, ps, pf, runner.cfg)


# ---------------------------------------------------------------- the scores


def recorded(rs: RunSet, th: dict[str, Any], min_t: int) -> np.ndarray:
    """Each run's early-stopped outcome under ``th``: the predicted one if halted, else its own."""
    t_halt, pred = apply_policy(rs, th["success"], th["failure"], min_t)
    return np.where(t_halt > 0, pred, rs.y).astype(np.int64)


def _mix(
    base: RunSet, alt: RunSet, swap: np.ndarray, th: dict[str, Any], min_t: int
) -> dict[str, float]:
    """The early-stopped and true resolve rates of ``base`` with the runs ``swap`` replaced by ``alt``'s (aligned by
    position), against ``base``'s own: the measured and the true change."""
    rec_b, rec_a = recorded(base, th, min_t), recorded(alt, th, min_t)
    rec = np.where(swap, rec_a, rec_b)
    y = np.where(swap, alt.y, base.y)
    return {
        "true_rate": float(y.mean()),
        "early_stopped_rate": float(rec.mean()),
        "error_pp": 100.0 * float(rec.mean() - y.mean()),
        "true_change_pp": 100.0 * float(y.mean() - base.y.mean()),
        "measured_change_pp": 100.0 * float(rec.mean() - rec_b.mean()),
    }


def _pick(
    n: int, share: float, rng: np.random.Generator, among: np.ndarray | None = None
) -> np.ndarray:
    """A seeded mask of ``round(share * m)`` of the ``m`` candidates (``among``; default all ``n``), at least 1."""
    idx = np.arange(n) if among is None else np.flatnonzero(among)
    k = min(len(idx), max(1, int(round(share * len(idx))))) if len(idx) else 0
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(idx, size=k, replace=False)] = True
    return mask


def _ratio(measured: float, true: float) -> float | None:
    return None if abs(true) < 1e-12 else measured / true


# ------------------------------------------------------------- regressions


def regression_block(
    runner: FoldRunner, exclude: frozenset, agent: str, th: dict[str, Any], seed: int
) -> dict[str, Any]:
    """Per broken kind and share k: an agent's runs with k of them broken, early-stopped against true."""
    cfg = runner.cfg
    base = runner.predict(exclude, agent)
    order = {r: i for i, r in enumerate(base.run_ids)}
    trajs = [runner.ds.trajs[i] for i in np.flatnonzero(runner.run_agent == agent)]
    trajs = sorted(trajs, key=lambda t: order[t.run_id])
    rng = np.random.default_rng([seed, 7])
    keep = rng.choice(KEEP, size=len(trajs))
    out: dict[str, Any] = {}
    for kind in BROKEN:
        broken = [broken_run(t, kind, int(k)) for t, k in zip(trajs, keep)]
        alt = predict_runs(runner, exclude, broken)
        per_k = {}
        for share in SHARES:
            swap = _pick(len(base), share, np.random.default_rng([seed, int(share * 1000)]))
            m = _mix(base, alt, swap, th, cfg.min_halt_step)
            m["measured_over_true_drop"] = _ratio(m["measured_change_pp"], m["true_change_pp"])
            m["broken_runs"] = int(swap.sum())
            m["broken_credited"] = int((recorded(alt, th, cfg.min_halt_step)[swap] == 1).sum())
            per_k[f"{share:.0%}"] = m
        out[kind] = per_k
    return out


# ------------------------------------------------------------ improvements


def improvement_block(
    runner: FoldRunner,
    exclude: frozenset,
    agent: str,
    donors: dict[str, frozenset],
    th: dict[str, Any],
    seed: int,
) -> dict[str, Any] | None:
    """Per share k: ``agent``'s failed runs on tasks a donor agent solved swapped for the donor's successful run,
    early-stopped against true. ``donors``: donor -> the agents its predictions leave out (the agent's fold's
    inner plan: neither the agent nor the donor was seen; the thresholds' own inner predictions, cached)."""
    cfg = runner.cfg
    base = runner.predict(exclude, agent)
    task_of = {t.run_id: t.task_id for t in runner.ds.trajs}
    tasks = [task_of[r] for r in base.run_ids]
    rng = np.random.default_rng([seed, 11])
    donor_sets = {b: runner.predict(ex, b) for b, ex in donors.items()}
    solved: dict[str, list[tuple[str, int]]] = {}
    for b, rs in donor_sets.items():
        for i, (rid, y) in enumerate(zip(rs.run_ids, rs.y)):
            if y == 1:
                solved.setdefault(task_of[rid], []).append((b, i))
    cand = np.asarray([y == 0 and tasks[i] in solved for i, y in enumerate(base.y)], dtype=bool)
    if not cand.any():
        return None
    pick = [
        solved[tasks[i]][rng.integers(len(solved[tasks[i]]))] if cand[i] else None
        for i in range(len(base))
    ]
    alt = _aligned_donors(base, pick, donor_sets)
    per_k = {}
    for share in SHARES:
        swap = _pick(len(base), share, np.random.default_rng([seed, 13, int(share * 1000)]), cand)
        m = _mix(base, alt, swap, th, cfg.min_halt_step)
        m["measured_over_true_gain"] = _ratio(m["measured_change_pp"], m["true_change_pp"])
        m["swapped_runs"] = int(swap.sum())
        per_k[f"{share:.0%}"] = m
    return {"candidates": int(cand.sum()), "donors": sorted(donor_sets), "shares": per_k}


def _aligned_donors(
    base: RunSet, pick: list[tuple[str, int] | None], donor_sets: dict[str, RunSet]
) -> RunSet:
    """A RunSet aligned with ``base``: at a picked position the donor's run, elsewhere ``base``'s own."""
    rows = [donor_sets[p[0]].subset(_one(len(donor_sets[p[0]]), p[1])) if p else None for p in pick]
    parts = [r if r is not None else base.subset(_one(len(base), i)) for i, r in enumerate(rows)]
    return RunSet.concat(parts)


def _one(n: int, i: int) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[i] = True
    return m


# -------------------------------------------------------------- real pairs


def mcnemar_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided exact McNemar p-value of paired binary outcomes ``a`` and ``b`` (binomial on the discordant
    pairs; 1.0 when there are none)."""
    from scipy.stats import binomtest

    n01 = int(((a == 0) & (b == 1)).sum())
    n10 = int(((a == 1) & (b == 0)).sum())
    n = n01 + n10
    return 1.0 if n == 0 else float(binomtest(n10, n, 0.5).pvalue)


def pairs_block(
    sets: dict[str, RunSet],
    thresholds: dict[str, dict[str, Any]],
    task_of: dict[str, str],
    min_t: int,
    agents: Sequence[str],
    alpha: float = 0.05,
    within_pp: float = 2.0,
) -> dict[str, Any]:
    """Every two of ``agents`` with common tasks: the full-run and early-stopped differences in resolve rate on
    them, the McNemar p-value of each, and whether they agree; the rank correlation of the agents' rates."""
    rec = {a: recorded(sets[a], thresholds[a], min_t) for a in agents}
    first = {a: _first_by_task(sets[a], task_of) for a in agents}
    pairs = {}
    for i, a in enumerate(agents):
        for b in agents[i + 1 :]:
            common = sorted(set(first[a]) & set(first[b]))
            if not common:
                continue
            ia, ib = [first[a][t] for t in common], [first[b][t] for t in common]
            ya, yb = sets[a].y[ia], sets[b].y[ib]
            ra, rb = rec[a][ia], rec[b][ib]
            full, es = 100 * float(ya.mean() - yb.mean()), 100 * float(ra.mean() - rb.mean())
            p_full, p_es = mcnemar_p(ya, yb), mcnemar_p(ra, rb)
            pairs[f"{a} | {b}"] = {
                "common_tasks": len(common),
                "full_diff_pp": full,
                "early_stopped_diff_pp": es,
                "gap_pp": es - full,
                "full_p": p_full,
                "early_stopped_p": p_es,
                "sign_agrees": math.copysign(1, full) == math.copysign(1, es) or abs(full) < 1e-12,
                "significance_agrees": (p_full < alpha) == (p_es < alpha),
            }
    sig = [p for p in pairs.values() if p["full_p"] < alpha]
    within = [p for p in pairs.values() if abs(p["gap_pp"]) <= within_pp + 1e-9]
    return {
        "pairs": pairs,
        "n_pairs": len(pairs),
        "significant_pairs": len(sig),
        "sign_agrees_on_significant": sum(p["sign_agrees"] for p in sig),
        "significance_agrees": sum(p["significance_agrees"] for p in pairs.values()),
        f"within_{within_pp:g}pp": len(within),
        f"share_within_{within_pp:g}pp": len(within) / len(pairs) if pairs else None,
        "rank_correlation": spearman(
            [float(rec[a].mean()) for a in agents], [float(sets[a].y.mean()) for a in agents]
        ),
        "alpha": alpha,
    }


def _first_by_task(rs: RunSet, task_of: dict[str, str]) -> dict[str, int]:
    """task -> the position of the agent's first run on it (repeated trials: the first by run id)."""
    out: dict[str, int] = {}
    for i in sorted(range(len(rs)), key=lambda i: rs.run_ids[i]):
        out.setdefault(task_of[rs.run_ids[i]], i)
    return out


# ------------------------------------------------------------------ the block


def fidelity_block(
    res: LoaoResult,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    regressions: bool = True,
) -> dict[str, Any]:
    """The fidelity checks of one leave-one-agent-out result (its held-out large agents under their own folds'
    thresholds; the small agents enter the real pairs)."""
    ds = res.runner.ds
    task_of = {t.run_id: t.task_id for t in ds.trajs}
    out: dict[str, Any] = {
        "shares": [f"{s:.0%}" for s in SHARES],
        "seed": seed,
        "kinds": list(BROKEN),
    }
    reg, imp = {}, {}
    for a in res.holdout:
        runner, ex = res.folds[a]
        if regressions:
            if progress:
                progress(f"fidelity: broken runs of {a}")
            reg[a] = regression_block(runner, ex, a, res.thresholds[a], seed)
        plan, _ = inner_plan(ds, runner.cfg, ex, res.holdout)
        donors = {b: e for e, bs in plan for b in bs if _shares_tasks(ds, a, b)}
        if donors:
            blk = improvement_block(runner, ex, a, donors, res.thresholds[a], seed)
            if blk is not None:
                imp[a] = blk
    if regressions:
        out["regressions"] = {"agents": reg, "summary": regression_summary(reg)}
    out["improvements"] = {"agents": imp, "summary": improvement_summary(imp)}
    agents = [a for a in res.sets if len(res.sets[a])]
    out["real_pairs"] = pairs_block(
        res.sets, res.thresholds, task_of, res.runner.cfg.min_halt_step, agents
    )
    return out


def _shares_tasks(ds: Any, a: str, b: str) -> bool:
    ta = {t.task_id for t in ds.trajs if t.agent == a}
    return any(t.task_id in ta for t in ds.trajs if t.agent == b)


def regression_summary(reg: dict[str, Any]) -> dict[str, Any]:
    """The worst case over agents, kinds and shares: |error| of the early-stopped rate, the smallest
    measured/true drop, and the all-broken early-stopped rate (k = 100 %)."""
    cells = [
        (a, kind, k, m)
        for a, kinds in reg.items()
        for kind, ks in kinds.items()
        for k, m in ks.items()
    ]
    if not cells:
        return {}
    worst = max(cells, key=lambda c: abs(c[3]["error_pp"]))
    ratios = [c for c in cells if c[3]["measured_over_true_drop"] is not None]
    low = min(ratios, key=lambda c: c[3]["measured_over_true_drop"]) if ratios else None
    full = [c for c in cells if c[2] == "100%"]
    return {
        "max_abs_error_pp": abs(worst[3]["error_pp"]),
        "worst": {"agent": worst[0], "kind": worst[1], "share": worst[2]},
        "cells_within_2pp": sum(abs(c[3]["error_pp"]) <= 2.0 + 1e-9 for c in cells),
        "cells": len(cells),
        "min_measured_over_true_drop": low[3]["measured_over_true_drop"] if low else None,
        "max_all_broken_rate": max((c[3]["early_stopped_rate"] for c in full), default=None),
    }


def improvement_summary(imp: dict[str, Any]) -> dict[str, Any]:
    cells = [(a, k, m) for a, b in imp.items() for k, m in b["shares"].items()]
    ratios = [c for c in cells if c[2]["measured_over_true_gain"] is not None]
    if not ratios:
        return {}
    low = min(ratios, key=lambda c: c[2]["measured_over_true_gain"])
    return {
        "min_measured_over_true_gain": low[2]["measured_over_true_gain"],
        "worst": {"agent": low[0], "share": low[1]},
        "cells_at_least_90pct": sum(c[2]["measured_over_true_gain"] >= 0.9 - 1e-9 for c in ratios),
        "cells": len(ratios),
        "max_abs_error_pp": max(abs(c[2]["error_pp"]) for c in cells),
    }

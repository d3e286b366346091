"""What each added training agent buys: held-out AUROC and steps saved against the number of training agents.

For every large held-out agent A and every k = 1 .. n-1 (n large agents), up to ``subsets`` subsets S of k
other large agents (drawn with a fixed seed; all of them when there are fewer) are the only training agents:
the model is fitted on S alone and A is predicted by it, with thresholds chosen by the configured rule over S's
own inner units (``inner_sets``, as in LOAO).  So every point is an honest LOAO number with a smaller pool.  A
curve ``m(k) = a - b / k`` is fitted to the per-k means (least squares in 1/k) and read at the next sizes: the
forecast of what more agents would be worth, stated as a fit, not a measurement.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import numpy as np

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.blocks import agent_block
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.holdout_groups import inner_sets
from earlyeval.fitting.metrics import auroc
from earlyeval.fitting.thresholds import choose_thresholds

METRICS = ("auroc_success", "steps_saved", "steps_saved_in_run", "halted_accuracy")


MAX_SUBSETS = 10_000  # subsets per k a learning curve may ask for (each is a fit)


def _unrank(items: list[str], k: int, rank: int) -> tuple[str, ...]:
    """The ``rank``-th k-subset of ``items`` in ``itertools.combinations`` order, without listing the others."""
    out, start = [], 0
    for left in range(k, 0, -1):
        for i in range(start, len(items)):
            c = math.comb(len(items) - i - 1, left - 1)
            if rank < c:
                out.append(items[i])
                start = i + 1
                break
            rank -= c
    return tuple(out)


def training_subsets(
    others: list[str], k: int, limit: int, rng: np.random.Generator
) -> list[tuple[str, ...]]:
    """Up to ``limit`` distinct k-subsets of ``others``, seeded (all of them when there are at most ``limit``);
    the subsets drawn are unranked from their indices, never listed (30 agents have 155 million 15-subsets)."""
    items = sorted(others)
    n = math.comb(len(items), k)
    if n <= limit:
        return list(itertools.combinations(items, k))
    pick = rng.choice(n, size=limit, replace=False)
    return [_unrank(items, k, int(i)) for i in sorted(pick)]


def fit_curve(ks: list[int], ys: list[float]) -> dict[str, Any] | None:
    """m(k) = a - b / k by least squares on the per-k means (None with fewer than three points)."""
    pts = [(k, y) for k, y in zip(ks, ys) if y is not None and math.isfinite(y)]
    if len(pts) < 3:
        return None
    X = np.column_stack([np.ones(len(pts)), [-1.0 / k for k, _ in pts]])
    coef, *_ = np.linalg.lstsq(X, np.asarray([y for _, y in pts]), rcond=None)
    a, b = float(coef[0]), float(coef[1])
    return {
        "form": "a - b/k",
        "a": a,
        "b": b,
        "forecast": {str(k): a - b / k for k in (max(ks) + 1, 2 * max(ks), 4 * max(ks))},
        "plateau": a,
    }


def learning_curve(
    ds: Dataset, cfg: EvalConfig, subsets: int = 2, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    if isinstance(subsets, bool) or not isinstance(subsets, int) or not 1 <= subsets <= MAX_SUBSETS:
        raise ValueError(f"--subsets {subsets!r}: an integer in [1, {MAX_SUBSETS}]")
    runner = FoldRunner(ds, cfg, progress)
    units = ds.holdout_units(cfg.holdout_min_runs)
    large = [u.agents[0] for u in units if not u.small]
    everyone = frozenset(ds.agents)
    rng = np.random.default_rng(cfg.seed)
    points: list[dict[str, Any]] = []
    for a in large:
        others = [b for b in large if b != a]
        for k in range(1, len(others) + 1):
            for S in training_subsets(others, k, subsets, rng):
                ex = everyone - frozenset(S)  # A, the small agents and every large agent outside S
                rs = runner.predict(ex, a)
                inner, method = inner_sets(runner, ex, large)
                th = choose_thresholds(inner, cfg, method=method)
                blk = agent_block(rs, th, cfg)
                y, ps, _, w = rs.prefix_arrays()
                points.append(
                    {
                        "held_out": a,
                        "k": k,
                        "training_agents": list(S),
                        "auroc_success": auroc(y, ps, w),
                        **{m: blk.get(m) for m in METRICS if m != "auroc_success"},
                        "thresholds": {"success": th["success"], "failure": th["failure"]},
                    }
                )
    by_k: dict[str, Any] = {}
    ks = sorted({p["k"] for p in points})
    for k in ks:
        row = [p for p in points if p["k"] == k]
        by_k[str(k)] = {m: _mean([p.get(m) for p in row]) for m in METRICS}
        by_k[str(k)]["n_points"] = len(row)
    curves = {
        m: fit_curve(ks, [by_k[str(k)][m] for k in ks]) for m in ("auroc_success", "steps_saved")
    }
    return {
        "doc": __doc__.strip().splitlines()[0],
        "subsets_per_k": subsets,
        "held_out_agents": large,
        "points": points,
        "by_k": by_k,
        "fit": curves,
        "protocol": cfg.prior_pool,
        "threshold_rule": cfg.threshold_rule,
    }


def _mean(xs: list[Any]) -> float | None:
    v = [float(x) for x in xs if x is not None and math.isfinite(float(x))]
    return float(np.mean(v)) if v else None

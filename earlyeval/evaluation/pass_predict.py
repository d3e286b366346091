"""A held-out agent's predictions with and without a pass reference (issue 28 item 2).

Static protocols judge every run as the first its agent ever ran: the pass features are NaN (``cold``), the
path a bare Monitor takes.  The pass simulator reads them against the audited runs finished before each run
started (``repredictor``): run k's pass columns recomputed by the pass family itself, then the fold's model.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from earlyeval.features import Featurizer, RunContext
from earlyeval.features.passref import PassFamily, PassReference, profile_of
from earlyeval.model.outcome import split_proba

PASS_NAMES = frozenset(PassFamily().names)


def pass_columns(names: list[str]) -> list[int]:
    return [j for j, n in enumerate(names) if n in PASS_NAMES]


def cold(X: np.ndarray, names: list[str]) -> np.ndarray:
    """``X`` with the pass features missing (a copy when there are any)."""
    cols = pass_columns(names)
    if not cols:
        return X
    X = np.array(X, copy=True)
    X[:, cols] = np.nan
    return X


def repredictor(
    runner: Any, exclude: frozenset, agent: str
) -> Callable[[int, list[int]], Any] | None:
    """``repredict(k, refs)`` for the pass simulator over ``runner.predict(exclude, agent)``'s runs (k and refs
    index them): run k's (p_s, p_f) with its pass features read against runs ``refs``; None below
    MIN_REFERENCE.  None when the fold's model has no pass feature."""
    fitted = runner.fit(exclude)
    runs = np.flatnonzero(runner.run_agent == agent)
    rows = runner.rows_of(runs, 2)
    X, names = runner.features(fitted, runs, rows)
    cols = pass_columns(names)
    if not cols:
        return None
    X = cold(X, names)
    trajs = [runner.ds.trajs[r] for r in runs]
    profiles = [profile_of(t) for t in trajs]
    starts = np.concatenate([[0], np.cumsum([max(len(t.steps) - 1, 0) for t in trajs])])
    if starts[-1] != len(rows):
        raise AssertionError(f"{agent}: {starts[-1]} prefixes of its runs, {len(rows)} rows")
    fz = Featurizer([PassFamily()])
    where = [fz.names.index(names[j]) for j in cols]
    cache: dict[tuple[int, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}

    def repredict(k: int, refs: list[int]) -> tuple[np.ndarray, np.ndarray] | None:
        key = (k, tuple(sorted(refs)))
        if key in cache:
            return cache[key]
        ref = PassReference.of(profiles[j] for j in key[1])
        if ref is None or starts[k + 1] == starts[k]:
            return None
        Xk = X[starts[k] : starts[k + 1]].copy()
        Xk[:, cols] = fz.prefix_matrix([trajs[k]], [RunContext(pass_reference=ref)])[:, where]
        ps, pf = split_proba(fitted.model.predict_proba(Xk))
        cache[key] = (ps, pf)
        return cache[key]

    return repredict

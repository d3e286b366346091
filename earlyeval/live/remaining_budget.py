"""The shipped budget model, live: what ``Monitor.observe`` puts in ``Decision.budget``.

``LiveBudget`` evaluates ``extra_budget.json`` per step with the batch code's numbers (to 1e-9) and none of its
dependencies. How: docs/architecture.md, "The remaining budget, in detail"; what it returns: docs/monitor.md.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_right
from functools import reduce
from operator import add
from typing import Any, Iterable

import numpy as np

from earlyeval.model.boostercheck import probe_enabled, safe_boosters
from earlyeval.model.cqr import pair_for
from earlyeval.model.fastpredict import StackedPredictor
from earlyeval.model.spend import (
    DIMENSIONS,
    SHIPPED_FORMAT,
    SHIPPED_VERSION,
    SpendTracker,
    spend_feature_names,
    spend_features,
)

# the Monitor's logger: these messages are the Monitor's
log = logging.getLogger("earlyeval.live.monitor")


class _Dim:
    __slots__ = ("B", "corr", "fmap", "n_models", "name", "pred", "tau", "unit")

    def __init__(
        self,
        name: str,
        unit: float,
        B: float,
        tau: float,
        n_models: int,
        corr: list[tuple[str, int, int, float]],
        pred: StackedPredictor,
        fmap: list[int],
    ):
        self.name, self.unit, self.B, self.tau, self.n_models, self.corr, self.pred = (
            name,
            unit,
            B,
            tau,
            n_models,
            corr,
            pred,
        )
        self.fmap = np.asarray(fmap, dtype=np.int64)


class LiveBudget:
    """Remaining-budget intervals, P(total <= B), P(feasible) and the early-stop flag for one prefix.

    Built once per loaded model (shared by spawned monitors); the per-run state is a
    ``SpendTracker`` from ``tracker()``."""

    def __init__(
        self,
        spec: dict[str, Any],
        feature_names: list[str],
        use_c_api: bool = True,
        only: Iterable[str] | None = None,
    ):
        """`only`: the dimensions to compute (default every dimension the model has)."""
        if (
            not isinstance(spec, dict)
            or spec.get("format") != SHIPPED_FORMAT
            or spec.get("version") != SHIPPED_VERSION
        ):
            raise ValueError(
                f"extra_budget.json is not a '{SHIPPED_FORMAT}' version {SHIPPED_VERSION} model"
            )
        self.alphas = tuple(float(a) for a in spec["alphas"])
        self.levels = tuple(float(v) for v in spec["levels"])
        self.min_halt_step = int(spec.get("min_halt_step", 1))
        self.free_opening = bool(spec.get("free_opening", False))
        self._median = self.alphas.index(0.5)
        self._ps = [0.0, *self.alphas, 1.0]
        dims = sorted(
            spec["dimensions"],
            key=lambda d: (DIMENSIONS.index(d) if d in DIMENSIONS else len(DIMENSIONS), d),
        )
        if only is not None:
            want = set(only)
            if want - set(dims):
                raise ValueError(
                    f"budget dimensions {sorted(want - set(dims))} are not in the model (it has {dims})"
                )
            dims = [d for d in dims if d in want]
        self.dims: tuple[str, ...] = tuple(dims)
        n = len(feature_names)
        self._n = n
        # dims with spend features, in this order
        self._token = [i for i, d in enumerate(dims) if d != "steps"]
        # first column of each one's spend features
        self._col = {i: n + 3 * k for k, i in enumerate(self._token)}
        combined = list(feature_names) + [
            nm for i in self._token for nm in spend_feature_names(dims[i])
        ]
        index = {nm: j for j, nm in enumerate(combined)}
        self._width = len(combined)
        self._units = np.zeros(len(dims))
        self._dims: list[_Dim] = []
        for d in dims:
            dim = self._load_dim(d, spec["dimensions"][d], index, len(combined), use_c_api)
            self._units[len(self._dims)] = dim.unit
            self._dims.append(dim)

    def _load_dim(
        self, d: str, blk: dict[str, Any], index: dict[str, int], width: int, use_c_api: bool
    ) -> _Dim:
        """One dimension's estimator, checked: its features, fold boosters, corrections and unit/B/tau."""
        est = blk["estimator"]
        names = list(est["feature_names"])
        missing = [nm for nm in names if nm not in index]
        if missing:
            raise ValueError(
                f"budget {d}: features {missing[:3]} are not made by this model's featurizer"
            )
        fmap = [index[nm] for nm in names]
        ccq = est["model"]
        boosters = []
        for m in ccq["models"]:
            if tuple(float(a) for a in m["alphas"]) != self.alphas or len(m["boosters"]) != len(
                self.alphas
            ):
                raise ValueError(
                    f"budget {d}: a fold model's alphas differ from the model's {self.alphas}"
                )
            # checked before LightGBM parses them, probed in a child process (boostercheck; cached per text)
            boosters += safe_boosters(list(m["boosters"]), do_probe=probe_enabled())
        if not boosters:
            raise ValueError(f"budget {d}: no fold model")
        corr = []
        for lv in self.levels:
            Q = float(ccq["corrections"][str(lv)])
            if not math.isfinite(Q):
                raise ValueError(f"budget {d}: correction at level {lv} is {Q}")
            i, j = pair_for(lv, self.alphas)
            corr.append((str(lv), i, j, Q))
        unit, B, tau = float(est["unit"]), float(est["budget"]), float(blk["tau"])
        if not (unit > 0 and math.isfinite(B) and math.isfinite(tau)):
            raise ValueError(f"budget {d}: unit {unit}, B {B}, tau {tau}")
        pred = StackedPredictor(boosters, [fmap] * len(boosters), width, use_c_api=use_c_api)
        return _Dim(d, unit, B, tau, len(ccq["models"]), corr, pred, fmap)

    @property
    def predictor_kind(self) -> str:
        kinds = {d.pred.kind for d in self._dims}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    @property
    def budgets(self) -> dict[str, float]:
        return {d.name: d.B for d in self._dims}

    @property
    def taus(self) -> dict[str, float]:
        return {d.name: d.tau for d in self._dims}

    def tracker(self) -> SpendTracker:
        return SpendTracker(self.dims, self.free_opening)

    # ------------------------------------------------------------------ predict
    def features(self, st: SpendTracker, x: np.ndarray) -> np.ndarray:
        """The shared float32 row: the model's features, then every known token/cost dimension's spend features
        (NaN for an unknown one: never read, that dimension is not predicted)."""
        n = self._n
        # per call: a LiveBudget is shared by spawned monitors
        buf = np.empty(self._width, dtype=np.float32)
        buf[:n] = x
        known = [i for i in self._token if st.known(i)]
        if len(known) < len(self._token):
            buf[n:] = np.nan
        if known:
            F = spend_features(
                np.asarray([st.spent_[i] for i in known]),
                np.asarray([st.last_[i] for i in known]),
                float(st.t),
                self._units[known],
            )
            if len(known) == len(self._token):
                buf[n:] = F.ravel()  # rows in the columns' order
            else:
                for r, i in enumerate(known):
                    k = self._col[i]
                    buf[k : k + 3] = F[r]
        return buf

    def design_row(self, st: SpendTracker, x: np.ndarray, dim: str) -> np.ndarray:
        """The float32 feature row one dimension's boosters see (in its estimator's feature order): for tests."""
        d = self._dims[self.dims.index(dim)]
        return self.features(st, x)[d.fmap]

    def predict(
        self, st: SpendTracker, x: np.ndarray, p_success: float
    ) -> dict[str, dict[str, Any] | None]:
        """Per dimension: remaining intervals, spend, B, P(total <= B), P(feasible), tau, impossible; None if unknown."""
        buf = self.features(st, x)
        t = st.t
        A = len(self.alphas)
        expm1, log1p = math.expm1, math.log1p
        eligible = t >= self.min_halt_step
        a0, a1, a_2, a_1 = self.alphas[0], self.alphas[1], self.alphas[-2], self.alphas[-1]
        d_lo, d_hi = max(a1 - a0, 1e-12), max(a_1 - a_2, 1e-12)
        ps = self._ps
        med_i = self._median
        out: dict[str, dict[str, Any] | None] = {}
        for i, d in enumerate(self._dims):
            if not st.known(i):
                out[d.name] = None
                continue
            raw = d.pred(buf)
            M = d.n_models
            # CrossConformalQuantiles.predict: the mean of the fold models' sorted quantiles (np.mean adds
            # the models in order, then divides by M), sorted
            if M == 3:
                q = sorted(
                    [
                        (u + v + w) / 3
                        for u, v, w in zip(
                            sorted(raw[:A]), sorted(raw[A : 2 * A]), sorted(raw[2 * A :])
                        )
                    ]
                )
            else:
                q = sorted(
                    [
                        reduce(add, col) / M
                        for col in zip(*[sorted(raw[m * A : (m + 1) * A]) for m in range(M)])
                    ]
                )
            # corrected_quantiles: widen each level's pair by its CQR correction, re-sort
            c = q[:]
            for _, lo, hi, Q in d.corr:
                c[lo] = q[lo] - Q
                c[hi] = q[hi] + Q
            c.sort()
            spent = st.spent_[i]
            rate = (spent + d.unit) / (t + 1.0)  # targets.pace
            # cqr.from_z: max(expm1(max(z, 0)), 0) * rate
            z = c[med_i]
            med = expm1(z) * rate if z > 0 else 0.0
            remaining = {}
            for lv, lo, hi, _ in d.corr:
                zl, zh = c[lo], c[hi]
                remaining[lv] = {
                    "low": expm1(zl) * rate if zl > 0 else 0.0,
                    "median": med,
                    "high": expm1(zh) * rate if zh > 0 else 0.0,
                }
            room = d.B - spent
            if room < 0:
                pw = 0.0  # cqr.within: the budget is already spent
            else:
                # cqr.quantile_cdf: linear tails to 0 and 1, then np.interp
                xs = [
                    c[0] - (c[1] - c[0]) * a0 / d_lo,
                    *c,
                    c[-1] + (c[-1] - c[-2]) * (1 - a_1) / d_hi,
                ]
                zx = log1p(room / rate)
                pw = float(zx >= xs[0]) if xs[-1] - xs[0] <= 0 else _interp(zx, xs, ps)
            pf = p_success * pw
            out[d.name] = {
                "spent": spent,
                "budget": d.B,
                "remaining": remaining,
                "p_within_budget": pw,
                "p_feasible": pf,
                "tau": d.tau,
                "impossible": eligible and pf < d.tau,
            }
        return out


def _interp(x: float, xp: list[float], fp: list[float]) -> float:
    """np.interp(x, xp, fp, left=0.0, right=1.0) for one x, step by step as numpy's C loop does it."""
    if math.isnan(x):
        return x
    n = len(xp)
    if x < xp[0]:
        return 0.0
    if x > xp[-1]:
        return 1.0
    j = bisect_right(xp, x) - 1  # xp[j] <= x < xp[j+1] (numpy's binary_search_with_guess)
    if j == n - 1 or xp[j] == x:
        return fp[j]
    slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j])
    r = slope * (x - xp[j]) + fp[j]
    if math.isnan(r):
        r = slope * (x - xp[j + 1]) + fp[j + 1]
        if math.isnan(r) and fp[j] == fp[j + 1]:
            r = fp[j]
    return r


__all__ = ["LiveBudget"]


# the budget dimensions Decision.budget carries unless asked otherwise: steps (every run has them);
# all four dimensions cost ~120 µs more per step (docs/monitor.md, `earlyeval bench --budget all`)
DEFAULT_BUDGET_DIMS: tuple[str, ...] = ("steps",)


def load_live_budget(
    bundle: Any, feature_names: list[str], use_c_api: bool, only: tuple[str, ...] | None
) -> tuple[LiveBudget | None, str]:
    """(LiveBudget or None, status).  Fail-open: a budget part that cannot be built is logged and left off."""
    spec = bundle.extra.get("budget")
    if spec is None:
        err = getattr(bundle, "extra_errors", {}).get("budget")
        if err:
            return None, f"error: extra_budget.json left out at load ({err})"
        return None, "absent (the model dir has no extra_budget.json)"
    have = set(spec.get("dimensions", {})) if isinstance(spec, dict) else set()
    if (
        only == DEFAULT_BUDGET_DIMS and have and not set(only) <= have
    ):  # the default asks, it does not insist
        only = tuple(d for d in only if d in have)
        if not only:
            return (
                None,
                f"off (the model's budget dimensions {sorted(have)} include none of the default {list(DEFAULT_BUDGET_DIMS)})",
            )
    if only is not None and have and set(only) - have:
        raise ValueError(
            f"budget dimensions {sorted(set(only) - have)} are not in the model (it has {sorted(have)})"
        )
    try:
        lb = LiveBudget(spec, feature_names, use_c_api=use_c_api, only=only)
    except Exception as e:
        log.exception(
            "earlyeval monitor: the model's budget estimators cannot be used (Decision.budget stays None)"
        )
        return None, f"error: {type(e).__name__}: {e}"
    return lb, f"on ({', '.join(lb.dims)}; {lb.predictor_kind})"


def halt_dims(spec: bool | str | Iterable[str], budget: Any) -> frozenset[str]:
    """The dimensions whose `impossible` flag halts the run."""
    if spec is False or spec is None:
        return frozenset()
    dims = frozenset(budget.dims) if budget is not None else frozenset()
    want = dims if spec is True else frozenset([spec] if isinstance(spec, str) else spec)
    if not want:
        return frozenset()
    if budget is None:
        log.warning(
            "earlyeval monitor: halt_on_impossible=%r but the model has no usable budget estimators: never halts on budget",
            spec,
        )
        return frozenset()
    unknown = want - dims
    if unknown:
        raise ValueError(
            f"halt_on_impossible names {sorted(unknown)}; the model's budget dimensions are {sorted(dims)}"
        )
    return want

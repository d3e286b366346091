"""One-row raw margins of a LightGBM booster, fast enough for every agent step.

LightGBM's own single-row C fast path, bit-identical to ``Booster.predict``, with a fallback and a lock per
predictor. Measured and why: docs/monitor.md, "LightGBM without the lightgbm package".
"""

from __future__ import annotations

import ctypes
import logging
import re
import threading
from typing import Any, Callable

import numpy as np

from earlyeval.core.errors import EarlyEvalError
from earlyeval.model import lgbm_capi
from earlyeval.model.lgbm_capi import CBooster, LibraryUnavailable, load_booster

log = logging.getLogger(__name__)

_PREDICT_RAW_SCORE = lgbm_capi.C_API_PREDICT_RAW_SCORE
# TreeSHAP values, n_features + 1 (the bias last)
_PREDICT_CONTRIB = lgbm_capi.C_API_PREDICT_CONTRIB
# rows are float32, as Featurizer.prefix_matrix stores them
_DTYPE_FLOAT32 = lgbm_capi.C_API_DTYPE_FLOAT32


class FastPathUnavailable(EarlyEvalError, RuntimeError):
    """lib_lightgbm cannot be used for the single-row fast path (see ``lgbm_capi.LibraryUnavailable``)."""


def c_booster(booster: Any) -> CBooster:
    """``booster`` as a ``CBooster`` (itself, or re-read from its model text); ``FastPathUnavailable`` if lib_lightgbm
    cannot be used."""
    if isinstance(booster, CBooster):
        return booster
    try:
        return CBooster(booster.model_to_string())
    except LibraryUnavailable as e:
        raise FastPathUnavailable(str(e)) from e


class SingleRowPredictor:
    """``booster.predict(x[None], raw_score=True)[0]`` for one float32 row, via the C fast path.

    With ``contrib=True`` it returns ``booster.predict(x[None], pred_contrib=True)[0]``
    instead (TreeSHAP, ~0.4 ms for 250 trees: used for explanations only)."""

    def __init__(
        self,
        booster: Any,
        n_features: int | None = None,
        use_c_api: bool = True,
        contrib: bool = False,
    ):
        self.booster = booster  # keeps the C handle alive as long as the FastConfig
        self.n_features = int(n_features if n_features is not None else booster.num_feature())
        if self.n_features != booster.num_feature():
            raise ValueError(f"booster has {booster.num_feature()} features, not {self.n_features}")
        self.contrib = contrib
        # raw scores per row (num_class)
        self.n_outputs = 1 if contrib else int(booster.num_model_per_iteration())
        self._buf = np.zeros(self.n_features, dtype=np.float32)
        self._out = np.zeros(self.n_features + 1 if contrib else self.n_outputs, dtype=np.float64)
        self._lock = threading.Lock()
        self._cfg: ctypes.c_void_p | None = None
        self.kind = "booster"
        if use_c_api:
            try:
                self._init_c_api()
                self.kind = "c-api"
            except Exception as e:  # an old or unusual LightGBM build: stay exact, just slower
                log.warning(
                    "LightGBM single-row fast path unavailable (%s); using Booster.predict", e
                )
                self._cfg = None

    def _init_c_api(self) -> None:
        cb = c_booster(self.booster)
        self._c_booster = cb  # keeps the handle alive as long as the FastConfig
        _LIB = cb.lib
        cfg = ctypes.c_void_p()
        lgbm_capi.check(
            _LIB,
            _LIB.LGBM_BoosterPredictForMatSingleRowFastInit(
                cb.handle,
                ctypes.c_int(_PREDICT_CONTRIB if self.contrib else _PREDICT_RAW_SCORE),
                ctypes.c_int(0),
                ctypes.c_int(-1),
                ctypes.c_int(_DTYPE_FLOAT32),
                ctypes.c_int32(self.n_features),
                ctypes.c_char_p(b"num_threads=1"),
                ctypes.byref(cfg),
            ),
        )
        self._cfg = cfg
        self._lib = _LIB
        self._fn = _LIB.LGBM_BoosterPredictForMatSingleRowFast
        self._out_len = ctypes.c_int64(0)
        # the arguments never change: the row is copied into the same buffer each call
        self._args = (
            cfg,
            self._buf.ctypes.data_as(ctypes.c_void_p),
            ctypes.byref(self._out_len),
            self._out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
        )

    def __call__(self, x: np.ndarray) -> float:
        """Raw margin (log-odds) of one feature row (cast to float32 like the batch path)."""
        with self._lock:
            self._buf[:] = x
            if self._cfg is None:
                return float(
                    self.booster.predict(self._buf[None, :], raw_score=True, num_threads=1)[0]
                )
            if self._fn(*self._args) != 0:
                # raises LightGBMCError with LightGBM's last error message
                lgbm_capi.check(self._lib, -1)
            return float(self._out[0])

    def outputs(self, x: np.ndarray) -> list[float]:
        """Every raw score of one row (``num_class`` of them: see ``StackedPredictor``), as Python floats."""
        with self._lock:
            self._buf[:] = x
            if self._cfg is None:
                return [
                    float(v)
                    for v in np.ravel(
                        self.booster.predict(self._buf[None, :], raw_score=True, num_threads=1)
                    )
                ]
            if self._fn(*self._args) != 0:
                lgbm_capi.check(self._lib, -1)
            return self._out.tolist()

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """TreeSHAP contributions of one row (``contrib=True`` predictors): n_features values, then the bias."""
        if not self.contrib:
            raise ValueError("built without contrib=True")
        with self._lock:
            self._buf[:] = x
            if self._cfg is None:
                return np.asarray(
                    self.booster.predict(self._buf[None, :], pred_contrib=True, num_threads=1)[0],
                    dtype=np.float64,
                )
            if self._fn(*self._args) != 0:
                lgbm_capi.check(self._lib, -1)
            return self._out.copy()

    def close(self) -> None:
        """Free the C FastConfig (later calls fall back to Booster.predict)."""
        cfg = getattr(self, "_cfg", None)  # absent when __init__ failed early
        self._cfg = None
        if cfg is not None:
            try:
                self._lib.LGBM_FastConfigFree(cfg)
            except Exception:  # interpreter shutdown
                pass

    def __del__(self) -> None:
        self.close()

    def __getstate__(self) -> Any:  # a C handle cannot be copied
        raise TypeError("SingleRowPredictor holds a C handle; build a new one from the booster")


# ------------------------------------------------------------- many small boosters, one call

_TREE_HEADER = re.compile(r"(?m)^Tree=\d+\n")
_SPLIT_FEATURE = re.compile(r"(?m)^split_feature=(.*)$")
_THRESHOLD = re.compile(r"(?m)^threshold=(.*)$")
# a one-leaf tree that adds 0.0 (pads a booster that stopped early: x + 0.0 == x)
_ZERO_TREE = (
    "num_leaves=1\nnum_cat=0\nsplit_feature=\nsplit_gain=\nthreshold=\ndecision_type=\nleft_child=\n"
    "right_child=\nleaf_value=0\nleaf_weight=\nleaf_count=\ninternal_value=\ninternal_weight=\n"
    "internal_count=\nis_linear=0\nshrinkage=1\n\n\n"
)


def _tree_blocks(text: str) -> list[str]:
    """The tree texts of a LightGBM model text, without their ``Tree=i`` headers."""
    start = text.index("\nTree=0\n") + 1
    end = text.index("end of trees")
    return _TREE_HEADER.split(text[start:end])[1:]


def _remapped(fmap: list[int]) -> Callable[[re.Match[str]], str]:
    """A tree's ``split_feature`` line with its feature indices mapped into the stacked model's columns."""

    def sub(m: re.Match[str]) -> str:
        return "split_feature=" + " ".join(str(fmap[int(v)]) for v in m.group(1).split())

    return sub


def stack_boosters(boosters: list[Any], feature_maps: list[list[int]], n_features: int) -> Any:
    """One LightGBM model whose K raw outputs are the K boosters' raw scores.

    Written as a K-class model: iteration i holds tree i of every booster (class k =
    booster k), with booster k's feature j renumbered to ``feature_maps[k][j]`` of a
    shared row of ``n_features``; a booster with fewer trees is padded with one-leaf
    trees of value 0.  LightGBM's raw K-class prediction adds, per class, that class's
    trees in iteration order, so each output is the booster's own sum in its own order
    (bit-identical; ``StackedPredictor`` checks it on load).  Single-output boosters
    (regression, quantile, binary) only."""
    K = len(boosters)
    texts = [b.model_to_string() for b in boosters]
    for b, t in zip(boosters, texts):
        if b.num_model_per_iteration() != 1 or "is_linear=1" in t:
            raise ValueError("only single-output boosters without linear trees can be stacked")
    trees = [_tree_blocks(t) for t in texts]
    n_iter = max(len(t) for t in trees)
    head = [
        "tree",
        "version=v4",
        f"num_class={K}",
        f"num_tree_per_iteration={K}",
        "label_index=0",
        f"max_feature_idx={n_features - 1}",
        f"objective=multiclass num_class:{K}",
        "feature_names=" + " ".join(f"f{i}" for i in range(n_features)),
        "feature_infos=" + " ".join(["none"] * n_features),
        "",
        "",
    ]
    parts = ["\n".join(head)]
    for i in range(n_iter):
        for k in range(K):
            if i < len(trees[k]):
                blk = _SPLIT_FEATURE.sub(_remapped(feature_maps[k]), trees[k][i], count=1)
            else:
                blk = _ZERO_TREE
            parts.append(f"Tree={i * K + k}\n{blk}")
    parts.append("end of trees\n\npandas_categorical:null\n")
    return load_booster("".join(parts))


def _probe_rows(
    boosters: list[Any], feature_maps: list[list[int]], n_features: int, n_rows: int, seed: int
) -> np.ndarray:
    """float32 rows whose values sit on both sides of the boosters' own split thresholds, some NaN."""
    thr: dict[int, list[float]] = {}
    for b, fmap in zip(boosters, feature_maps):
        text = b.model_to_string()
        for blk in _tree_blocks(text):
            f, t = _SPLIT_FEATURE.search(blk), _THRESHOLD.search(blk)
            if f and t and f.group(1).strip():
                for j, v in zip(f.group(1).split(), t.group(1).split()):
                    if np.isfinite(float(v)):
                        thr.setdefault(fmap[int(j)], []).append(float(v))
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features))
    for j, vs in thr.items():
        pick = np.asarray(vs)[rng.integers(0, len(vs), n_rows)]
        X[:, j] = (
            pick
            + np.abs(pick) * rng.choice([-1e-3, 0.0, 1e-3], n_rows)
            + rng.choice([-1e-6, 1e-6], n_rows)
        )
    X[rng.random(X.shape) < 0.1] = np.nan
    return X.astype(np.float32)


class StackedPredictor:
    """Raw scores of many small boosters on one float32 row, with one LightGBM C call.

    ``__call__(row)`` returns ``[boosters[k].predict(row[feature_maps[k]], raw_score=True)
    for k]``.  The boosters are stacked into one K-output model (``stack_boosters``) and
    evaluated through ``SingleRowPredictor``: for 60 quantile boosters of 40 trees, one
    call of ~50 µs instead of 60 calls of ~2.5 µs.  On load the stacked outputs are
    compared with each booster's ``Booster.predict`` on probe rows around the boosters'
    own thresholds; any difference (or a LightGBM that cannot read the stacked text)
    falls back to one ``SingleRowPredictor`` per booster (``kind == "separate"``), which
    is exact but slower."""

    def __init__(
        self,
        boosters: list[Any],
        feature_maps: list[list[int]],
        n_features: int,
        use_c_api: bool = True,
        check_rows: int = 32,
        seed: int = 0,
    ):
        self.n_features = int(n_features)
        self.n_outputs = len(boosters)
        self._maps = [np.asarray(m, dtype=np.int64) for m in feature_maps]
        self.kind = "stacked"
        self._stacked: SingleRowPredictor | None = None
        self._each: list[SingleRowPredictor] = []
        try:
            self._stacked = SingleRowPredictor(
                stack_boosters(boosters, feature_maps, self.n_features),
                self.n_features,
                use_c_api=use_c_api,
            )
            if check_rows:
                X = _probe_rows(boosters, feature_maps, self.n_features, check_rows, seed)
                ref = np.column_stack(
                    [
                        b.predict(X[:, m], raw_score=True, num_threads=1)
                        for b, m in zip(boosters, self._maps)
                    ]
                )
                stacked = self._stacked
                got = np.asarray([stacked.outputs(x) for x in X])
                if not np.array_equal(got, ref):
                    raise ValueError(
                        f"stacked outputs differ from the boosters' (max {np.nanmax(np.abs(got - ref)):.3g})"
                    )
        except Exception as e:
            log.warning(
                "stacking %d boosters failed (%s); predicting them one by one", len(boosters), e
            )
            self.kind = "separate"
            self._stacked = None
            self._each = [
                SingleRowPredictor(b, b.num_feature(), use_c_api=use_c_api) for b in boosters
            ]

    def __call__(self, x: np.ndarray) -> list[float]:
        if self._stacked is not None:
            return self._stacked.outputs(x)
        return [p(x[m]) for p, m in zip(self._each, self._maps)]

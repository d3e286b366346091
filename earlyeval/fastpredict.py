"""One-row raw margins of a LightGBM booster, fast enough for every agent step.

``Booster.predict`` on a single row goes through pandas/numpy checks, a fresh
C predictor and a result array each call (~55 µs here for 250 trees).  LightGBM's
C API has a single-row fast path for exactly this case: a ``FastConfig`` built
once (one thread, raw score, float32 rows of a fixed width) and then one C call
per row on a preallocated buffer (~13 µs).  It runs LightGBM's own tree code,
so missing values, default directions and categorical splits are handled exactly
as ``Booster.predict(raw_score=True)`` handles them; the tests check equality on
real feature rows.

We also measured a pure-numpy evaluator of the ``dump_model()`` trees (all trees
at once, level by level): exact too, but ~100 µs per row, slower than
``Booster.predict`` itself, so it is not kept.  If the C symbols are missing
(a LightGBM build without them) the predictor falls back to ``Booster.predict``.

One ``SingleRowPredictor`` holds one C FastConfig; calls are serialized by a
lock, so a predictor may be shared between monitors in different threads.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from typing import Any

import lightgbm as lgb
import numpy as np

log = logging.getLogger(__name__)

_PREDICT_RAW_SCORE = 1  # C_API_PREDICT_RAW_SCORE
_PREDICT_CONTRIB = 3  # C_API_PREDICT_CONTRIB: TreeSHAP values, n_features + 1 (the bias last)
_DTYPE_FLOAT32 = 0  # C_API_DTYPE_FLOAT32: rows are float32, as Featurizer.prefix_matrix stores them


class SingleRowPredictor:
    """``booster.predict(x[None], raw_score=True)[0]`` for one float32 row, via the C fast path.

    With ``contrib=True`` it returns ``booster.predict(x[None], pred_contrib=True)[0]``
    instead (TreeSHAP, ~0.4 ms for 250 trees: used for explanations only)."""

    def __init__(self, booster: lgb.Booster, n_features: int | None = None, use_c_api: bool = True, contrib: bool = False):
        self.booster = booster  # keeps the C handle alive as long as the FastConfig
        self.n_features = int(n_features if n_features is not None else booster.num_feature())
        if self.n_features != booster.num_feature():
            raise ValueError(f"booster has {booster.num_feature()} features, not {self.n_features}")
        self.contrib = contrib
        self._buf = np.zeros(self.n_features, dtype=np.float32)
        self._out = np.zeros(self.n_features + 1 if contrib else 1, dtype=np.float64)
        self._lock = threading.Lock()
        self._cfg: ctypes.c_void_p | None = None
        self.kind = "booster"
        if use_c_api:
            try:
                self._init_c_api()
                self.kind = "c-api"
            except Exception as e:  # an old or unusual LightGBM build: stay exact, just slower
                log.warning("LightGBM single-row fast path unavailable (%s); using Booster.predict", e)
                self._cfg = None

    def _init_c_api(self) -> None:
        from lightgbm.basic import _LIB, _c_str, _safe_call

        cfg = ctypes.c_void_p()
        _safe_call(_LIB.LGBM_BoosterPredictForMatSingleRowFastInit(
            self.booster._handle, ctypes.c_int(_PREDICT_CONTRIB if self.contrib else _PREDICT_RAW_SCORE), ctypes.c_int(0), ctypes.c_int(-1),
            ctypes.c_int(_DTYPE_FLOAT32), ctypes.c_int32(self.n_features), _c_str("num_threads=1"), ctypes.byref(cfg)))
        self._cfg = cfg
        self._lib = _LIB
        self._safe_call = _safe_call
        self._fn = _LIB.LGBM_BoosterPredictForMatSingleRowFast
        self._out_len = ctypes.c_int64(0)
        # the arguments never change: the row is copied into the same buffer each call
        self._args = (cfg, self._buf.ctypes.data_as(ctypes.c_void_p), ctypes.byref(self._out_len),
                      self._out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)))

    def __call__(self, x: np.ndarray) -> float:
        """Raw margin (log-odds) of one feature row (cast to float32 like the batch path)."""
        with self._lock:
            self._buf[:] = x
            if self._cfg is None:
                return float(self.booster.predict(self._buf[None, :], raw_score=True, num_threads=1)[0])
            if self._fn(*self._args) != 0:
                self._safe_call(-1)  # raises LightGBMError with LightGBM's last error message
            return float(self._out[0])

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """TreeSHAP contributions of one row (``contrib=True`` predictors): n_features values, then the bias."""
        if not self.contrib:
            raise ValueError("built without contrib=True")
        with self._lock:
            self._buf[:] = x
            if self._cfg is None:
                return np.asarray(self.booster.predict(self._buf[None, :], pred_contrib=True, num_threads=1)[0], dtype=np.float64)
            if self._fn(*self._args) != 0:
                self._safe_call(-1)
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

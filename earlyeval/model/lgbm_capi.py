"""LightGBM boosters through LightGBM's public C API (``lib_lightgbm``), without importing the lightgbm package.

The very C calls ``lightgbm.Booster.predict`` makes, bit for bit, without the modules its import loads;
``LibraryUnavailable`` when the library cannot be used. Why and how: docs/monitor.md, "LightGBM without the
lightgbm package"; the calls: LightGBM's C API reference (``c_api.h``).
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np

from earlyeval.core.env import env_flag
from earlyeval.core.errors import EarlyEvalError

C_API_DTYPE_FLOAT32 = 0
C_API_DTYPE_FLOAT64 = 1
C_API_PREDICT_NORMAL = 0
C_API_PREDICT_RAW_SCORE = 1
C_API_PREDICT_CONTRIB = 3

_SYMBOLS = (
    "LGBM_GetLastError",
    "LGBM_BoosterLoadModelFromString",
    "LGBM_BoosterFree",
    "LGBM_BoosterGetNumFeature",
    "LGBM_BoosterNumModelPerIteration",
    "LGBM_BoosterGetFeatureNames",
    "LGBM_BoosterSaveModelToString",
    "LGBM_BoosterCalcNumPredict",
    "LGBM_BoosterPredictForMat",
    "LGBM_BoosterGetCurrentIteration",
    "LGBM_BoosterPredictForMatSingleRowFastInit",
    "LGBM_BoosterPredictForMatSingleRowFast",
    "LGBM_FastConfigFree",
)

_lock = threading.Lock()
_lib: ctypes.CDLL | None = None


class LibraryUnavailable(EarlyEvalError, RuntimeError):
    """lib_lightgbm cannot be found or lacks a C entry point this module uses."""


class LightGBMCError(EarlyEvalError, RuntimeError):
    """An error reported by lib_lightgbm (``LGBM_GetLastError``)."""


def library_path() -> Path:
    """The lib_lightgbm shipped by the installed lightgbm package (located, not imported)."""
    spec = importlib.util.find_spec("lightgbm")
    if spec is None or not spec.submodule_search_locations:
        raise LibraryUnavailable("the lightgbm package is not installed")
    name = {"win32": "lib_lightgbm.dll", "darwin": "lib_lightgbm.dylib"}.get(
        sys.platform, "lib_lightgbm.so"
    )
    for (
        base
    ) in spec.submodule_search_locations:  # the package's own search order (lightgbm/libpath.py)
        for p in (Path(base).parent / name, Path(base) / "bin" / name, Path(base) / "lib" / name):
            if p.is_file():
                return p
    raise LibraryUnavailable(
        f"no {name} in the lightgbm package at {list(spec.submodule_search_locations)}"
    )


def library() -> ctypes.CDLL:
    """lib_lightgbm, loaded once (the same handle the lightgbm package gets if it is imported too)."""
    global _lib
    if not env_flag(
        "EARLYEVAL_LGBM_CAPI", True
    ):  # read at every call: a malformed value is refused by name
        raise LibraryUnavailable("disabled by EARLYEVAL_LGBM_CAPI=0")
    with _lock:
        if _lib is None:
            path = library_path()
            try:
                lib = ctypes.cdll.LoadLibrary(str(path))
            except OSError as e:
                raise LibraryUnavailable(f"cannot load {path}: {e}") from e
            missing = [s for s in _SYMBOLS if not hasattr(lib, s)]
            if missing:
                raise LibraryUnavailable(f"{path} lacks {', '.join(missing)}")
            lib.LGBM_GetLastError.restype = ctypes.c_char_p
            _lib = lib
        return _lib


def check(lib: ctypes.CDLL, ret: int) -> None:
    """Raise ``LightGBMCError`` with LightGBM's message when a C call returned non-zero."""
    if ret != 0:
        raise LightGBMCError(lib.LGBM_GetLastError().decode(errors="replace"))


def _c_str(s: str) -> ctypes.c_char_p:
    return ctypes.c_char_p(s.encode("utf-8"))


class CBooster:
    """A loaded LightGBM model: the part of ``lightgbm.Booster`` the live path uses, on the C API.

    ``predict(X, raw_score=..., pred_contrib=..., num_threads=...)`` returns what
    ``lightgbm.Booster.predict`` returns for a 2-d float array (all iterations, as for a
    booster loaded from text).  ``handle`` and ``lib`` are public so that ``fastpredict``
    can build a single-row fast config on it."""

    def __init__(self, model_str: str):
        self.lib = library()
        self.handle: ctypes.c_void_p | None = ctypes.c_void_p()
        n_iter = ctypes.c_int(0)
        check(
            self.lib,
            self.lib.LGBM_BoosterLoadModelFromString(
                _c_str(model_str), ctypes.byref(n_iter), ctypes.byref(self.handle)
            ),
        )
        out = ctypes.c_int(0)
        check(self.lib, self.lib.LGBM_BoosterGetNumFeature(self.handle, ctypes.byref(out)))
        self._num_feature = int(out.value)
        check(self.lib, self.lib.LGBM_BoosterNumModelPerIteration(self.handle, ctypes.byref(out)))
        self._per_iter = int(out.value)
        # the line the lightgbm package appends to the C model text (its pandas categories: none for numpy-trained models)
        i = model_str.rfind("\npandas_categorical:")
        self._pandas_line = (
            model_str[i + 1 :].split("\n", 1)[0] if i >= 0 else "pandas_categorical:null"
        )

    def __del__(self) -> None:
        h = getattr(self, "handle", None)
        if h is not None and h.value:
            try:
                self.lib.LGBM_BoosterFree(h)
            except Exception:  # interpreter shutdown
                pass
            self.handle = None

    def __getstate__(self) -> Any:
        raise TypeError("CBooster holds a C handle; save model_to_string() instead")

    def num_feature(self) -> int:
        return self._num_feature

    def num_model_per_iteration(self) -> int:
        return self._per_iter

    def current_iteration(self) -> int:
        out = ctypes.c_int(0)
        check(self.lib, self.lib.LGBM_BoosterGetCurrentIteration(self.handle, ctypes.byref(out)))
        return int(out.value)

    def feature_name(self) -> list[str]:
        n = self._num_feature
        size = 255
        while True:
            bufs = [ctypes.create_string_buffer(size) for _ in range(n)]
            ptrs = (ctypes.c_char_p * n)(*[ctypes.c_char_p(ctypes.addressof(b)) for b in bufs])
            out_n, need = ctypes.c_int(0), ctypes.c_size_t(0)
            check(
                self.lib,
                self.lib.LGBM_BoosterGetFeatureNames(
                    self.handle,
                    ctypes.c_int(n),
                    ctypes.byref(out_n),
                    ctypes.c_size_t(size),
                    ctypes.byref(need),
                    ptrs,
                ),
            )
            if need.value <= size:
                return [b.value.decode("utf-8") for b in bufs[: out_n.value]]
            size = int(need.value)

    def model_to_string(self) -> str:
        """The model text, as ``lightgbm.Booster.model_to_string()`` writes it (all iterations, split importance)."""
        size = 1 << 20
        while True:
            buf = ctypes.create_string_buffer(size)
            need = ctypes.c_int64(0)
            check(
                self.lib,
                self.lib.LGBM_BoosterSaveModelToString(
                    self.handle,
                    ctypes.c_int(0),
                    ctypes.c_int(-1),
                    ctypes.c_int(0),
                    ctypes.c_int64(size),
                    ctypes.byref(need),
                    buf,
                ),
            )
            if need.value <= size:
                return buf.value.decode("utf-8") + "\n" + self._pandas_line + "\n"
            size = int(need.value)

    def predict(
        self, X: Any, raw_score: bool = False, pred_contrib: bool = False, num_threads: int = 1
    ) -> np.ndarray:
        """``lightgbm.Booster.predict`` for a 2-d array: float32/float64 rows kept, anything else cast to float32."""
        mat = np.asarray(X)
        if mat.ndim != 2:
            raise ValueError("Input numpy.ndarray or list must be 2 dimensional")
        if mat.shape[1] != self._num_feature:
            raise ValueError(
                f"the booster has {self._num_feature} features, the data {mat.shape[1]}"
            )
        if mat.dtype not in (np.float32, np.float64):
            mat = mat.astype(np.float32)
        if not mat.flags.c_contiguous:
            mat = np.ascontiguousarray(mat)
        dtype = C_API_DTYPE_FLOAT32 if mat.dtype == np.float32 else C_API_DTYPE_FLOAT64
        kind = (
            C_API_PREDICT_CONTRIB
            if pred_contrib
            else C_API_PREDICT_RAW_SCORE
            if raw_score
            else C_API_PREDICT_NORMAL
        )
        n = ctypes.c_int64(0)
        check(
            self.lib,
            self.lib.LGBM_BoosterCalcNumPredict(
                self.handle,
                ctypes.c_int(mat.shape[0]),
                ctypes.c_int(kind),
                ctypes.c_int(0),
                ctypes.c_int(-1),
                ctypes.byref(n),
            ),
        )
        out = np.empty(int(n.value), dtype=np.float64)
        got = ctypes.c_int64(0)
        check(
            self.lib,
            self.lib.LGBM_BoosterPredictForMat(
                self.handle,
                mat.ctypes.data_as(ctypes.c_void_p),
                ctypes.c_int(dtype),
                ctypes.c_int32(mat.shape[0]),
                ctypes.c_int32(mat.shape[1]),
                ctypes.c_int(1),
                ctypes.c_int(kind),
                ctypes.c_int(0),
                ctypes.c_int(-1),
                _c_str(f"num_threads={int(num_threads)}"),
                ctypes.byref(got),
                out.ctypes.data_as(ctypes.POINTER(ctypes.c_double)),
            ),
        )
        if got.value != n.value:
            raise LightGBMCError(f"LightGBM returned {got.value} predictions, expected {n.value}")
        n_rows = mat.shape[0]
        if pred_contrib or self._per_iter > 1:
            return out.reshape(n_rows, -1)
        return out


def load_booster(model_str: str) -> Any:
    """A ``CBooster`` when lib_lightgbm is usable, else a ``lightgbm.Booster`` (which imports the package)."""
    try:
        library()
    except LibraryUnavailable:
        import lightgbm as lgb  # the fallback: exact, heavier

        return lgb.Booster(model_str=model_str)
    return CBooster(model_str)

"""Why a monitor halted: LightGBM's TreeSHAP contributions (``pred_contrib``) of one feature row, signed toward
an outcome.  About a millisecond a call, so a monitor asks only when halting unless told otherwise."""

from __future__ import annotations

import math
import threading
from typing import Any, Mapping

import numpy as np

from earlyeval.model.fastpredict import SingleRowPredictor


class Explainer:
    """Top features of a row for the boosters of one model; the contribution predictors are built on first use."""

    def __init__(
        self,
        boosters: Mapping[str, Any],
        feature_names: list[str],
        platt_s: Any,
        platt_f: Any = None,
        *,
        use_c_api: bool = True,
    ):
        self.boosters = dict(boosters)
        self.feature_names = list(feature_names)
        self.platt = {"success": platt_s, "failure": platt_f}
        self.mirror = "failure" not in self.boosters
        self.use_c_api = use_c_api
        self._contrib: dict[str, SingleRowPredictor] = {}
        self._lock = threading.Lock()

    def _predictor(self, name: str) -> SingleRowPredictor:
        with self._lock:
            if name not in self._contrib:
                self._contrib[name] = SingleRowPredictor(
                    self.boosters[name],
                    len(self.feature_names),
                    use_c_api=self.use_c_api,
                    contrib=True,
                )
            return self._contrib[name]

    def top(self, x: np.ndarray, outcome: str = "success", k: int = 5) -> list[tuple[str, float]]:
        """The k features that pushed most toward ``outcome`` (positive contributions to its log-odds only)."""
        name = "failure" if outcome == "failure" and not self.mirror else "success"
        contrib = self._predictor(name).contributions(x)[:-1]
        # Platt maps margin f to p = 1/(1+exp(a f + b)): p rises with f when a < 0
        sign = -1.0 if self.platt[name].a > 0 else 1.0
        if outcome == "failure" and name == "success":
            sign = -sign  # mirror: P(failure) = 1 - P(success)
        c = sign * contrib
        order = np.argsort(-c, kind="stable")[:k]
        return [
            (self.feature_names[i], float(c[i])) for i in order if c[i] > 0 and math.isfinite(c[i])
        ]

"""The thresholds a halting process holds: the model's pair, a run-time override, or a warm start's.

A model directory's ``thresholds.json`` is covered by the manifest hash (editing it is refused at load); another
operating point is an override (``Monitor.load(dir, thresholds=...)``, ``earlyeval score --thresholds TS,TF``),
replacing (tau_s, tau_f) in memory only.  How thresholds are chosen is ``earlyeval.fitting.thresholds``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.numerics import expit, logit

EPS = 1e-6

SOURCES = ("model", "override", "warm start")


class ThresholdError(EarlyEvalError, ValueError):
    """A threshold override that is not a pair of finite numbers in (0.5, 1]."""


def parse_thresholds(spec: str) -> tuple[float, float]:
    """``"TS,TF"`` (e.g. ``"0.9,0.95"``) -> (tau_s, tau_f), validated."""
    parts = [p.strip() for p in str(spec).split(",")]
    if len(parts) != 2 or not all(parts):
        raise ThresholdError(
            f"expected TS,TF (two numbers in (0.5, 1], e.g. 0.9,0.95), not {spec!r}"
        )
    try:
        vals = tuple(float(p) for p in parts)
    except ValueError:
        raise ThresholdError(
            f"expected TS,TF (two numbers in (0.5, 1], e.g. 0.9,0.95), not {spec!r}"
        ) from None
    return check_pair(vals)


def check_pair(pair: Sequence[Any]) -> tuple[float, float]:
    """Validate (tau_s, tau_f): numbers, finite, 0.5 < tau <= 1 (a p >= tau below 0.5 would halt on both sides)."""
    out = []
    for name, v in zip(("success", "failure"), pair):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ThresholdError(f"threshold {name}={v!r} is not a number")
        v = float(v)
        if not math.isfinite(v) or not (0.5 < v <= 1.0):
            raise ThresholdError(f"threshold {name}={v!r} must be finite and in (0.5, 1]")
        out.append(v)
    return out[0], out[1]


def override(
    model_thresholds: Mapping[str, Any], spec: Sequence[Any] | Mapping[str, Any] | str
) -> dict[str, Any]:
    """The model's thresholds dict with (tau_s, tau_f) replaced by ``spec``: a (tau_s, tau_f) pair, a mapping
    with ``success``/``failure`` (and optionally ``min_halt_step``), or a ``"TS,TF"`` string."""
    out = dict(model_thresholds)
    if isinstance(spec, str):
        ts, tf = parse_thresholds(spec)
    elif isinstance(spec, Mapping):
        unknown = set(spec) - {"success", "failure", "min_halt_step"}
        if unknown or not {"success", "failure"} <= set(spec):
            raise ThresholdError(
                f"a thresholds mapping needs 'success' and 'failure' (optionally 'min_halt_step'), "
                f"got keys {sorted(spec)}"
            )
        ts, tf = check_pair((spec["success"], spec["failure"]))
        if "min_halt_step" in spec:
            mh = spec["min_halt_step"]
            if isinstance(mh, bool) or not isinstance(mh, int) or mh < 1:
                raise ThresholdError(f"min_halt_step={mh!r} must be an integer >= 1")
            out["min_halt_step"] = mh
    elif isinstance(spec, Sequence) and len(spec) == 2:
        ts, tf = check_pair(spec)
    else:
        raise ThresholdError(
            f"thresholds must be a (tau_s, tau_f) pair, a mapping or 'TS,TF', not {spec!r}"
        )
    out["success"], out["failure"] = ts, tf
    out.pop("live_failure", None)  # an explicit pair is the operating point of every mode
    return out


def source_of(
    used: Mapping[str, Any], model_thresholds: Mapping[str, Any], warm: bool = False
) -> str:
    """Where the thresholds a monitor halts with came from."""
    if warm:
        return "warm start"
    same = all(
        float(used[k]) == float(model_thresholds[k]) for k in ("success", "failure")
    ) and int(used.get("min_halt_step", 1)) == int(model_thresholds.get("min_halt_step", 1))
    return "model" if same else "override"


@dataclass
class Recalibration:
    """Platt on the model's log-odds, refitted on warm-start runs."""

    a: float
    b: float

    def __call__(self, p: np.ndarray) -> np.ndarray:
        z = logit(np.clip(p, EPS, 1 - EPS))
        out: np.ndarray = expit(self.a * z + self.b)
        return out


IDENTITY = Recalibration(1.0, 0.0)  # no recalibration


@dataclass(frozen=True)
class WarmStart:
    """What a warm start fitted (``earlyeval.fitting.warm.warm_start``), handed to ``Monitor.use_warm_start``:
    the thresholds to halt with, the recalibration of P(success), the runs it read and the rule's selection."""

    success: float
    failure: float
    calibration: Recalibration
    runs: tuple[str, ...]
    selection: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("success", "failure"):  # NEVER (> 1) is a legal "never halt on this side"
            v = getattr(self, name)
            if (
                isinstance(v, bool)
                or not isinstance(v, (int, float))
                or not math.isfinite(v)
                or v <= 0.5
            ):
                raise ThresholdError(
                    f"warm start threshold {name}={v!r} must be a finite number above 0.5"
                )
        if not isinstance(self.calibration, Recalibration):
            raise ThresholdError(
                f"warm start calibration must be a Recalibration, not {type(self.calibration).__name__}"
            )

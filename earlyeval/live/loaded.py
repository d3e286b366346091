"""A model directory as a monitored process holds it: the single-row predictors, the Platt maps, the live budget
model, the explainer and the config's task table, loaded once and shared by a monitor and every monitor spawned
from it."""

from __future__ import annotations

import dataclasses
import logging
import math

import numpy as np

from earlyeval.config.monitor_config import MonitorConfig
from earlyeval.core.errors import SettingError
from earlyeval.core.trajectory import Task
from earlyeval.features.evidence import DEFAULT_RULE, EvidenceRule, evidence_rule
from earlyeval.live.explain import Explainer
from earlyeval.live.inputs import task_table
from earlyeval.live.remaining_budget import DEFAULT_BUDGET_DIMS, LiveBudget, load_live_budget
from earlyeval.model.fastpredict import SingleRowPredictor
from earlyeval.model.modeldir import ModelBundle, load_model_dir
from earlyeval.model.thresholds import WarmStart, override

# the Monitor's logger: these lines are the Monitor's
log = logging.getLogger("earlyeval.live.monitor")


class LoadedModel:
    """The prediction side of one ``ModelBundle``; read-only after construction, so monitors on several threads
    share it (the predictors are thread-safe, the explainer builds its predictors under their own lock)."""

    def __init__(self, bundle: ModelBundle, config: MonitorConfig):
        """What ``config`` asks for: LightGBM's C path or not (``use_c_api``), the budget dimensions (``budget``),
        the task table (``tasks``) and another operating point than the model's own (``thresholds``, in memory
        only: the directory is not changed)."""
        table = config.threshold_table()
        if table is not None:
            bundle = dataclasses.replace(bundle, thresholds=override(bundle.thresholds, table))
        self.bundle = bundle
        use_c_api = config.use_c_api
        budget = DEFAULT_BUDGET_DIMS if config.budget is None else config.budget
        self.feature_names: list[str] = bundle.featurizer.names
        model = bundle.model
        if list(model.feature_names_in_) != self.feature_names:
            raise ValueError("the model's feature names differ from the featurizer's")
        self.use_c_api = use_c_api
        n = len(self.feature_names)
        self.raw: dict[str, SingleRowPredictor] = {
            k: SingleRowPredictor(b, n, use_c_api=use_c_api) for k, b in model.boosters_.items()
        }
        self.budget_model: LiveBudget | None
        self.budget_status: str
        self.budget_model, self.budget_status = (
            load_live_budget(
                bundle, self.feature_names, use_c_api, None if budget is True else tuple(budget)
            )
            if budget is not False
            else (None, "off (budget=False)")
        )
        self.tasks: dict[str, Task] = task_table(config.tasks)
        # what a success halt needs the run to have produced itself (the model's, as its evaluation measured it)
        self.evidence: EvidenceRule = evidence_rule(evidence_name(bundle))
        say_forecast(bundle)
        self.platt_s = model.platt_["success"]
        self.platt_f = model.platt_.get("failure")
        self.mirror = "failure" not in model.boosters_  # P(failure) = 1 - P(success)
        self.explainer = Explainer(
            model.boosters_, self.feature_names, self.platt_s, self.platt_f, use_c_api=use_c_api
        )

    @classmethod
    def load(cls, config: MonitorConfig) -> LoadedModel:
        """``config.model`` loaded and verified (``model.modeldir``: its signature checked when
        ``config.require_signature``)."""
        if config.model is None:
            raise SettingError(
                "MonitorConfig", "model", "missing (the directory `earlyeval train` wrote)"
            )
        bundle = load_model_dir(
            config.model, require_signature=config.require_signature, key=config.key
        )
        return cls(bundle, config)

    @property
    def predictor_kind(self) -> str:
        """ "c-api" (LightGBM's single-row fast path) or "booster" (Booster.predict fallback)."""
        return self.raw["success"].kind

    def proba(self, x: np.ndarray, warm: WarmStart | None = None) -> tuple[float, float]:
        """Calibrated (P(success), P(failure)) of one float32 feature row, as OutcomeModel.predict_proba (then a
        warm start's recalibration).  A raw margin that is not finite gives NaN, never a confident 0 or 1."""
        ms = float(self.raw["success"](x))
        ps = float(self.platt_s(ms)) if math.isfinite(ms) else math.nan
        if warm is not None:  # warm start: recalibrated as adapt.recalibrated does offline
            ps = float(warm.calibration(np.asarray(ps))) if math.isfinite(ps) else math.nan
            return ps, 1.0 - ps
        if self.mirror:
            return ps, 1.0 - ps
        mf = float(self.raw["failure"](x))
        return ps, float(self.platt_f(mf)) if math.isfinite(mf) else math.nan


def evidence_name(bundle: ModelBundle) -> str:
    """The success evidence rule a model was trained and evaluated with: its thresholds', else its training
    config's, else (a directory written before the rule) the default."""
    th, cfg = bundle.thresholds, (bundle.training or {}).get("config") or {}
    return str(th.get("success_evidence") or cfg.get("success_evidence") or DEFAULT_RULE)


def say_forecast(bundle: ModelBundle) -> None:
    """Log the model's forecast (``earlyeval train``: will it pay for a new agent), once per loaded model: a
    warning when it halts below its target or is unsure, else an info line."""
    fc = (bundle.training or {}).get("forecast") or {}
    line = fc.get("sentence") if isinstance(fc, dict) else None
    if isinstance(line, str) and line:
        (log.warning if line.startswith("WARNING") else log.info)("earlyeval model: %s", line)

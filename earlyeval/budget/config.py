"""Budget settings: quantile levels, booster settings, the evaluation's options.

The dimensions and the shipped file's format are ``earlyeval.model.budget`` (the live budget reads them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


ALPHAS: tuple[float, ...] = (0.05, 0.1, 0.5, 0.9, 0.95)
LEVELS: tuple[float, ...] = (0.8, 0.9)
BUDGET_LGBM: dict[str, Any] = {  # 40 x 0.2: same held-out pinball loss as 100 x 0.1 on tau2, 3x faster
    "n_estimators": 40,
    "learning_rate": 0.2,
    "num_leaves": 15,
    "min_child_samples": 40,
    "colsample_bytree": 0.8,
    "reg_lambda": 1.0,
    "max_bin": 63,
}
SMALL = "small-runs"  # name of the group of small agents held out together


@dataclass
class BudgetConfig:
    """Settings of the budget evaluation; defaults are the ones in the report."""

    alphas: tuple = ALPHAS
    levels: tuple = LEVELS
    lgbm_params: dict[str, Any] = field(default_factory=lambda: dict(BUDGET_LGBM))
    max_prefixes_per_run: int = 8  # evenly spaced training prefixes per run (weights stay 1/run)
    max_folds: int = 3
    # with the outcome rule's inner_holdout "scaffold" (SWE-bench): one calibration fold per scaffold (a
    # leave-one-scaffold-out calibration, calibration.agent_folds), up to this many folds
    max_scaffold_folds: int = 8
    score_weighting: str = "agent"  # agent | run
    # the CQR correction (quantiles.CrossConformalQuantiles): "agent" -- per calibration agent group its own
    # correction, then the ceil(agent_quantile (n + 1))-th smallest of the n groups' (the agent is the
    # exchangeable unit); "pooled" -- the level (1 + 1/n_runs) quantile of every calibration row's score
    calibration: str = "agent"
    agent_quantile: float = 0.5
    budget_quantile: float = 0.75  # B = this quantile of run totals (per dimension)
    feasible_threshold: float = 0.5
    max_cost_pp: float = 2.0
    taus: tuple = tuple(np.round(np.arange(0.0, 0.605, 0.02), 2).tolist())
    free_opening_formats: tuple = ("tau2",)
    min_groups: int = 2  # a dimension needs this many agent groups to be calibrated honestly
    seed: int = 0
    n_jobs: int = 1  # LightGBM threads per booster: 2 threads on 2 busy cores is 10x slower than 1
    n_workers: int = 2  # held-out groups evaluated side by side (threads)
    n_example_runs: int = 4

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["taus"] = list(self.taus)
        return d

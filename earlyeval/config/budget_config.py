"""Budget settings: quantile levels, booster settings, the evaluation's options.

The dimensions and the shipped file's format are ``earlyeval.model.spend`` (the live budget reads them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from earlyeval.config.records import Record, setting
from earlyeval.config.schema import Any_, Choice, Int, ListOf, Num, Str, Table

ALPHAS: tuple[float, ...] = (0.05, 0.1, 0.5, 0.9, 0.95)
LEVELS: tuple[float, ...] = (0.8, 0.9)
BUDGET_LGBM: dict[
    str, Any
] = {  # 40 x 0.2: same held-out pinball loss as 100 x 0.1 on tau2, 3x faster
    "n_estimators": 40,
    "learning_rate": 0.2,
    "num_leaves": 15,
    "min_child_samples": 40,
    "colsample_bytree": 0.8,
    "reg_lambda": 1.0,
    "max_bin": 63,
}
SMALL = "small-runs"  # name of the group of small agents held out together
_OPEN_UNIT = Num(0.0, 1.0, lo_open=True, hi_open=True)


@dataclass(frozen=True)
class BudgetConfig(Record):
    """Settings of the budget evaluation and the shipped budget; defaults are the ones in the report. Each field
    is checked where it is declared (``config.records``)."""

    alphas: tuple = setting(ListOf(_OPEN_UNIT, nonempty=True), ALPHAS, cast=tuple)
    levels: tuple = setting(ListOf(_OPEN_UNIT, nonempty=True), LEVELS, cast=tuple)
    lgbm_params: dict[str, Any] = setting(
        Table(extra=Any_(), what="a table of LightGBM parameters"),
        factory=lambda: dict(BUDGET_LGBM),
    )
    # evenly spaced training prefixes per run (weights stay 1/run)
    max_prefixes_per_run: int = setting(Int(1, 100_000), 8)
    max_folds: int = setting(Int(1, 1_000), 3)
    # with the outcome rule's inner_holdout "scaffold" (SWE-bench): one calibration fold per scaffold (a
    # leave-one-scaffold-out calibration, calibration.agent_folds), up to this many folds
    max_scaffold_folds: int = setting(Int(1, 1_000), 8)
    score_weighting: str = setting(Choice(("agent", "run")), "agent")
    # the CQR correction (quantiles.CrossConformalQuantiles): "agent" -- per calibration agent group its own
    # correction, then the ceil(agent_quantile (n + 1))-th smallest of the n groups' (the agent is the
    # exchangeable unit); "pooled" -- the level (1 + 1/n_runs) quantile of every calibration row's score
    calibration: str = setting(Choice(("agent", "pooled")), "agent")
    agent_quantile: float = setting(Num(0.0, 1.0), 0.5)
    # B = this quantile of run totals
    budget_quantile: float = setting(Num(0.0, 1.0, lo_open=True), 0.75)
    feasible_threshold: float = setting(Num(0.0, 1.0), 0.5)
    max_cost_pp: float = setting(Num(0.0, 100.0), 2.0)
    taus: tuple = setting(
        ListOf(Num(0.0, 1.0), nonempty=True),
        tuple(np.round(np.arange(0.0, 0.605, 0.02), 2).tolist()),
        cast=tuple,
    )
    free_opening_formats: tuple = setting(ListOf(Str(nonempty=True)), ("tau2",), cast=tuple)
    # a dimension needs this many agent groups to be calibrated honestly
    min_groups: int = setting(Int(1, 1_000), 2)
    seed: int = setting(Int(0, 2**63 - 1), 0)
    # LightGBM threads per booster: 2 threads on 2 busy cores is 10x slower than 1
    n_jobs: int = setting(Int(1, 1024), 1)
    n_workers: int = setting(Int(1, 1024), 2)  # held-out groups evaluated side by side (threads)
    n_example_runs: int = setting(Int(0, 100_000), 4)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["taus"] = list(self.taus)
        return d

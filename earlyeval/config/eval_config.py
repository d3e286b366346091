"""The settings of `train` and `evaluate` (``EvalConfig``): one checked record that a catalog's [settings], the
CLI's options and Python callers all build. Standard library only: the catalog reader, below every model, makes it.
What each setting does: docs/evaluation.md; why records: docs/architecture.md, "One schema for every setting"."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from earlyeval.config.records import Record, file_schema, setting
from earlyeval.config.schema import PLUGIN, Any_, Bool, Choice, Int, ListOf, Num, OneOf, Str, Table
from earlyeval.core.decision import NEVER

__all__ = ["DEFAULT_LGBM", "EvalConfig", "SETTINGS", "TAU_GRID"]

# the threshold grid the rules choose from: 0.50-0.85 by 0.05, 0.90-0.99 by 0.01, 0.995, 0.998, and "never"
TAU_GRID: tuple[float, ...] = (
    0.5,
    0.55,
    0.6,
    0.65,
    0.7,
    0.75,
    0.8,
    0.85,
    0.9,
    0.91,
    0.92,
    0.93,
    0.94,
    0.95,
    0.96,
    0.97,
    0.98,
    0.99,
    0.995,
    0.998,
    NEVER,
)

# the shipped LightGBM settings (``OutcomeModel(lgbm_params=None)``)
DEFAULT_LGBM: dict[str, Any] = {
    "n_estimators": 120,
    "learning_rate": 0.1,
    "max_bin": 63,
    "num_leaves": 15,
    "min_child_samples": 40,
    "subsample": 0.8,
    "subsample_freq": 1,
    "colsample_bytree": 0.8,
    "reg_lambda": 1.0,
}

_PATTERNS = ListOf(Str(nonempty=True, what="an fnmatch pattern"), unique=True)
_TAU = Num(0.5, 1e9, why="a threshold is a probability above 0.5, or above 1 for never")
_PEER = Table(
    {"strength": Num(0.0, 1e6, lo_open=True), "counts": Bool()}, what="a table {strength, counts}"
)
# the Wilson bound's confidence: 1.0 is an infinite z (a NaN bound), 0 a bound above the estimate; "none" (a
# file's word) or None: the point estimate
_CONFIDENCE = OneOf(
    (
        Num(
            0.0,
            1.0,
            lo_open=True,
            hi_open=True,
            why="at 1.0 the Wilson bound's z is infinite and every bound NaN; 'none' = the point estimate",
        ),
        Choice(("none",)),
    )
)


@dataclass(frozen=True)
class EvalConfig(Record):
    """How `train` and `evaluate` fit and judge models; each field is checked where it is declared."""

    families: list[str] = setting(
        ListOf(PLUGIN, nonempty=True, unique=True),
        key="model_families",
        factory=lambda: ["behaviour", "gold", "prior"],
    )
    min_steps: int = setting(Int(1, 100_000), 10)
    holdout_min_runs: int = setting(Int(1, 10_000_000), 100)
    # the recall (or accuracy) every inner agent must reach: below 0.5 a coin would do
    target_accuracy: float = setting(Num(0.5, 1.0, lo_open=True), 0.95)
    taus: tuple = setting(
        ListOf(_TAU, nonempty=True, unique=True), TAU_GRID, in_file=False, cast=tuple
    )
    min_halt_step: int = setting(Int(1, 1_000_000), 1, in_file=False)
    seed: int = setting(Int(0, 2**63 - 1), 0, in_file=False)
    twin: str = setting(Choice(("mirror", "flipped", "balanced")), "mirror")
    lgbm_params: dict[str, Any] = setting(
        Table(extra=Any_(), what="a table of LightGBM parameters"),
        factory=lambda: dict(DEFAULT_LGBM),
        in_file=False,
    )
    monotone: dict[str, int] | None = setting(
        Table(extra=Choice((-1, 0, 1)), what="a table of feature name -> -1, 0 or 1"),
        None,
        optional=True,
    )
    # features left out (ablations)
    drop_features: tuple = setting(_PATTERNS, (), in_file=False, cast=tuple)
    # if set, the only features the model may read: the others stay as columns, masked to NaN (so a model of
    # the task-level features has the full model's columns: the prior guard's fallback ships as is)
    only_features: tuple = setting(_PATTERNS, (), in_file=False, cast=tuple)
    # each fold ships the full model only if its inner agents rank at least as well with it as with the
    # task-level model alone (TASK_LEVEL); else that model: evidence adds, never subtracts
    prior_guard: bool = setting(Bool(), False)
    # "as_of": a run's prior sees only history dated before it (the headline); "current": today's whole pool
    prior_pool: str = setting(Choice(("as_of", "current")), "as_of", in_file=False)
    text_params: dict[str, Any] = setting(
        Table(extra=Any_(), what="a table"), factory=dict, in_file=False
    )
    peer_params: dict[str, Any] = setting(_PEER, factory=dict, key="peer_prior")
    threshold_selection: str = setting(Choice(("inner-loao",)), "inner-loao", in_file=False)
    # the rule over the inner units (fitting.thresholds): "agent-quantile" (risk_alpha, risk_delta, risk) or
    # "worst-case" (the Wilson-bounded target on every unit)
    threshold_rule: str = setting(Choice(("agent-quantile", "worst-case")), "worst-case")
    risk_alpha: float = setting(Num(0.0, 0.5, lo_open=True), 0.01)
    risk_delta: float = setting(Num(0.0, 1.0, lo_open=True, hi_open=True), 0.15)
    risk: str = setting(Choice(("mass", "recall", "precision")), "mass")
    # the success side's own risk and alpha (None: `risk`, `risk_alpha`); "recall" bounds the share of a new
    # agent's failed runs credited as successes, whatever its resolve rate
    success_risk: str | None = setting(Choice(("mass", "recall", "precision")), None, optional=True)
    success_alpha: float | None = setting(Num(0.0, 0.5, lo_open=True), None, optional=True)
    # what must hold on every inner agent: "accuracy" >= target, or "recall" of both outcomes >= target
    constraint: str = setting(Choice(("recall", "accuracy")), "recall")
    # the constraint holds for the one-sided Wilson lower bound at this confidence (None: the point estimate)
    confidence: float | None = setting(_CONFIDENCE, 0.9, optional=True)
    # em: label-free prior re-estimation
    adapt: str = setting(Choice(("none", "em")), "none", in_file=False)
    # inner LOAO up to this many agents, else groups
    inner_folds: int = setting(Int(2, 10_000), 6, in_file=False)
    # what the model predicting an inner agent leaves out besides it: "agent" or "scaffold" (every agent of its
    # scaffold: an inner agent as new as a new scaffold is; see evaluate.inner_exclusion)
    inner_holdout: str = setting(Choice(("agent", "scaffold")), "agent")
    warm_shares: tuple = setting(
        ListOf(Num(0.0, 1.0, lo_open=True), unique=True),
        (0.05, 0.1, 0.2),
        in_file=False,
        cast=tuple,
    )
    warm_repeats: int = setting(Int(1, 10_000), 5, in_file=False)
    n_jobs: int = setting(Int(1, 1024), 2, in_file=False)
    # what a success halt needs the run itself to have produced (earlyeval.features.evidence: "patch", "change",
    # "dialogue", "none", or a registered rule): a success halt never rests on the task alone
    success_evidence: str = setting(PLUGIN, "change")
    # halts decided before the agent acted (t <= 1, or no action read) are task skips: off unless set
    task_skips: bool = setting(Bool(), False)
    # the live default (halt_on: failure) has its own failure threshold, by the agent-quantile rule with this
    # risk and alpha (None: the benchmark mode's `risk` and `risk_alpha`), and its own stated guarantee
    live_risk: str | None = setting(Choice(("mass", "recall", "precision")), None, optional=True)
    live_alpha: float | None = setting(Num(0.0, 0.5, lo_open=True), None, optional=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if isinstance(self.confidence, str):  # "none", after the check
            object.__setattr__(self, "confidence", None)

    @classmethod
    def of_catalog(cls, settings: Mapping[str, Any], families: list[str], error: Any) -> EvalConfig:
        """A catalog's record: its [settings] (file keys), ``families`` when it names no model_families."""
        fixed = {} if "model_families" in settings else {"families": list(families)}
        return cls.from_mapping(settings, error, prefix="settings", **fixed)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["taus"] = list(self.taus)
        return d


SETTINGS = file_schema(EvalConfig, "a [settings] table")

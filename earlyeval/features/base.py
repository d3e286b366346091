"""One interface for every feature family, used by batch and streaming alike.

A family fits on training runs, then follows one run step by step (``start``/``update``/``values``); the batch
featurizer is that same loop over finished runs, so batch and streaming features cannot drift apart. The
protocol (``fit_scope``, ``check_context``, ``get_state``/``from_state``, ``bind_values``): docs/architecture.md,
"Feature families".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping, Protocol, runtime_checkable

import numpy as np

from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.trajectory import Step, Task, Trajectory


@dataclass
class RunContext:
    """What a family may know about a run before its first step."""

    task: Task | None = None
    agent: str = ""
    scaffold: str = ""
    model: str = ""
    split: str = ""
    prompt: str = ""  # the task as the agent saw it
    # public results of this same agent
    exclude_submissions: list[str] = field(default_factory=list)
    prior_match: list[str] = field(default_factory=list)  # regexes naming the same scaffold x model
    task_id: str = ""  # the task's id even without a task table (tau2): what peer_prior looks up
    # public history (prior) and other agents' runs (peer_prior) dated strictly before this ISO date are
    # visible; "" = everything (an agent evaluated today).  Offline: the run's own catalog date.
    as_of: str = ""
    # the pass's reference runs (features.passref.PassReference): audited runs of this agent finished before
    # this run started; None = no pass, or too few of them yet (the pass features are NaN)
    pass_reference: Any = None

    @classmethod
    def of(
        cls,
        traj: Trajectory,
        task: Task | None,
        exclude: list[str] | None = None,
        as_of: str | None = None,
    ) -> "RunContext":
        """The run's context; ``as_of`` None means the run's own date (``meta["date"]``), "" no cutoff."""
        return cls(
            task=task,
            agent=traj.agent,
            scaffold=str(traj.meta.get("scaffold", "")),
            model=str(traj.meta.get("model", "")),
            split=str(traj.meta.get("split", "")),
            prompt=traj.prompt or (task.prompt if task else ""),
            exclude_submissions=list(exclude or traj.meta.get("public_submissions", []) or []),
            prior_match=list(traj.meta.get("prior_match", []) or []),
            task_id=traj.task_id or (task.task_id if task else ""),
            as_of=str(traj.meta.get("date") or "") if as_of is None else str(as_of),
        )


FOLD_FREE = (
    "fold_free"  # the same in every fold: computed once per dataset (behaviour, gold, prior)
)
FOLD_FITTED = (
    "fold_fitted"  # fitted from the training fold's runs (text: vocabulary; peer_prior: labels)
)
FIT_SCOPES = (FOLD_FREE, FOLD_FITTED)


class FeatureNamesError(EarlyEvalError, ValueError):
    """A family's values do not match its declared names (a width or key mismatch)."""


@dataclass
class FamilyResources:
    """What training hands a family class to build it (``from_config``)."""

    prior_table: Any = None  # the benchmark's public-history table (features.prior.PriorTable)
    seed: int = 0
    # family name -> constructor kwargs
    params: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def bind_values(family: str, names: list[str], v: Any) -> np.ndarray:
    """A family's values as the float vector of ``names``: a mapping is read in ``names`` order and must have
    exactly those keys; an array must have exactly ``len(names)`` entries (returned as is, no copy)."""
    if isinstance(v, Mapping):
        if len(v) != len(names) or not all(n in v for n in names):
            missing = [n for n in names if n not in v][:5]
            extra = [k for k in v if k not in set(names)][:5]
            raise FeatureNamesError(
                f"family '{family}': values keys differ from its names (missing {missing}, extra {extra})"
            )
        return np.fromiter((v[n] for n in names), dtype=np.float64, count=len(names))
    a = v if isinstance(v, np.ndarray) else np.asarray(v, dtype=np.float64)
    if a.shape != (len(names),):
        raise FeatureNamesError(
            f"family '{family}': values has shape {a.shape}, its names are {len(names)}"
        )
    return a


@runtime_checkable
class FeatureFamily(Protocol):
    name: ClassVar[str]
    fit_scope: ClassVar[str]  # FOLD_FREE or FOLD_FITTED
    # without any task its features are meaningless (Decision.context "none")
    needs_task: ClassVar[bool]

    @classmethod
    def from_config(cls, resources: FamilyResources) -> "FeatureFamily": ...

    def check_context(self, ctx: RunContext) -> str | None: ...

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "FeatureFamily": ...

    @property
    def names(self) -> list[str]: ...

    def start(self, ctx: RunContext) -> Any: ...

    def update(self, state: Any, step: Step) -> None: ...

    def values(self, state: Any) -> np.ndarray: ...

    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]: ...

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "FeatureFamily": ...


class FamilyBase:
    """Defaults of the protocol; ``fit_scope`` has none: every family class declares it."""

    name: ClassVar[str] = ""
    needs_task: ClassVar[bool] = False

    @classmethod
    def from_config(cls, resources: FamilyResources) -> "FamilyBase":
        return cls(**dict(resources.params.get(cls.name, {})))

    def check_context(self, ctx: RunContext) -> str | None:
        """Why ``ctx`` lacks what this family reads (its features become NaN), or None."""
        return None


class StatelessFamily(FamilyBase):
    """Base for families with nothing to learn (fit is a no-op)."""

    fit_scope: ClassVar[str] = FOLD_FREE
    _names: ClassVar[list[str]] = []  # the family's feature names, fixed by its class

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "StatelessFamily":
        return self

    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {}

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "StatelessFamily":
        return cls()

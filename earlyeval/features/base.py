"""One interface for every feature family, used by batch and streaming alike.

A family is a small estimator (``fit`` learns whatever it needs from training
trajectories only, e.g. a text vocabulary) that also knows how to follow one run
step by step: ``start`` makes a per-run state, ``update`` folds one step into it
in time independent of the prefix length, ``values`` reads the features of the
prefix seen so far.  The batch featurizer is nothing but this loop run over
finished trajectories, so batch and streaming features cannot drift apart.

Families serialize to plain JSON + numpy arrays (``get_params_state`` /
``from_state``) so a model directory never needs pickle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ..trajectory import Step, Task, Trajectory


@dataclass
class RunContext:
    """What a family may know about a run before its first step."""

    task: Task | None = None
    agent: str = ""
    scaffold: str = ""
    model: str = ""
    split: str = ""
    prompt: str = ""  # the task as the agent saw it
    exclude_submissions: list[str] = field(default_factory=list)  # public results of this same agent
    prior_match: list[str] = field(default_factory=list)  # regexes naming the same scaffold x model
    task_id: str = ""  # the task's id even without a task table (tau2): what peer_prior looks up
    # public history (prior) and other agents' runs (peer_prior) dated strictly before this ISO date are
    # visible; "" = everything (an agent evaluated today).  Offline: the run's own catalog date.
    as_of: str = ""

    @classmethod
    def of(cls, traj: Trajectory, task: Task | None, exclude: list[str] | None = None,
           as_of: str | None = None) -> "RunContext":
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


@runtime_checkable
class FeatureFamily(Protocol):
    name: ClassVar[str]

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "FeatureFamily": ...

    @property
    def names(self) -> list[str]: ...

    def start(self, ctx: RunContext) -> Any: ...

    def update(self, state: Any, step: Step) -> None: ...

    def values(self, state: Any) -> np.ndarray: ...

    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]: ...


class StatelessFamily:
    """Base for families with nothing to learn (fit is a no-op)."""

    name: ClassVar[str] = ""

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "StatelessFamily":
        return self

    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {}

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "StatelessFamily":
        return cls()

"""Feature families and the featurizer that runs them, batch or streaming.

``Featurizer`` holds an ordered list of families.  Streaming: ``start(ctx)``
then ``update(state, step)`` / ``values(state)`` per step.  Batch: ``prefix_matrix``
runs exactly that loop over finished trajectories and keeps the rows of the
prefixes it is asked for.  There is no second implementation of any feature.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
from tqdm.auto import tqdm

from earlyeval.config.plugins import Registry
from earlyeval.core.errors import UnknownPluginError
from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.features.base import (
    FIT_SCOPES,
    FOLD_FITTED,
    FOLD_FREE,
    FamilyBase,
    FamilyResources,
    FeatureFamily,
    FeatureNamesError,
    RunContext,
    bind_values,
)
from earlyeval.features.behaviour import BehaviourFamily
from earlyeval.features.gold import GoldFamily
from earlyeval.features.peer import PeerPriorFamily, PeerTable
from earlyeval.features.prior import PriorFamily, PriorTable

# the text family (TF-IDF + scikit-learns TruncatedSVD) is imported only when a config or a model dir names it:
# by its registered dotted path below, so that a model without it never loads scikit-learn

# the built-in families, registered the way a plugin is (also entry points of the group in pyproject.toml)
BUILTIN_FAMILIES: dict[str, str] = {
    "behaviour": "earlyeval.features.behaviour:BehaviourFamily",
    "text": "earlyeval.features.text:TextFamily",
    "gold": "earlyeval.features.gold:GoldFamily",
    "prior": "earlyeval.features.prior:PriorFamily",
    "peer_prior": "earlyeval.features.peer:PeerPriorFamily",
    "pass": "earlyeval.features.passref:PassFamily",
    "phase": "earlyeval.features.phase:PhaseFamily",
}
_REQUIRED = (
    "fit",
    "start",
    "update",
    "values",
    "check_context",
    "get_state",
    "from_state",
    "from_config",
)


def _check_family(name: str, cls: Any) -> type:
    """A registered family is a class that declares the whole protocol (``base.FeatureFamily``)."""
    known = list(BUILTIN_FAMILIES)
    if not isinstance(cls, type):
        raise UnknownPluginError("feature family", name, known, f"{cls!r} is not a class")
    if getattr(cls, "name", None) != name:
        raise UnknownPluginError(
            "feature family",
            name,
            known,
            f"{cls.__qualname__}.name is {getattr(cls, 'name', None)!r}, not {name!r}",
        )
    if getattr(cls, "fit_scope", None) not in FIT_SCOPES:
        raise UnknownPluginError(
            "feature family",
            name,
            known,
            f"{cls.__qualname__}.fit_scope is {getattr(cls, 'fit_scope', None)!r}, not one of {FIT_SCOPES}",
        )
    missing = [m for m in _REQUIRED if not callable(getattr(cls, m, None))] + [
        a for a in ("names", "needs_task") if not hasattr(cls, a)
    ]
    if missing:
        raise UnknownPluginError(
            "feature family", name, known, f"{cls.__qualname__} lacks {', '.join(missing)}"
        )
    return cls


FAMILIES = Registry("feature family", "earlyeval.families", BUILTIN_FAMILIES, check=_check_family)


def family_class(name: str) -> type:
    """The class a config's family entry names: a registered name or ``package.module:Class``."""
    return FAMILIES.resolve(name)


def register_family(cls: type) -> type:
    """Register a family class under its ``name`` (usable as a decorator); a model dir can then name it."""
    return FAMILIES.register(getattr(cls, "name", ""), cls)


def fit_scope(name: str) -> str:
    return family_class(name).fit_scope


def fold_free(names: Iterable[str]) -> list[str]:
    """The entries of ``names`` whose family is the same in every fold (an unknown one raises)."""
    return [n for n in names if fit_scope(n) == FOLD_FREE]


def fold_fitted(names: Iterable[str]) -> list[str]:
    """The entries of ``names`` whose family is fitted inside each training fold (an unknown one raises)."""
    return [n for n in names if fit_scope(n) == FOLD_FITTED]


class Featurizer:
    def __init__(self, families: list[Any]):
        self.families = families
        self._bound: list[tuple[str, list[str]]] | None = (
            None  # (name, names) per family, read at start()
        )

    @property
    def names(self) -> list[str]:
        return [n for f in self.families for n in f.names]

    @property
    def family_names(self) -> list[str]:
        return [f.name for f in self.families]

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "Featurizer":
        for f in self.families:
            f.fit(trajs, contexts)
        self._bound = None
        return self

    def start(self, ctx: RunContext) -> list[Any]:
        self._bound = [(f.name, list(f.names)) for f in self.families]
        return [f.start(ctx) for f in self.families]

    def update(self, states: list[Any], step: Step) -> None:
        for f, s in zip(self.families, states):
            f.update(s, step)

    def values(self, states: list[Any]) -> np.ndarray:
        if not self.families:
            return np.zeros(0)
        if self._bound is None:
            self._bound = [(f.name, list(f.names)) for f in self.families]
        return np.concatenate(
            [
                bind_values(name, names, f.values(s))
                for (name, names), f, s in zip(self._bound, self.families, states)
            ]
        )

    def prefix_matrix(
        self,
        trajs: list[Trajectory],
        contexts: list[RunContext],
        max_t: Iterable[int] | None = None,
        progress: bool = False,
        desc: str = "featurize",
    ) -> np.ndarray:
        """Rows for prefixes t = 1..T-1 of each trajectory (or 1..max_t[i]), in order."""
        limits = list(max_t) if max_t is not None else [len(t.steps) - 1 for t in trajs]
        n_rows = sum(max(m, 0) for m in limits)
        X = np.empty((n_rows, len(self.names)), dtype=np.float32)
        r = 0
        for traj, ctx, m in tqdm(
            list(zip(trajs, contexts, limits)),
            desc=desc,
            disable=None if progress else True,
            leave=False,
        ):
            states = self.start(ctx)
            for step in traj.steps[: max(m, 0)]:
                self.update(states, step)
                X[r] = self.values(states)
                r += 1
        return X


# Directions known a priori for P(success): used as LightGBM monotone constraints when asked.
KNOWN_DIRECTIONS: dict[str, int] = {
    "prior_solve_rate": +1,
    "task_difficulty": -1,
    "peer_rate": +1,
    "peer_agent_rate": +1,
    "peer_shrunk": +1,
    "gold_files_edited": +1,
    "gold_idents_recall": +1,
    "gold_added_lines_written": +1,
    "edits_in_gold_hunks": +1,
    "ever_passed_after_edit": +1,
    "max_repeat_action_run": -1,
    "max_repeat_error_run": -1,
}


def build_family(
    name: str,
    *,
    prior_table: PriorTable | None = None,
    text_params: dict | None = None,
    seed: int = 0,
    peer_params: dict | None = None,
    params: dict[str, dict] | None = None,
) -> Any:
    """A family, unfitted, from its config entry (name or dotted path); ``params``: family name -> kwargs
    (``text_params`` / ``peer_params`` are those of text and peer_prior)."""
    cls = family_class(name)
    p = {"text": dict(text_params or {}), "peer_prior": dict(peer_params or {}), **(params or {})}
    return cls.from_config(FamilyResources(prior_table=prior_table, seed=seed, params=p))


__all__ = [
    "KNOWN_DIRECTIONS",
    "Featurizer",
    "RunContext",
    "FeatureFamily",
    "FamilyBase",
    "FamilyResources",
    "BehaviourFamily",
    "GoldFamily",
    "PriorFamily",
    "PriorTable",
    "PeerPriorFamily",
    "PeerTable",
    "FOLD_FREE",
    "FOLD_FITTED",
    "FIT_SCOPES",
    "FAMILIES",
    "BUILTIN_FAMILIES",
    "FeatureNamesError",
    "bind_values",
    "build_family",
    "family_class",
    "fit_scope",
    "fold_free",
    "fold_fitted",
    "register_family",
]

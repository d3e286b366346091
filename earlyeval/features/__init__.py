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

from ..trajectory import Step, Trajectory
from .base import FeatureFamily, RunContext
from .behaviour import BehaviourFamily
from .gold import GoldFamily
from .peer import PeerPriorFamily, PeerTable
from .prior import PriorFamily, PriorTable
from .text import TextFamily

FAMILY_CLASSES: dict[str, type] = {
    "behaviour": BehaviourFamily,
    "text": TextFamily,
    "gold": GoldFamily,
    "prior": PriorFamily,
    "peer_prior": PeerPriorFamily,
}
# families fitted from the training fold's runs (text: vocabulary; peer_prior: outcome labels)
FOLD_FITTED = ("text", "peer_prior")


class Featurizer:
    def __init__(self, families: list[Any]):
        self.families = families

    @property
    def names(self) -> list[str]:
        return [n for f in self.families for n in f.names]

    @property
    def family_names(self) -> list[str]:
        return [f.name for f in self.families]

    def fit(self, trajs: list[Trajectory], contexts: list[RunContext]) -> "Featurizer":
        for f in self.families:
            f.fit(trajs, contexts)
        return self

    def start(self, ctx: RunContext) -> list[Any]:
        return [f.start(ctx) for f in self.families]

    def update(self, states: list[Any], step: Step) -> None:
        for f, s in zip(self.families, states):
            f.update(s, step)

    def values(self, states: list[Any]) -> np.ndarray:
        if not self.families:
            return np.zeros(0)
        return np.concatenate([f.values(s) for f, s in zip(self.families, states)])

    def prefix_matrix(self, trajs: list[Trajectory], contexts: list[RunContext], max_t: Iterable[int] | None = None,
                      progress: bool = False, desc: str = "featurize") -> np.ndarray:
        """Rows for prefixes t = 1..T-1 of each trajectory (or 1..max_t[i]), in order."""
        limits = list(max_t) if max_t is not None else [len(t.steps) - 1 for t in trajs]
        n_rows = sum(max(m, 0) for m in limits)
        X = np.empty((n_rows, len(self.names)), dtype=np.float32)
        r = 0
        for traj, ctx, m in tqdm(list(zip(trajs, contexts, limits)), desc=desc, disable=None if progress else True, leave=False):
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


def build_family(name: str, *, prior_table: PriorTable | None = None, text_params: dict | None = None, seed: int = 0,
                 peer_params: dict | None = None) -> Any:
    if name == "prior":
        return PriorFamily(prior_table)
    if name == "text":
        return TextFamily(seed=seed, **(text_params or {}))
    if name == "peer_prior":
        return PeerPriorFamily(**(peer_params or {}))
    if name not in FAMILY_CLASSES:
        raise ValueError(f"unknown feature family '{name}' (known: {', '.join(FAMILY_CLASSES)})")
    return FAMILY_CLASSES[name]()


__all__ = ["KNOWN_DIRECTIONS", "Featurizer", "RunContext", "FeatureFamily", "BehaviourFamily", "TextFamily", "GoldFamily", "PriorFamily",
           "PriorTable", "PeerPriorFamily", "PeerTable", "FOLD_FITTED", "build_family", "FAMILY_CLASSES"]

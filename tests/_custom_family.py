"""A tiny custom feature family, as a user package would write it (named by dotted path in tests)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from earlyeval.features import FOLD_FITTED, FamilyBase

NAMES = ["cx_steps", "cx_act_rel"]


class ActionLengthFamily(FamilyBase):
    """Fold-fitted: learns the training runs' mean action length; per prefix, the step count and the
    newest action's length relative to that mean.  Values come back as a mapping (bound to ``names``)."""

    name: ClassVar[str] = "cx_action_length"
    fit_scope: ClassVar[str] = FOLD_FITTED

    def __init__(self, mean_len: float | None = None) -> None:
        self.mean_len = mean_len

    @property
    def names(self) -> list[str]:
        return list(NAMES)

    def check_context(self, ctx) -> str | None:
        return None if ctx.agent else "the cx_action_length family wants the agent's name"

    def fit(self, trajs, contexts) -> "ActionLengthFamily":
        lens = [len(s.action or "") for t in trajs for s in t.steps]
        self.mean_len = float(np.mean(lens)) if lens else 1.0
        return self

    def start(self, ctx) -> list[float]:
        return [0.0, float("nan")]

    def update(self, state: list[float], step) -> None:
        state[0] += 1.0
        state[1] = len(step.action or "") / self.mean_len

    def values(self, state: list[float]) -> dict[str, float]:
        return {"cx_act_rel": state[1], "cx_steps": state[0]}  # deliberately not in names order

    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"mean_len": self.mean_len}, {}

    @classmethod
    def from_state(
        cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]
    ) -> "ActionLengthFamily":
        return cls(float(meta["mean_len"]))


class NoScope(FamilyBase):
    """Declares no fit_scope: must be refused, never guessed."""

    name: ClassVar[str] = "cx_no_scope"
    names: ClassVar[list[str]] = ["x"]

    def fit(self, trajs, contexts):
        return self

    def start(self, ctx):
        return None

    def update(self, state, step):
        return None

    def values(self, state):
        return np.zeros(1)

    def get_state(self):
        return {}, {}

    @classmethod
    def from_state(cls, meta, arrays):
        return cls()


class LineFormat:
    """A custom run format: one trajectory per file, one ``kind<TAB>action`` line per step."""

    def parse(self, path, spec, bench):
        from earlyeval.core.trajectory import Action, Trajectory, make_step

        lines = [l.split("\t", 1) for l in path.read_text().splitlines() if l.strip()]
        steps = [
            make_step(i, [Action(tool="bash", text=a)], observation="")
            for i, (_, a) in enumerate(lines)
        ]
        yield Trajectory(
            run_id=f"{spec.name}/{path.stem}",
            agent=spec.agent,
            bench=bench,
            task_id=path.stem,
            steps=steps,
            outcome=None,
            meta={"source_file": str(path)},
        )

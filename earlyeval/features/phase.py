"""Phase-order features: in what order a run explores, edits and tests (issue 28 item 2).

Published work finds the order of a run's phases carries across scaffolds better than raw counts: whether the
first edit came before any search or view, whether a failing test was rerun, whether a pass followed a failure.
Counted as the behaviour family counts (step kinds, ``signals.parse_test_summary``).  Not in the shipped model:
``loao.json`` ablation ``with_phase`` measures it (docs/monitor.md, "Pass-relative features").
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from earlyeval.core.trajectory import Step
from earlyeval.features.base import RunContext, StatelessFamily
from earlyeval.features.signals import parse_test_summary, step_kinds

NAN = float("nan")


class PhaseState:
    __slots__ = (
        "t",
        "first_edit",
        "looks_before_edit",
        "last_fail_at",
        "rerun_after_fail",
        "pass_after_fail",
    )

    def __init__(self) -> None:
        self.t = 0
        self.first_edit = -1
        self.looks_before_edit = 0  # search / view steps before the first edit
        self.last_fail_at = -1  # the latest step whose test summary failed
        self.rerun_after_fail = self.pass_after_fail = 0


class PhaseFamily(StatelessFamily):
    name: ClassVar[str] = "phase"
    _names: ClassVar[list[str]] = [
        "edit_before_look",
        "look_share_before_edit",
        "rerun_after_failing_test",
        "pass_after_failing_test",
    ]

    def start(self, ctx: RunContext) -> PhaseState:
        return PhaseState()

    def update(self, s: PhaseState, step: Step) -> None:
        t = s.t
        s.t += 1
        kind, kinds_here = step_kinds(step)
        if s.first_edit < 0 and kinds_here & {"search", "view"}:
            s.looks_before_edit += 1
        if "test" in kinds_here and 0 <= s.last_fail_at < t:
            s.rerun_after_fail = 1
        if "edit" in kinds_here and s.first_edit < 0:
            s.first_edit = t
        summ = (
            parse_test_summary(step.observation or "")
            if ("test" in kinds_here or kind == "other")
            else None
        )
        if summ is not None:
            if summ.ok and s.last_fail_at >= 0:
                s.pass_after_fail = 1
            elif not summ.ok:
                s.last_fail_at = t

    def values(self, s: PhaseState) -> np.ndarray:
        failed = s.last_fail_at >= 0
        return np.asarray(
            [
                float(s.looks_before_edit == 0) if s.first_edit >= 0 else NAN,
                s.looks_before_edit / s.first_edit if s.first_edit > 0 else NAN,
                float(s.rerun_after_fail) if failed else NAN,
                float(s.pass_after_fail) if failed else NAN,
            ],
            dtype=np.float64,
        )

"""The rule a Monitor halts with, and its verdict on one step of a run.

``HaltingRule`` holds the thresholds (the model's, an override's, a warm start's or a pass's), which predicted
outcomes may halt (``halt_on``) and which budget dimensions halt a run; ``decide`` applies it to a run's newest
prefix (``model.policy.step_outcome``, the rule the offline evaluation measures).  A side that never halts is a
typed "off" here (``HaltingRule.off``), printed as such; only the batch maths (``policy.halting_pair``) turns it
into a threshold no probability reaches.  ``waits`` is the one place a due halt is asked whether it may happen now.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Literal, Mapping

from earlyeval.core.decision import HALTING_CONTEXTS
from earlyeval.live import reasons
from earlyeval.live.runstate import RunState
from earlyeval.model.policy import (
    CONTINUE,
    NEVER,
    SUCCESS,
    check_halt_on,
    halt_rule,
    halting_pair,
    may_halt,
    step_outcome,
)
from earlyeval.model.thresholds import WarmStart

Side = Literal["success", "failure"]
SIDES: tuple[Side, Side] = ("success", "failure")
Candidate = Callable[[], "str | None"]


@dataclass(frozen=True)
class Verdict:
    """The rule's answer at one step: the predicted outcome when halting (None: continue), the halt's basis
    (``policy.HALT_RULES``; "" when continuing) and the reason, without the top features and the context note;
    ``sticky``: the run halted before (the first halt's outcome, with fresh probabilities)."""

    outcome: Side | None
    basis: str
    reason: str
    sticky: bool = False

    def text(self, top: list[tuple[str, float]], absent: str | None) -> str:
        """The Decision's reason: with a new halt's top features, and the note on absent inputs."""
        if self.sticky:
            return self.reason
        return (
            self.reason + (reasons.top_text(top) if self.outcome else "") + reasons.degraded(absent)
        )


@dataclass(frozen=True)
class HaltingRule:
    """(tau_s, tau_f), ``min_halt_step``, ``halt_on``, the budget dimensions whose ``impossible`` flag halts, and the
    warm start the thresholds came from (None: none).  Shared by the monitors spawned from one another."""

    success: float
    failure: float
    min_halt_step: int = 1
    halt_on: str = "both"
    budget_dims: tuple[str, ...] = ()
    warm: WarmStart | None = None
    task_skips: bool = (
        False  # may a task-level prefix halt (``policy.may_halt``): the model's policy
    )
    requirement: str = ""  # what the success evidence rule needs, in words (the reasons say it)

    @classmethod
    def of(
        cls,
        thresholds: Mapping[str, Any],
        halt_on: str | None = None,
        budget_dims: Iterable[str] = (),
        requirement: str = "",
    ) -> HaltingRule:
        """The rule of a model's thresholds (``thresholds.json``, or an override of it): under ``halt_on:
        failure`` (the live default) the failure threshold chosen for that mode (``live_failure``) when the
        model has one; its task-skip policy (off unless the model was trained with it)."""
        mode = check_halt_on(halt_on or "both")
        live = thresholds.get("live_failure") if mode == "failure" else None
        return cls(
            float(thresholds["success"]),
            float(thresholds["failure"] if live is None else live),
            int(thresholds.get("min_halt_step", 1)),
            mode,
            tuple(sorted(budget_dims)),
            task_skips=bool(thresholds.get("task_skips", False)),
            requirement=requirement,
        )

    def tau(self, side: Side) -> float:
        return self.success if side == "success" else self.failure

    def halts_on(self, side: Side) -> bool:
        """Whether ``halt_on`` lets a predicted ``side`` halt a run (the budget rule predicts failure)."""
        return self.halt_on in (side, "both")

    def off(self, side: Side) -> str | None:
        """Why ``side`` never halts under this rule (None: it may): ``halt_on`` leaves it out, or its threshold is
        off (above 1: the thresholds were chosen never to halt that way)."""
        if not self.halts_on(side):
            return f"halt_on={self.halt_on}"
        return "its threshold is off" if self.tau(side) > 1 else None

    @property
    def pair(self) -> tuple[float, float]:
        """The (tau_s, tau_f) the halting maths applies (``policy.halting_pair``: an off side never crosses)."""
        return halting_pair(self.success, self.failure, self.halt_on)

    def as_dict(self) -> dict[str, Any]:
        """The thresholds as ``Decision.thresholds`` and score.json carry them (numbers)."""
        return {
            "success": self.success,
            "failure": self.failure,
            "min_halt_step": self.min_halt_step,
        }

    def warmed(self, warm: WarmStart) -> HaltingRule:
        """This rule with a warm start's thresholds (and its recalibration, applied by the predictions)."""
        return dataclasses.replace(self, success=warm.success, failure=warm.failure, warm=warm)

    def warm_summary(self) -> dict[str, Any]:
        """What the warm start fitted (``Monitor.use_warm_start`` returns it; score.json records it)."""
        w = self.warm
        assert w is not None
        return {
            "runs": len(w.runs),
            "recalibration": {"a": w.calibration.a, "b": w.calibration.b},
            "thresholds": self.as_dict(),
            "selection": dict(w.selection),
        }

    def moved(self, success: float, failure: float) -> HaltingRule:
        """A pass's certified pair on the sides ``halt_on`` leaves on (an off side keeps its threshold)."""
        return dataclasses.replace(
            self,
            success=success if self.halts_on("success") else self.success,
            failure=failure if self.halts_on("failure") else self.failure,
        )

    def decide(
        self,
        run: RunState,
        ps: float,
        pf: float,
        budget: Mapping[str, Any] | None,
        candidate: Candidate | None,
    ) -> Verdict:
        """The verdict on ``run``'s newest prefix (``run.t`` steps) with these probabilities and budget estimates;
        ``candidate``: a live loop's patch so far, asked only when a success halt is due."""
        if run.halt is not None:
            h = run.halt
            return Verdict(h.outcome, h.halt_rule, reasons.already_halted(h, ps, pf), sticky=True)
        t, pair = run.t, list(self.pair)
        probs = ", ".join(
            reasons.side(s, p, tau, self.off(s)) for s, p, tau in zip(SIDES, (ps, pf), pair)
        )
        if run.context not in HALTING_CONTEXTS:  # missing information never halts a run
            return Verdict(None, "", reasons.never_halts(run.off.get("halting", ""), probs))
        held = ""
        while (code := step_outcome(ps, pf, pair[0], pair[1], t, self.min_halt_step)) != CONTINUE:
            side: Side = "success" if code == SUCCESS else "failure"
            if not (wait := self.waits(side, run, candidate)):
                basis = halt_rule(t, run.acted)
                return Verdict(side, basis, reasons.halt(t, side, reasons.basis(basis), probs))
            held, pair[SIDES.index(side)] = reasons.held(wait, probs, side), NEVER
        hits = [k for k in self.budget_dims if budget and budget.get(k) and budget[k]["impossible"]]
        if (
            budget
            and hits
            and self.halts_on("failure")
            and not self.waits("failure", run, candidate)
        ):
            basis = halt_rule(t, run.acted, budget=True)
            why = f"{reasons.basis(basis, 'budget rule')}: {reasons.budget_hits(budget, hits)}"
            return Verdict("failure", basis, reasons.halt(t, "failure", why, probs))
        return Verdict(None, "", held or reasons.proceed(probs, t, self.min_halt_step))

    def waits(self, side: Side, run: RunState, candidate: Candidate | None) -> str:
        """Why a due halt on ``side`` waits at this step of ``run`` ("" when it may halt now): the one place the
        decision asks.  The prefix's gate first (``policy.may_halt``, as offline: no task-level halt unless the
        task-skip policy is on, no success halt without the run's own evidence), then a live loop's success halt
        waits for an action of the agent and for its patch."""
        success_ok, failure_ok = may_halt(run.t, run.gate, self.task_skips)
        if not failure_ok:
            return reasons.TASK_SKIP_OFF
        if side != "success":
            return ""
        if not success_ok:
            return reasons.no_evidence(self.requirement or "the run's own evidence")
        if candidate is None:
            return ""
        return reasons.NO_ACTION_YET if not run.acted else reasons.candidate_missing(candidate)

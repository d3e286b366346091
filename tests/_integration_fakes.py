"""Scripted stand-ins for the Monitor, shared by the integration-adapter tests."""

from __future__ import annotations

from earlyeval.core.decision import Decision
from earlyeval.integrations.base import StepMonitor


class ScriptedMonitor:
    """Halts with ``outcome`` once it has seen ``halt_at + 1`` steps (never, if ``halt_at`` is None).

    P(failure) climbs by 0.1 a step from 0.2 (for outcome="success" it falls from 0.3),
    so saved probabilities can be checked exactly.
    """

    def __init__(
        self, halt_at: int | None = None, outcome: str = "failure", raise_in_observe: bool = False
    ):
        self.halt_at = halt_at
        self.outcome = outcome
        self.raise_in_observe = raise_in_observe
        self.starts: list[tuple[object, object]] = []
        self.steps = []

    def start(self, task=None, run_id=None) -> None:
        self.starts.append((task, run_id))
        self.steps = []

    def p_failure(self, k: int) -> float:
        if self.outcome == "failure":
            return round(0.2 + 0.1 * k, 6)
        return round(max(0.3 - 0.1 * k, 0.0), 6)

    def observe(self, step) -> Decision:
        self.steps.append(step)
        if self.raise_in_observe:
            raise RuntimeError("scripted monitor failure")
        k = len(self.steps) - 1
        pf = self.p_failure(k)
        halt = self.halt_at is not None and k >= self.halt_at
        return Decision(
            halt=halt,
            outcome=self.outcome if halt else None,
            p_success=round(1.0 - pf, 6),
            p_failure=pf,
            reason=f"scripted: step {k}"
            + (f", halting ({self.outcome})" if halt else ", continue"),
            step_index=step.index,
            thresholds={"failure": 0.4, "success": 0.9},
            top_features=[("n_steps", 0.5)],
        )


class Recording:
    """A real Monitor behind an adapter; records the steps, feature rows and probabilities it saw (live/offline parity)."""

    def __init__(self, mon):
        self.mon, self.steps, self.rows, self.p, self.task = mon, [], [], [], None

    @property
    def thresholds(self):
        return self.mon.thresholds

    def start(self, task=None, run_id=None) -> None:
        self.task = task
        self.mon.start(task=task, run_id=run_id)

    def observe(self, step) -> Decision:
        d = self.mon.observe(step)
        self.steps.append(step.to_dict())
        self.rows.append(self.mon.run.last_features.copy())
        self.p.append((d.p_success, d.p_failure))
        return d


assert isinstance(ScriptedMonitor(), StepMonitor)
assert isinstance(Recording(None), StepMonitor)

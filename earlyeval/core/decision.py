"""What the Monitor tells an agent loop after each step."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["success", "failure"]
NEVER = 10.0  # a threshold no probability reaches: "never halt this way" (the threshold grids' last value)
HALTING_CONTEXTS = frozenset({"full", "partial-trained"})
OFF = "off"  # how a side that never halts is printed: never as the number NEVER


def threshold_text(tau: float | None, spec: str = "g") -> str:
    """A threshold as every printed or logged line shows it: ``format(tau, spec)``, or "off" for a side that never
    halts (None, or above 1: no probability reaches it, e.g. ``NEVER``).  The one renderer of a threshold."""
    return OFF if tau is None or tau > 1 else format(tau, spec)


@dataclass
class Decision:
    halt: bool  # stop the run now
    outcome: Outcome | None  # predicted outcome when halting, else None
    p_success: float | None  # calibrated P(success); None when prediction failed (fail-open)
    p_failure: float | None
    reason: str  # human-readable: probabilities vs thresholds, or the error that was swallowed
    step_index: int = -1
    thresholds: dict[str, float] = field(default_factory=dict)
    top_features: list[tuple[str, float]] = field(default_factory=list)  # (name, contribution)
    budget: dict[str, Any] | None = (
        None  # remaining-budget intervals and P(feasible), when the model has them
    )
    # what the monitor knew (docs/monitor.md, "Missing context"): "full"; "partial-trained" (a family's inputs
    # are absent, a state the model was trained on: halting stays on); "partial" (absent inputs the model was
    # not trained without: never halts); "none" (no task although the model needs one: never halts)
    context: str = "full"
    # what went wrong at this step and was failed open on
    flags: list[str] = field(default_factory=list)
    # which predicted outcomes may halt this run ("failure", "success" or "both"; model.policy.HALT_ON)
    halt_on: str = "both"
    # where the run's reference information came from, per field ("gold_patch": "start(task)" / "task table" /
    # "run context" / "absent", with a note when a value was decoded or refused): the provenance of ``context``
    context_source: dict[str, str] = field(default_factory=dict)
    # the basis of a halt ("task prior": at step 1 or before any action of the agent, the task alone decided;
    # "outcome rule"; "budget rule": model.policy.HALT_RULES); "" when not halting
    halt_rule: str = ""
    # the prefix's gate the rule read (earlyeval.features.evidence: bit 1, an action of the agent was read; bit 2,
    # the run's own success evidence holds); None when no prefix was scored (fail-open)
    gate: int | None = None
    # a shadow monitor's (MonitorConfig.mode "shadow"): it decides and records, and halts nothing; a halt it would have
    # made is ``would_halt`` with its predicted outcome in ``would_outcome`` (``halt`` stays False)
    shadow: bool = False
    would_halt: bool = False
    would_outcome: Outcome | None = None

    @property
    def may_halt(self) -> bool:
        """Whether the context lets this monitor halt at all (``context`` is "full" or "partial-trained")."""
        return self.context in HALTING_CONTEXTS

    @classmethod
    def proceed(
        cls,
        reason: str,
        step_index: int = -1,
        *,
        context: str = "full",
        flags: list[str] | None = None,
    ) -> "Decision":
        """The fail-open decision: continue the run."""
        return cls(
            halt=False,
            outcome=None,
            p_success=None,
            p_failure=None,
            reason=reason,
            step_index=step_index,
            context=context,
            flags=list(flags or []),
        )

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["top_features"] = [list(x) for x in self.top_features]
        return d

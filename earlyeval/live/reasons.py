"""The wording of the Monitor's decisions: every ``Decision.reason`` and every line it logs, in one place.

A threshold is printed through ``core.decision.threshold_text``, so a side that never halts reads "off", never as
the number the batch maths uses for it.  Adapters that gate halts themselves reuse these words (``HELD``).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Callable, Mapping, Sequence

from earlyeval.core.decision import Decision, threshold_text
from earlyeval.model.policy import TASK_PRIOR

# how a Decision starts when a due halt waits (a success halt for the agent's patch): adapters match on it
HELD = "continue (success predicted, not halted"
NO_ACTION_YET = "no action of the agent yet (a success halt waits for one)"
# a halt the task alone would decide: the task-skip policy is off (its savings are reported apart, when on)
TASK_SKIP_OFF = "a task skip (nothing the agent did was read yet) and task skips are off"


def shadowed(d: Decision) -> Decision:
    """A shadow monitor's Decision: the same decision, never halting; a halt is recorded in ``would_halt`` (and its
    predicted outcome in ``would_outcome``), the reason saying so."""
    if not d.halt:
        return dataclasses.replace(d, shadow=True)
    return dataclasses.replace(
        d,
        halt=False,
        outcome=None,
        shadow=True,
        would_halt=True,
        would_outcome=d.outcome,
        reason=f"shadow (nothing halts): would {d.reason}",
    )


def no_evidence(requirement: str) -> str:
    """A due success halt without the run's own evidence (``features.evidence``: the model's rule)."""
    return f"no evidence of the run's own yet: a success halt needs {requirement}"


NO_CANDIDATE = "no candidate patch yet (a success halt waits for one)"
BEFORE_START = "observe() before start(): started with an empty context"

# the Monitor's log lines (``logging`` formats: run id, message)
LOG_SAID_ONCE = "earlyeval monitor (run %s; said once): %s"
LOG_RUN = "earlyeval monitor (run %s): %s"
LOG_DISABLED = "earlyeval monitor disabled for run %s (continuing the run): %s"
LOG_BUDGET_OFF = "earlyeval monitor: budget estimates off for run %s (outcome decisions go on): %s"
LOG_MONITOR = "earlyeval monitor: %s"


class SaidOnce:
    """Log a warning the first time its message comes (a monitor says each once, not once per run)."""

    def __init__(self, log: logging.Logger) -> None:
        self.log, self.said = log, set[str]()

    def __call__(self, msg: str, fmt: str, *args: Any) -> None:
        if msg not in self.said:
            self.said.add(msg)
            self.log.warning(fmt, *args, stacklevel=2)


def error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def side(name: str, p: float, tau: float, off: str | None) -> str:
    """One side against its threshold: "p_success=0.912 >= 0.9", or why the side never halts."""
    if off is not None:
        return f"p_{name}={p:.3f} ({name} halts off: {off})"
    return f"p_{name}={p:.3f} {'>=' if p >= tau else '<'} {threshold_text(tau)}"


def degraded(absent: str | None) -> str:
    """The tail of every reason of a run whose context lacks some inputs (None: it lacks none)."""
    return f" [degraded: {absent}]" if absent else ""


def top_text(top: Sequence[tuple[str, float]]) -> str:
    return f"; top features: {', '.join(f'{n} {c:+.2f}' for n, c in top[:3])}" if top else ""


def disabled(why: str) -> str:
    return f"fail-open: monitor disabled for this run ({why})"


def skipped(index: int, e: Exception) -> str:
    return f"skipped unreadable step {index} ({e}); still monitoring"


def non_finite(ps: float, pf: float) -> str:
    return (
        f"the model gave a non-finite probability (p_success={ps}, p_failure={pf}): "
        "no decision at this step"
    )


def already_halted(h: Decision, ps: float, pf: float) -> str:
    return (
        f"already halted at step {h.step_index} ({h.outcome}, {h.halt_rule}); "
        f"p_success={ps:.3f}, p_failure={pf:.3f}"
    )


def never_halts(why: str, probs: str) -> str:
    return f"continue (never halts: {why}): {probs}"


def basis(rule: str, lead: str = "") -> str:
    """A halt's basis as its reason says it: the rule, and that no action was read when the task alone decided."""
    if rule != TASK_PRIOR:
        return lead or rule
    return f"{TASK_PRIOR}: no action of the agent read yet" + (f"; {lead}" if lead else "")


def halt(t: int, outcome: str, why: str, probs: str) -> str:
    return f"halt after {t} steps, predicting {outcome} ({why}): {probs}"


def budget_hits(budget: Mapping[str, Any], dims: Sequence[str]) -> str:
    """The budget rule's part of a reason: each dimension whose P(feasible) fell below its tau."""
    return ", ".join(
        f"{k} P(feasible)={budget[k]['p_feasible']:.3f} < {budget[k]['tau']:g} "
        f"(spent {budget[k]['spent']:g} of B={budget[k]['budget']:g})"
        for k in dims
    )


def held(why: str, probs: str, side_name: str = "success") -> str:
    """A due halt that waits (``why``); the run goes on."""
    return f"continue ({side_name} predicted, not halted: {why}): {probs}"


def proceed(probs: str, t: int, min_halt_step: int) -> str:
    if t < min_halt_step:
        return f"continue: {probs} (halting starts at step {min_halt_step})"
    return f"continue: {probs}"


def candidate_missing(candidate: Callable[[], str | None]) -> str:
    """Why a due success halt waits for the loop's candidate patch ("" when it has a non-empty one); never raises."""
    try:
        c = candidate()
    except Exception as e:  # fail open: no readable patch, no success halt
        return f"the candidate patch could not be read ({error_text(e)})"
    return "" if isinstance(c, str) and c.strip() else NO_CANDIDATE

"""Framework-free pieces shared by every agent-loop integration.

``EarlyStopper`` is the one place that calls ``monitor.observe`` (fail-open, step numbering, history, how to
stop), and ``build_step`` the one Step builder of the live path, so a live step is the step training saw.
Every framework adapter wraps them; a hand-written loop can use them directly (docs/integrations.md).
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Protocol, Sequence, Union, runtime_checkable

from earlyeval.core.decision import Decision
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import KIND_ALIAS, Action, Step, Task, call_action, make_step
from earlyeval.live import reasons

log = logging.getLogger("earlyeval.integrations")

PREDICTED_FAILURE = "PredictedFailure"
PREDICTED_SUCCESS = "PredictedSuccess"
# the candidate patch of a live run: the working tree against HEAD, untracked files included (what mini's and
# SWE-agent's own `git add -A && git diff --cached` submissions hold), staged into a temporary index so that
# the agent's own index is left as it was (the run may go on after the check)
WORKING_DIFF_COMMAND = (
    'd="$(mktemp -d)" && export GIT_INDEX_FILE="$d/index" && git read-tree HEAD && git add -A '
    '&& git diff --cached HEAD; r=$?; rm -rf "$d"; exit $r'
)


USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")


@dataclass(frozen=True)
class ToolCall:
    """One raw tool call of a turn, as the framework hands it over: ``arguments`` a dict, a JSON string or
    a command line.  Rendered to the Action the ingestors build for the same call (``call_action``)."""

    tool: str
    arguments: Any = None


# one item of a turn: an Action as is; a ToolCall or a (tool, arguments) pair -- a raw tool call, rendered by
# render.tool_call_text; or a str -- a command line run by ``default_tool``
CallLike = Union[Action, ToolCall, "tuple[str, Any]", str]


def build_step(
    index: int,
    calls: Iterable[CallLike] = (),
    *,
    thought: str = "",
    observation: str | Sequence[Any] = "",
    error: bool | None = None,
    final_answer: str | None = None,
    usage: Mapping[str, Any] | None = None,
    default_tool: str = "bash",
) -> Step:
    """The Step of one finished turn of a live agent (the one builder every adapter calls).

    Parameters
    ----------
    index : int
        The step's index in its run (0 for the first).
    calls : iterable of Action, ToolCall, (tool, arguments) or str
        The turn's actions: an Action as is, a raw tool call rendered as the ingestors render it, or a
        command line run by ``default_tool``.
    thought : str
        The model's text of the turn.
    observation : str or sequence
        Text, or a list of tool results / content parts joined one per line (``render.content_text``).
    error : bool, optional
        Whether the turn failed (None: not known).
    final_answer : str, optional
        The run's answer, for a turn without actions.
    usage : mapping, optional
        Any of ``input_tokens`` / ``output_tokens`` / ``cached_tokens`` / ``cost_usd``; a missing one is
        unknown (None), never 0.
    default_tool : str, default "bash"
        The tool of a call given as a plain command line.

    Returns
    -------
    Step
        With its kinds from the shared taxonomy (``make_step``).
    """
    acts = [_action(c, default_tool) for c in calls]
    if not isinstance(observation, str):
        observation = "\n".join(content_text(o) for o in observation)
    u = dict(usage or {})
    unknown = set(u) - set(USAGE_KEYS)
    if unknown:
        raise ValueError(f"build_step: unknown usage keys {sorted(unknown)} (known: {USAGE_KEYS})")
    return make_step(
        index,
        acts,
        thought=thought or "",
        observation=observation or "",
        error=error,
        final_answer=final_answer,
        **{k: u.get(k) for k in USAGE_KEYS},
    )


def _action(call: CallLike, default_tool: str) -> Action:
    if isinstance(call, Action):
        return call
    if isinstance(call, str):
        return Action(tool=default_tool, text=call)
    if isinstance(call, ToolCall):
        return call_action(call.tool, call.arguments)
    tool, arguments = call
    return call_action(tool, arguments)


@runtime_checkable
class StepMonitor(Protocol):
    """What an integration needs from a monitor (``earlyeval.Monitor`` has it)."""

    def start(
        self, task: Task | Mapping[str, Any] | None = None, run_id: str | None = None
    ) -> object: ...

    def observe(
        self, step: Step
    ) -> Decision: ...  # earlyeval.Monitor also takes ``candidate=`` (a callable)


def exit_status_for(decision: Decision) -> str:
    """``PredictedSuccess`` when the monitor halts predicting success, else ``PredictedFailure``."""
    return PREDICTED_SUCCESS if decision.outcome == "success" else PREDICTED_FAILURE


@dataclass
class HaltedRun:
    """A run the monitor ended: what was predicted, when, and why."""

    exit_status: str  # PredictedFailure | PredictedSuccess
    outcome: str | None
    step_index: int  # index of the step after which the run was halted
    n_steps: int  # steps observed so far (step_index + 1 when indices start at 0)
    p_success: float | None
    p_failure: float | None
    reason: str
    decision: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_decision(cls, decision: Decision, n_steps: int) -> "HaltedRun":
        if decision.outcome not in ("success", "failure"):
            log.warning(
                "monitor halted with outcome=%r; recording it as a predicted failure",
                decision.outcome,
            )
        return cls(
            exit_status=exit_status_for(decision),
            outcome=decision.outcome,
            step_index=decision.step_index,
            n_steps=n_steps,
            p_success=decision.p_success,
            p_failure=decision.p_failure,
            reason=decision.reason,
            decision=_decision_dict(decision),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def message(self) -> str:
        """One line for logs and exit messages."""
        return (
            f"earlyeval halted the run after step {self.step_index}: {self.exit_status} "
            f"(p_success={_fmt(self.p_success)}, p_failure={_fmt(self.p_failure)}): {self.reason}"
        )


class EarlyStopper:
    """Feeds steps to a monitor, fail-open, and remembers what it said.

    ``observe(step)`` (or ``after_step(...)``, which builds the Step) returns the
    monitor's Decision; an exception from the monitor, or a result that is not a
    Decision, is logged and turned into a "continue" Decision, so the agent never
    crashes because of the monitor.  After the first Decision with ``halt=True``,
    ``halted`` holds a :class:`HaltedRun`.

    ``observe(step, candidate=f)``: ``f()`` returns the agent's candidate patch so far.  A predicted
    success halts only when it is non-empty (a live loop never throws work away); ``submission`` then
    holds that patch, which the adapter submits through its framework's own path.  A monitor whose
    ``observe`` takes no ``candidate`` is gated here the same way.
    """

    def __init__(self, monitor: StepMonitor, *, logger: logging.Logger | None = None):
        self.monitor = monitor
        self.log = logger or log
        self.decisions: list[Decision] = []
        self.halted: HaltedRun | None = None
        self.would_halt: HaltedRun | None = (
            None  # a shadow monitor's first would-be halt (nothing halted)
        )
        self.errors: list[str] = []
        self.n_steps = 0
        self.n_acted = 0  # steps of this run with an action of the agent: a run of none never halts as a success
        self.submission: str | None = None  # the candidate patch a success halt was granted on
        self._takes_candidate = _takes_candidate(monitor)

    # ------------------------------------------------------------------ run
    def start(
        self, task: Task | Mapping[str, Any] | None = None, run_id: str | None = None
    ) -> None:
        """Begin a new run: resets the step counter and tells the monitor (fail-open)."""
        self.decisions = []
        self.halted = None
        self.would_halt = None
        self.errors = []
        self.n_steps = 0
        self.n_acted = 0
        self.submission = None
        try:
            self.monitor.start(task=task, run_id=run_id)
        except Exception as e:  # the monitor must never take the agent down
            self.note_error(f"monitor.start failed: {e!r}")

    def finish(self) -> None:
        """The run ended: a monitor of a benchmark pass (``live.benchpass.PassMonitor``) is told its length and
        whether it was halted; other monitors have nothing to do (fail-open either way)."""
        fin = getattr(self.monitor, "finish", None)
        if not callable(fin):
            return
        try:
            fin(steps=self.n_steps, halted=self.halted is not None)
        except Exception as e:  # the run is over: never take the agent down
            self.note_error(f"monitor.finish failed: {e!r}")

    @property
    def next_index(self) -> int:
        return self.n_steps

    @property
    def last(self) -> Decision | None:
        return self.decisions[-1] if self.decisions else None

    # ---------------------------------------------------------------- steps
    def observe(self, step: Step, candidate: Callable[[], str | None] | None = None) -> Decision:
        """Score one finished step; never raises.  ``candidate``: see the class doc."""
        self.n_steps += 1
        self.n_acted += bool(getattr(step, "actions", None))
        seen: dict[str, str] = {}

        def read() -> str:
            if "patch" not in seen:
                try:
                    seen["patch"] = str(candidate() or "") if candidate is not None else ""
                except Exception as e:  # fail open: no readable patch, no success halt
                    self.note_error(
                        f"reading the candidate patch failed at step {step.index}: {e!r}"
                    )
                    seen["patch"] = ""
            return seen["patch"]

        try:
            if candidate is not None and self._takes_candidate and self.halted is None:
                d = self.monitor.observe(step, candidate=read)  # type: ignore[call-arg]
            else:
                d = self.monitor.observe(step)
            if not isinstance(d, Decision):
                raise TypeError(f"monitor.observe returned {type(d).__name__}, not Decision")
        except Exception as e:
            msg = f"monitor.observe failed at step {step.index}: {e!r}"
            self.note_error(msg)
            d = Decision.proceed(f"fail-open: {msg}", step_index=step.index)
        if d.step_index < 0:
            d.step_index = step.index
        if d.halt and self.halted is None and d.outcome == "success" and candidate is not None:
            # a monitor that took no candidate: the same gates here (it may stay halted inside; the run goes on)
            why = reasons.NO_ACTION_YET if not self.n_acted else reasons.candidate_missing(read)
            if why:
                d = dataclasses.replace(
                    d,
                    halt=False,
                    outcome=None,
                    halt_rule="",
                    reason=reasons.held(why, d.reason),
                )
        self.decisions.append(d)
        if d.would_halt and self.would_halt is None:  # shadow mode: recorded, the run goes on
            would = dataclasses.replace(d, halt=True, outcome=d.would_outcome)
            self.would_halt = HaltedRun.from_decision(would, self.n_steps)
        if d.halt and self.halted is None:
            self.halted = HaltedRun.from_decision(d, self.n_steps)
            if d.outcome == "success" and candidate is not None:
                self.submission = read()
            self.log.info("%s", self.halted.message())
        return d

    def after_step(
        self,
        *,
        action: str = "",
        observation: str = "",
        thought: str = "",
        tool: str = "bash",
        actions: Iterable[CallLike] | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cached_tokens: int | None = None,
        cost_usd: float | None = None,
        error: bool | None = None,
        final_answer: str | None = None,
        candidate: Callable[[], str | None] | None = None,
    ) -> Decision:
        """Build the Step of one finished turn (shared taxonomy) and score it; never raises.

        Parameters
        ----------
        action : str
            One command line, run with ``tool``.  A turn with no action (a final answer, or a reply the
            scaffold rejected) is ``action=""``; pass ``error=True`` for a rejected one.
        observation, thought : str
            What the turn returned, and the model's text.
        tool : str, default "bash"
            The tool of ``action``.
        actions : iterable of Action, ToolCall, (tool, arguments) or str, optional
            Several calls instead of ``action``, each rendered as ``build_step`` renders it (the arguments
            of an editor call give ``create /a.py``, kind edit).
        input_tokens, output_tokens, cached_tokens : int, optional
            The turn's usage; None is unknown, never 0.
        cost_usd : float, optional
            The turn's cost; None is unknown.
        error : bool, optional
            Whether the turn failed.
        final_answer : str, optional
            The run's answer, for a turn without actions.
        candidate : callable, optional
            Returns the run's patch so far: a predicted success halts only when it is non-empty.

        Returns
        -------
        Decision
            The monitor's decision; input that cannot be built into a step gives a decision to proceed,
            with the error recorded in ``errors`` (fail-open).
        """
        try:
            acts = _actions(action, tool, actions)
            step = build_step(
                self.next_index,
                acts,
                thought=thought,
                observation=observation,
                usage={
                    "input_tokens": input_tokens,
                    "output_tokens": output_tokens,
                    "cached_tokens": cached_tokens,
                    "cost_usd": cost_usd,
                },
                error=error,
                final_answer=final_answer,
                default_tool=tool or "bash",
            )
        except Exception as e:  # bad input from the caller's loop: do not stop the agent for it
            msg = f"could not build step {self.next_index}: {e!r}"
            self.note_error(msg)
            return Decision.proceed(f"fail-open: {msg}", step_index=self.next_index)
        return self.observe(step, candidate)

    # -------------------------------------------------------------- records
    def summary(self) -> dict[str, Any]:
        """JSON-ready record for a trajectory file: the halt (if any), last decision, per-step probabilities."""
        last = self.last
        return {
            "halt_on": getattr(self.monitor, "halt_on", None),
            "exit_status": self.halted.exit_status if self.halted else None,
            "halted": self.halted is not None,
            "halt": self.halted.to_dict() if self.halted else None,
            # shadow mode: where the monitor would have halted, and with which outcome (nothing was halted)
            "would_halt": self.would_halt.to_dict() if self.would_halt else None,
            "n_steps_observed": self.n_steps,
            "last_decision": _decision_dict(last) if last is not None else None,
            "history": [
                {
                    "step": d.step_index,
                    "p_success": d.p_success,
                    "p_failure": d.p_failure,
                    "halt": d.halt,
                    "would_halt": d.would_halt,
                }
                for d in self.decisions
            ],
            "errors": list(self.errors),
            # the candidate patch a success halt was granted on (submitted through the framework), in size only
            "submission": (
                {"chars": len(self.submission), "files": self.submission.count("diff --git ")}
                if self.submission
                else None
            ),
        }

    def note_error(self, msg: str) -> None:
        self.errors.append(msg)
        self.log.warning("earlyeval (continuing the run): %s", msg, exc_info=True)


def _actions(action: str, tool: str, actions: Iterable[CallLike] | None) -> list[CallLike]:
    """The turn's calls for ``build_step``: ``actions`` as given (pairs are raw tool calls there too), else the
    one ``action`` line run by ``tool``."""
    if actions is not None:
        return [a if isinstance(a, (Action, ToolCall, str)) else _pair(a) for a in actions]
    return [Action(tool=tool or "", text=action)] if action else []


def _pair(call: Any) -> tuple[str, Any]:
    tool, arguments = call  # a malformed pair raises here, and after_step fails open on it
    return str(tool), arguments


def _takes_candidate(monitor: Any) -> bool:
    """Whether ``monitor.observe`` accepts ``candidate=`` (earlyeval.Monitor does; a minimal StepMonitor may not)."""
    try:
        params = inspect.signature(monitor.observe).parameters
    except (TypeError, ValueError, AttributeError):
        return False
    return "candidate" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def _decision_dict(d: Decision) -> dict[str, Any]:
    try:
        return d.to_dict()
    except Exception:  # a Decision with unserialisable extras must not break saving
        return {
            "halt": d.halt,
            "outcome": d.outcome,
            "p_success": d.p_success,
            "p_failure": d.p_failure,
            "reason": str(d.reason),
        }


def _fmt(p: float | None) -> str:
    return "n/a" if p is None else f"{p:.3f}"


__all__ = [
    "KIND_ALIAS",
    "PREDICTED_FAILURE",
    "PREDICTED_SUCCESS",
    "WORKING_DIFF_COMMAND",
    "build_step",
    "EarlyStopper",
    "HaltedRun",
    "StepMonitor",
    "exit_status_for",
]

"""OpenHands Software Agent SDK (``openhands-sdk``): a conversation callback that ends decided runs.

Usage (tested with openhands-sdk 1.58.2 on Python 3.12; the SDK needs >= 3.12)::

    from openhands.sdk import Conversation
    from earlyeval.integrations.openhands import EarlyStopCallback

    halt = EarlyStopCallback.from_config({"model": "models/swebench", "task": "django__django-1234"})
    conversation = Conversation(agent=agent, workspace=repo_dir, callbacks=[halt])
    halt.attach(conversation)           # the callback needs the conversation to end it
    conversation.send_message(problem_statement)
    conversation.run()                  # returns early when the monitor halts
    conversation.state.execution_status # STUCK (predicted failure) / FINISHED (predicted success)
    conversation.state.agent_state["earlyeval"]  # summary: halt, probabilities, per-step history

(``EarlyStopCallback(monitor, run_id=...)`` takes any monitor instead of a config.)

The SDK calls every callback with every event.  One step is one LLM response:
its ``ActionEvent`` s (one per tool call, all emitted before any runs, grouped
by ``llm_response_id``) and the observation events that answer them
(``ObservationEvent``, ``UserRejectObservation``, ``AgentErrorEvent``, matched by
``tool_call_id``).  When the last observation of a response arrives, the step
is built by ``base.build_step`` (the one live Step builder) and scored.  An
``AgentErrorEvent`` that answers no action (an unparseable tool call) is a
rejected step: no action, ``error=True``.  A response that only calls
``finish`` is not scored: the agent has already ended the run.

Which outcomes halt: ``halt_on`` (``failure`` by default: only the doomed runs stop).  A predicted
success halts only when the conversation's workspace has a non-empty diff (``workspace.execute_command``
of ``base.WORKING_DIFF_COMMAND``: tracked and untracked files against HEAD, the index untouched): what
the workspace holds is the run's result, as when the agent finishes.  Without one the run goes on and
the decision says why.

Stopping (``end_as="terminal"``, default): the conversation's status is set, under
the state lock, to the terminal status the SDK's own run-enders use -- ``STUCK`` for
a predicted failure, as the SDK's stuck detector does
(``LocalConversation._check_stuck_or_nudge``: it sets ``execution_status = STUCK``
and the run loop exits at its next iteration), ``FINISHED`` for a predicted
success, as the agent's ``finish`` does (the run loop then runs the stop hooks
and exits).  Both are ``is_terminal()``.  ``end_as="pause"`` calls
``conversation.pause()`` instead (status ``PAUSED``, resumable, a ``PauseEvent``).
The summary is written to ``conversation.state.agent_state["earlyeval"]`` after
every step (by reassignment, as the SDK asks, so it is persisted with the
conversation).
Token and cost deltas per step come from ``conversation.conversation_stats``.

The module does not import the SDK: it recognises events by their class names
(``ActionEvent``, ``ObservationEvent``, ...) and attributes, so it imports on
Python 3.11 too and its logic is unit-tested there with stand-ins; the
end-to-end test drives a real ``Conversation`` with the SDK's ``TestLLM``.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Action, Step, Task
from earlyeval.integrations.base import PREDICTED_SUCCESS, WORKING_DIFF_COMMAND, EarlyStopper, StepMonitor, build_step
from earlyeval.integrations.config import halt_on_of, monitor_from_config, split_config

log = logging.getLogger("earlyeval.integrations.openhands")

_OBSERVATION_EVENTS = {"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"}
_FINISH_TOOLS = {"finish"}
# how a halt ends the conversation: "terminal" -- the status the SDK's own run-enders set (STUCK for a
# predicted failure, as its stuck detector; FINISHED for a predicted success, as the finish tool); "pause"
END_AS = ("terminal", "pause")


def _mro_names(obj: Any) -> set[str]:
    return {c.__name__ for c in type(obj).__mro__}


def _text(content: Any) -> str:
    """Text of a TextContent list (or a single one): the shared ``content_text``."""
    return content_text(content)


def call_of(ev: Any) -> tuple[str, Any]:
    """One ``ActionEvent`` as a raw tool call ``(tool, arguments)`` for ``build_step`` (which renders it)."""
    args = getattr(getattr(ev, "tool_call", None), "arguments", None)
    if args is None and getattr(ev, "action", None) is not None:
        args = ev.action.model_dump(exclude={"kind"})
    return str(getattr(ev, "tool_name", "") or ""), args


def action_of(ev: Any) -> Action:
    """One ``ActionEvent`` as an Action: the tool name and its arguments rendered as the ingestors do."""
    return build_step(0, [call_of(ev)]).actions[0]


def observation_of(ev: Any) -> tuple[str, bool | None]:
    """(text, error) of one observation event."""
    names = _mro_names(ev)
    if "AgentErrorEvent" in names:
        return str(getattr(ev, "error", "")), True
    if "UserRejectObservation" in names:
        return f"Action rejected: {getattr(ev, 'rejection_reason', '')}", None
    obs = getattr(ev, "observation", None)
    text = getattr(obs, "text", None)
    if not isinstance(text, str):
        text = _text(getattr(obs, "content", None))
    code = getattr(obs, "exit_code", None)
    if isinstance(code, int) and not isinstance(code, bool):
        return text, code != 0
    is_error = getattr(obs, "is_error", None)
    return text, (bool(is_error) if is_error is not None else None)


class EarlyStopCallback:
    """Conversation callback: scores each finished LLM response and pauses the conversation on a halt."""

    def __init__(self, monitor: StepMonitor, *, run_id: str | None = None, task_id: str | None = None,
                 state_key: str = "earlyeval", end_as: str = "terminal", task: Any = None):
        if end_as not in END_AS:
            raise ValueError(f"end_as must be one of {END_AS}, not {end_as!r}")
        self.stopper = EarlyStopper(monitor, logger=log)
        self.end_as = end_as
        self.task = task
        self.run_id = run_id
        self.task_id = task_id
        self.state_key = state_key
        self.conversation: Any = None
        self._started = False
        self._prompt = ""
        self._pending: dict[str, dict[str, Any]] = {}  # llm_response_id -> {"actions": [...], "obs": {call_id: ev}}
        self._last_usage: tuple[int, int, int, float] | None = None

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "EarlyStopCallback":
        """From an ``earlyeval`` config block (``integrations/config.py`` keys, ``halt_on`` default ``failure``,
        plus ``run_id``, ``task`` -- a task id, or a mapping of Task / SWE-bench fields -- and ``end_as``)."""
        mon, opts = split_config(cfg, ("run_id", "task", "end_as"), "earlyeval")
        mon["halt_on"] = halt_on_of(mon, "earlyeval")
        task = opts.get("task")
        return cls(monitor_from_config(mon), run_id=opts.get("run_id"), end_as=opts.get("end_as", "terminal"),
                   task_id=task if isinstance(task, str) else None, task=task if isinstance(task, Mapping) else None)

    @property
    def halted(self):
        return self.stopper.halted

    def attach(self, conversation: Any) -> "EarlyStopCallback":
        """Give the callback the conversation it pauses (and reads token usage from)."""
        self.conversation = conversation
        self._last_usage = self._usage()
        return self

    # ------------------------------------------------------------------ events
    def __call__(self, event: Any) -> None:
        try:
            self._on_event(event)
        except Exception as e:  # never break the conversation's event pipeline
            self.stopper.note_error(f"callback failed on {type(event).__name__}: {e!r}")

    def _on_event(self, event: Any) -> None:
        names = _mro_names(event)
        if "MessageEvent" in names and getattr(event, "source", None) == "user" and not self._prompt:
            self._prompt = _text(getattr(getattr(event, "llm_message", None), "content", None))
            return
        if "ActionEvent" in names:
            self._ensure_started()
            group = self._pending.setdefault(str(event.llm_response_id), {"actions": [], "obs": {}})
            group["actions"].append(event)
            return
        if names & _OBSERVATION_EVENTS:
            self._ensure_started()
            call_id = getattr(event, "tool_call_id", None)
            for rid, group in self._pending.items():
                if any(a.tool_call_id == call_id for a in group["actions"]):
                    group["obs"][call_id] = event
                    if len(group["obs"]) >= len(group["actions"]):
                        del self._pending[rid]
                        self._score_group(group)
                    return
            if "AgentErrorEvent" in names:  # a tool call the agent could not even parse
                text, _ = observation_of(event)
                self._score(build_step(self.stopper.next_index, [], observation=text, error=True, usage=self._usage_delta()))

    def _score_group(self, group: dict[str, Any]) -> None:
        actions = group["actions"]
        if all(getattr(a, "tool_name", "") in _FINISH_TOOLS for a in actions):
            return  # the agent finished; nothing left to stop
        texts, errors = [], []
        for a in actions:
            ev = group["obs"].get(a.tool_call_id)
            if ev is not None:
                t, err = observation_of(ev)
                texts.append(t)
                errors.append(err)
        known = [e for e in errors if e is not None]
        thought = "\n".join(t for t in (_text(getattr(a, "thought", None)) for a in actions) if t).strip()
        step = build_step(
            self.stopper.next_index,
            [call_of(a) for a in actions],
            thought=thought,
            observation="\n".join(texts).strip(),
            error=any(known) if known else None,
            usage=self._usage_delta(),
        )
        self._score(step)

    def _score(self, step: Step) -> None:
        already = self.stopper.halted is not None
        self.stopper.observe(step, candidate=self.workspace_diff)
        self._record()
        if self.stopper.halted is not None and not already:
            self._end()

    def workspace_diff(self) -> str:
        """The conversation workspace's diff against HEAD, untracked files included (a success halt's candidate)."""
        conv = self.conversation
        ws = getattr(conv, "workspace", None) or getattr(getattr(conv, "state", None), "workspace", None)
        if ws is None:
            raise RuntimeError("no conversation workspace to read the diff from (call attach(conversation))")
        r = ws.execute_command(WORKING_DIFF_COMMAND, cwd=str(ws.working_dir))
        if getattr(r, "exit_code", 1) != 0:
            raise RuntimeError(f"the workspace diff failed (exit {getattr(r, 'exit_code', None)}): {getattr(r, 'stderr', '')!s:.300}")
        return str(getattr(r, "stdout", "") or "")

    # ---------------------------------------------------------------- helpers
    def _ensure_started(self) -> None:
        if self._started:
            return
        self._started = True
        conv_id = getattr(self.conversation, "id", None)
        run_id = self.run_id or (str(conv_id) if conv_id is not None else None)
        task: Any = Task(task_id=self.task_id or run_id or "", prompt=self._prompt)
        if isinstance(self.task, Mapping):
            task = dict(self.task)
            if not (task.get("prompt") or task.get("problem_statement")):
                task["prompt"] = self._prompt
        self.stopper.start(task=task, run_id=run_id)

    def _end(self) -> None:
        """End the run: as the SDK's stuck detector does (``end_as="terminal"``), or ``pause()``."""
        conv = self.conversation
        if conv is None:
            self.stopper.note_error("monitor halted but no conversation is attached: call attach(conversation)")
            return
        try:
            if self.end_as == "pause":
                conv.pause()
                return
            status_cls = type(conv.state.execution_status)
            target = status_cls("finished" if self.stopper.halted.exit_status == PREDICTED_SUCCESS else "stuck")
            with conv.state:  # the run loop's lock (re-entrant for the thread running the step, as pause() uses it)
                if str(getattr(conv.state.execution_status, "value", "")) in ("running", "idle"):
                    conv.state.execution_status = target
            log.warning("%s; conversation status set to %s", self.stopper.halted.message(), target.value)
        except Exception as e:
            self.stopper.note_error(f"could not end the conversation ({self.end_as}): {e!r}")

    def _record(self) -> None:
        conv = self.conversation
        if conv is None:
            return
        try:
            state = conv.state
            state.agent_state = {**state.agent_state, self.state_key: self.stopper.summary()}
        except Exception as e:
            self.stopper.note_error(f"could not write agent_state: {e!r}")

    def _usage(self) -> tuple[int, int, int, float] | None:
        try:
            m = self.conversation.conversation_stats.get_combined_metrics()
            u = m.accumulated_token_usage
            return (int(u.prompt_tokens or 0), int(u.completion_tokens or 0), int(u.cache_read_tokens or 0),
                    float(m.accumulated_cost or 0.0))
        except Exception:
            return None

    def _usage_delta(self) -> dict[str, Any]:
        now, before = self._usage(), self._last_usage
        self._last_usage = now
        if now is None or before is None:
            return {}
        return {
            "input_tokens": now[0] - before[0],
            "output_tokens": now[1] - before[1],
            "cached_tokens": now[2] - before[2],
            "cost_usd": now[3] - before[3],
        }


__all__ = ["EarlyStopCallback", "action_of", "observation_of"]

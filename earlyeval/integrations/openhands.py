"""OpenHands Software Agent SDK (``openhands-sdk``): a conversation callback that ends decided runs.

It groups events into steps with the ``openhands-conversation`` reader's own ``StepFolder``
(``earlyeval.steps.openhands_conversation``) and ends a run as
the SDK's own run-enders do (``STUCK`` / ``FINISHED``), without importing the SDK. Usage and behaviour:
docs/integrations.md, "OpenHands SDK".
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from earlyeval.config.schema import Choice
from earlyeval.core.errors import IngestError
from earlyeval.core.trajectory import Action, Step, Task, call_action
from earlyeval.integrations.base import (
    PREDICTED_SUCCESS,
    WORKING_DIFF_COMMAND,
    EarlyStopper,
    StepMonitor,
)
from earlyeval.integrations.config import (
    RUN_ID,
    TASK,
    halt_on_of,
    monitor_from_config,
    split_config,
)
from earlyeval.steps.openhands_conversation import (
    OBSERVATION_EVENTS,
    StepFolder,
    call_of,
    event_kinds,
    observation_of,
    response_usage,
)

log = logging.getLogger("earlyeval.integrations.openhands")

# how a halt ends the conversation: "terminal" -- the status the SDK's own run-enders set (STUCK for a
# predicted failure, as its stuck detector; FINISHED for a predicted success, as the finish tool); "pause"
END_AS = ("terminal", "pause")
ADAPTER_KEYS = {
    "run_id": RUN_ID,
    "task": TASK,
    "end_as": Choice(END_AS),
}  # checked (integrations.config)


def action_of(ev: Any) -> Action:
    """One ``ActionEvent`` as an Action: the tool name and its arguments rendered as the ingestors do."""
    return call_action(*call_of(ev))


class EarlyStopCallback:
    """Conversation callback: scores each finished LLM response and pauses the conversation on a halt."""

    def __init__(
        self,
        monitor: StepMonitor,
        *,
        run_id: str | None = None,
        task_id: str | None = None,
        state_key: str = "earlyeval",
        end_as: str = "terminal",
        task: Any = None,
    ):
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
        self._folder = StepFolder(self._response_usage)
        self.refused: str | None = (
            None  # why the conversation's events stopped being scored (fail-open)
        )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> "EarlyStopCallback":
        """From an ``earlyeval`` config block (``integrations/config.py`` keys, ``halt_on`` default ``failure``,
        plus ``run_id``, ``task`` -- a task id, or a mapping of Task / SWE-bench fields -- and ``end_as``)."""
        mon, opts = split_config(cfg, ADAPTER_KEYS, "earlyeval")
        mon = mon.replace(halt_on=halt_on_of(mon, "earlyeval"))
        task = opts.get("task")
        return cls(
            monitor_from_config(mon),
            run_id=opts.get("run_id"),
            end_as=opts.get("end_as", "terminal"),
            task_id=task if isinstance(task, str) else None,
            task=task if isinstance(task, Mapping) else None,
        )

    @property
    def halted(self):
        return self.stopper.halted

    def attach(self, conversation: Any) -> "EarlyStopCallback":
        """Give the callback the conversation it pauses (and reads token usage from)."""
        self.conversation = conversation
        return self

    # ------------------------------------------------------------------ events
    def __call__(self, event: Any) -> None:
        try:
            self._on_event(event)
        except Exception as e:  # never break the conversation's event pipeline
            self.stopper.note_error(f"callback failed on {type(event).__name__}: {e!r}")

    def _on_event(self, event: Any) -> None:
        if self.refused is not None:
            return  # the conversation's events could not be placed: no step is scored after that
        if event_kinds(event) & (OBSERVATION_EVENTS | {"ActionEvent"}):
            self._ensure_started()
        seen = len(self._folder.warnings)
        try:
            steps = self._folder.feed(event)
        except (
            IngestError
        ) as e:  # a record the reader cannot place: the steps after it would be misread
            self.refused = str(e)
            self.stopper.note_error(f"stopped scoring this conversation: {e}")
            return
        finally:
            for w in self._folder.warnings[seen:]:
                log.warning("earlyeval: %s", w)
        for step in steps:
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
        ws = getattr(conv, "workspace", None) or getattr(
            getattr(conv, "state", None), "workspace", None
        )
        if ws is None:
            raise RuntimeError(
                "no conversation workspace to read the diff from (call attach(conversation))"
            )
        r = ws.execute_command(WORKING_DIFF_COMMAND, cwd=str(ws.working_dir))
        if getattr(r, "exit_code", 1) != 0:
            raise RuntimeError(
                f"the workspace diff failed (exit {getattr(r, 'exit_code', None)}): {getattr(r, 'stderr', '')!s:.300}"
            )
        return str(getattr(r, "stdout", "") or "")

    # ---------------------------------------------------------------- helpers
    def _ensure_started(self) -> None:
        if self._started:
            return
        self._started = True
        conv_id = getattr(self.conversation, "id", None)
        run_id = self.run_id or (str(conv_id) if conv_id is not None else None)
        prompt = self._folder.prompt
        task: Any = Task(task_id=self.task_id or run_id or "", prompt=prompt)
        if isinstance(self.task, Mapping):
            task = dict(self.task)
            if not (task.get("prompt") or task.get("problem_statement")):
                task["prompt"] = prompt
        self.stopper.start(task=task, run_id=run_id)

    def _end(self) -> None:
        """End the run: as the SDK's stuck detector does (``end_as="terminal"``), or ``pause()``."""
        conv = self.conversation
        if conv is None:
            self.stopper.note_error(
                "monitor halted but no conversation is attached: call attach(conversation)"
            )
            return
        try:
            if self.end_as == "pause":
                conv.pause()
                return
            status_cls = type(conv.state.execution_status)
            target = status_cls(
                "finished" if self.stopper.halted.exit_status == PREDICTED_SUCCESS else "stuck"
            )
            with conv.state:  # the run loop's lock (re-entrant for the thread running the step, as pause() uses it)
                if str(getattr(conv.state.execution_status, "value", "")) in ("running", "idle"):
                    conv.state.execution_status = target
            log.warning(
                "%s; conversation status set to %s", self.stopper.halted.message(), target.value
            )
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

    def _response_usage(self, response_ids: list[str]) -> dict[str, Any]:
        """What the conversation's stats recorded for these LLM responses (unknown: {})."""
        try:
            return response_usage(
                self.conversation.conversation_stats.usage_to_metrics, response_ids
            )
        except Exception:
            return {}


__all__ = ["EarlyStopCallback", "action_of", "observation_of"]

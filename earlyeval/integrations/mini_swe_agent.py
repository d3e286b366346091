"""mini-swe-agent: an agent that asks the earlyeval monitor after every step.

``EarlyStopAgent`` scores each finished turn in ``query()``, before the next paid model call, and ends the run
through mini-swe-agent's own exit path (1.x and 2.x). Usage, the YAML config and the interactive agent:
docs/integrations.md, "mini-swe-agent".
"""

from __future__ import annotations

import inspect
import logging
from typing import Any, Mapping

from minisweagent.agents.default import DefaultAgent

from earlyeval.config.schema import NAME
from earlyeval.core.trajectory import Task
from earlyeval.integrations.base import (
    PREDICTED_FAILURE,
    PREDICTED_SUCCESS,
    WORKING_DIFF_COMMAND,
    EarlyStopper,
    HaltedRun,
    StepMonitor,
)
from earlyeval.integrations.config import (
    RUN_ID,
    SWITCH,
    TASK,
    halt_on_of,
    monitor_from_config,
    split_config,
    submit_required,
)
from earlyeval.live.reasons import (
    HELD,  # how a Decision starts when a success halt waits for a patch
)
from earlyeval.steps.mini_swe_agent import steps_from_new_messages as steps_from_new_messages

try:  # mini-swe-agent 2.x
    from minisweagent.exceptions import InterruptAgentFlow as _FlowBase

    MINI_SWE_AGENT_V2 = True
except ImportError:  # 1.x
    from minisweagent.agents.default import TerminatingException as _FlowBase  # type: ignore[no-redef]

    MINI_SWE_AGENT_V2 = False

log = logging.getLogger("earlyeval.integrations.mini_swe_agent")


class PredictedOutcome(_FlowBase):  # type: ignore[misc,valid-type]
    """Ends the run the way mini-swe-agent's own LimitsExceeded does; the class name is the exit status."""

    exit_status = "PredictedOutcome"

    def __init__(self, halted: HaltedRun, submission: str = ""):
        self.halted = halted
        self.submission = submission
        if MINI_SWE_AGENT_V2:
            super().__init__(
                {
                    "role": "exit",
                    "content": halted.message(),
                    "extra": {
                        "exit_status": self.exit_status,
                        "submission": submission,
                        "earlyeval": halted.to_dict(),
                    },
                }
            )
        else:
            super().__init__(halted.message())


class PredictedFailure(PredictedOutcome):
    exit_status = PREDICTED_FAILURE


class PredictedSuccess(PredictedOutcome):
    exit_status = PREDICTED_SUCCESS


def exception_for(halted: HaltedRun, submission: str = "") -> PredictedOutcome:
    cls = PredictedSuccess if halted.exit_status == PREDICTED_SUCCESS else PredictedFailure
    return cls(halted, submission)


# ---------------------------------------------------------------------------
# the agent
# ---------------------------------------------------------------------------


# the adapter's own keys of the earlyeval block, each checked (integrations.config)
ADAPTER_KEYS = {"task": TASK, "run_id": RUN_ID, "submit_diff": SWITCH, "diff_command": NAME}
DEFAULT_DIFF_COMMAND = (
    WORKING_DIFF_COMMAND  # tracked and untracked files against HEAD, the agent's index untouched
)
# InteractiveAgent's own config keys: an agent config that has them asks for the interactive variant
INTERACTIVE_KEYS = ("mode", "whitelist_actions", "confirm_exit")
# mini's entry points that build an InteractiveAgent by default (get_agent(..., default_type="interactive"))
INTERACTIVE_RUNNERS = ("minisweagent.run.mini", "minisweagent.run.benchmarks.swebench_single")


class EarlyStopAgent(DefaultAgent):
    """``DefaultAgent`` that scores each finished turn and ends the run when the monitor says so.

    Switched on from a mini-swe-agent YAML config, with no Python::

        agent:
          agent_class: earlyeval.integrations.mini_swe_agent.EarlyStopAgent
          earlyeval:
            model: models/swebench          # earlyeval train's model dir (required)
            thresholds: {success: 0.9, failure: 0.99}   # optional override
            tasks: data/swebench/tasks.parquet          # optional: completes a task known by id
            task: django__django-11099      # task id (or a mapping of Task / SWE-bench fields)
            halt_on: failure                # default; `both`: a predicted success halts too, once there is a diff

    mini-swe-agent's ``get_agent`` pops ``agent_class`` and passes every other ``agent`` key as a
    keyword argument, so ``earlyeval`` arrives here (the other keys go to ``DefaultAgent``).  From
    Python, ``monitor=`` (any :class:`~earlyeval.integrations.base.StepMonitor`) may be given instead;
    it halts on what it was built with (``Monitor(..., halt_on=...)``).  The task the monitor is started
    with: ``earlyeval.task`` (``earlyeval-mini swebench`` sets it to the whole SWE-bench instance: id,
    problem statement, gold patch, tests), else ``task_id``, else the runner's ``instance_id``, with the
    run's task text as prompt.  Under ``mini`` it is an :class:`EarlyStopInteractiveAgent`.
    """

    def __new__(cls, *args: Any, **kwargs: Any):
        if cls is EarlyStopAgent and wants_interactive(kwargs):
            return super().__new__(interactive_class())
        return super().__new__(cls)

    def __init__(
        self,
        model: Any,
        env: Any,
        *,
        monitor: StepMonitor | None = None,
        earlyeval: Mapping[str, Any] | None = None,
        run_id: str | None = None,
        task_id: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(model, env, **kwargs)
        opts: dict[str, Any] = {}
        if monitor is None:
            mon_cfg, opts = split_config(earlyeval, ADAPTER_KEYS, "agent.earlyeval")
            halt_on = halt_on_of(mon_cfg, "agent.earlyeval")
            monitor = monitor_from_config(mon_cfg, "agent.earlyeval", allow_pass=True)
            self.earlyeval_config: dict[str, Any] = {**mon_cfg.block(), **opts, "halt_on": halt_on}
        else:
            if earlyeval is not None:
                _, opts = split_config(
                    {"model": "<given monitor>", **earlyeval}, ADAPTER_KEYS, "agent.earlyeval"
                )
            # a monitor without the setting decides by itself
            halt_on = str(getattr(monitor, "halt_on", "both"))
            self.earlyeval_config = dict(opts)
        self.stopper = EarlyStopper(monitor, logger=log)
        self.run_id = run_id or opts.get("run_id")
        self.task_spec = opts.get("task")
        self.task_id = task_id or (self.task_spec if isinstance(self.task_spec, str) else None)
        self.halt_on = halt_on
        # on whenever a success halt is possible (it waits for the patch and submits it); a ConfigError if turned off then
        self.submit_diff = submit_required(
            {**opts, "halt_on": halt_on}, "submit_diff", "agent.earlyeval"
        )
        self.diff_command = str(opts.get("diff_command") or DEFAULT_DIFF_COMMAND)
        self._scored_upto: int | None = None

    # -- lifecycle ---------------------------------------------------------
    def run(self, task: str = "", **kwargs: Any):  # type: ignore[override]
        self._scored_upto = None
        self.stopper.start(
            task=self.monitor_task(task), run_id=self.run_id or self._task_id() or None
        )
        try:
            return super().run(task, **kwargs)
        finally:  # a pass monitor learns the run's length (and whether it was halted) when it ends
            self.stopper.finish()

    def _task_id(self) -> str:
        return self.task_id or getattr(self, "instance_id", "") or self.run_id or ""

    def monitor_task(self, task_text: str) -> Task | dict:
        """The task the monitor starts with: the configured task (a mapping: a benchmark instance), or id + prompt."""
        if isinstance(self.task_spec, Mapping):
            spec = dict(self.task_spec)
            if not (spec.get("prompt") or spec.get("problem_statement")):
                spec["prompt"] = task_text or ""
            return spec
        return Task(task_id=self._task_id(), prompt=task_text or "")

    def query(self) -> dict:
        self.score_new_messages()
        return super().query()

    def score_new_messages(self) -> None:
        """Feed the turns added since the last call to the monitor; raise the halt if it says so."""
        if self._scored_upto is None:  # first model call: only the system/task prompt so far
            self._scored_upto = len(self.messages)
            return
        if self.stopper.halted is not None:
            raise self._halt_exception()  # (already raised once; keep ending the run)
        new = self.messages[self._scored_upto :]
        self._scored_upto = len(self.messages)
        try:
            steps = steps_from_new_messages(new, self.stopper.next_index)
        except Exception as e:  # never crash the agent over a message we could not read
            self.stopper.note_error(
                f"could not convert messages {self._scored_upto - len(new)}..: {e!r}"
            )
            return
        for step in steps:
            d = self.stopper.observe(
                step, candidate=self.working_diff if self.submit_diff else None
            )
            if self.stopper.halted is not None:
                self.on_halt(self.stopper.halted)
                raise self._halt_exception()
            if d.reason.startswith(HELD):
                self.on_held(d.reason)

    def on_halt(self, halted: HaltedRun) -> None:
        """Called once, when the monitor ends the run (the interactive variant prints it)."""

    def on_held(self, reason: str) -> None:
        """Called when a predicted success waits for a patch (the interactive variant prints it, once)."""

    def _halt_exception(self) -> PredictedOutcome:
        halted = self.stopper.halted
        assert halted is not None
        submission = ""
        if self.submit_diff and halted.exit_status == PREDICTED_SUCCESS:
            submission = (
                self.stopper.submission
                if self.stopper.submission is not None
                else self.working_diff()
            )
        return exception_for(halted, submission)

    def working_diff(self) -> str:
        """The working tree's diff against HEAD, untracked files included (``diff_command``); "" on failure."""
        try:
            out = (
                self.env.execute({"command": self.diff_command})
                if MINI_SWE_AGENT_V2
                else self.env.execute(self.diff_command)
            )
        except Exception as e:
            self.stopper.note_error(f"submit_diff: {self.diff_command!r} failed: {e!r}")
            return ""
        if not isinstance(out, Mapping) or out.get("returncode") != 0:
            self.stopper.note_error(f"submit_diff: {self.diff_command!r} returned {out!r:.300}")
            return ""
        return str(out.get("output") or "")

    # -- saving --------------------------------------------------------------
    def earlyeval_info(self) -> dict[str, Any]:
        """``{"earlyeval": summary}``: for 1.x ``save_traj(extra_info=...)``; 2.x saves it itself."""
        summary = self.stopper.summary()
        summary["config"] = {
            k: (str(v) if k == "model" else _task_id_of(v) if k == "task" else v)
            for k, v in self.earlyeval_config.items()
        }
        th = getattr(self.stopper.monitor, "thresholds", None)
        if isinstance(th, Mapping):
            summary["thresholds"] = dict(th)
        return {"earlyeval": summary}

    def serialize(self, *extra_dicts: dict) -> dict:  # 2.x only (1.x agents do not serialize)
        return super().serialize({"info": self.earlyeval_info()}, *extra_dicts)  # type: ignore[misc]


_INTERACTIVE: list[type] = []


def interactive_class() -> type:
    """``EarlyStopInteractiveAgent``: mini's ``InteractiveAgent`` (confirm / yolo / human modes, the step display)
    with the monitor.  Built on first use, because importing mini's interactive module opens its prompt
    session (a batch run never needs it); ``earlyeval.integrations.mini_swe_agent.EarlyStopInteractiveAgent``
    names it (module ``__getattr__``), as a config's ``agent_class`` may."""
    if not _INTERACTIVE:
        from minisweagent.agents.interactive import (  # the console mini's step display uses
            InteractiveAgent,
            console,
        )

        class EarlyStopInteractiveAgent(EarlyStopAgent, InteractiveAgent):
            """``EarlyStopAgent`` + mini's ``InteractiveAgent``; ``EarlyStopAgent`` builds it by itself under ``mini``.

            Turns are scored where ``EarlyStopAgent`` scores them, before the next model call.  In human mode the
            commands are the user's, not a model turn, and are not scored.  The halt is printed on mini's
            console, then the run ends with its exit message (which the step display prints too)."""

            def query(self) -> dict:
                if self.config.mode != "human":
                    self.score_new_messages()
                return InteractiveAgent.query(self)

            def on_halt(self, halted: HaltedRun) -> None:
                sub = self.stopper.submission
                extra = (
                    f" The working diff ({len(sub)} characters) is the submission." if sub else ""
                )
                console.print(
                    f"\nearlyeval stops the run: {halted.message()}{extra}",
                    style="bold red",
                    highlight=False,
                    markup=False,
                )

            def on_held(self, reason: str) -> None:
                if not getattr(self, "_held_shown", False):
                    self._held_shown = True
                    console.print(
                        f"\nearlyeval: {reason}", style="bold yellow", highlight=False, markup=False
                    )

        EarlyStopInteractiveAgent.__module__, EarlyStopInteractiveAgent.__qualname__ = (
            __name__,
            "EarlyStopInteractiveAgent",
        )
        _INTERACTIVE.append(EarlyStopInteractiveAgent)
    return _INTERACTIVE[0]


def __getattr__(name: str) -> Any:
    if name == "EarlyStopInteractiveAgent":
        return interactive_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def wants_interactive(agent_config: Mapping[str, Any]) -> bool:
    """Whether ``EarlyStopAgent(**agent_config)`` is to be the interactive variant (mini 2.x): the config has
    ``InteractiveAgent``'s own keys, or one of mini's interactive entry points (``mini``, ``mini-extra
    swebench-single``: they build an ``InteractiveAgent`` unless told otherwise) is building the agent."""
    if not MINI_SWE_AGENT_V2:
        return False
    if any(k in agent_config for k in INTERACTIVE_KEYS):
        return True
    frame = inspect.currentframe()
    try:
        while frame is not None:
            spec = frame.f_globals.get("__spec__")
            name = getattr(spec, "name", None) or frame.f_globals.get("__name__")
            if frame.f_code.co_name == "main" and name in INTERACTIVE_RUNNERS:
                return True
            frame = frame.f_back
    finally:
        del frame
    return False


def _task_id_of(task: Any) -> Any:
    """A task spec as the saved config shows it: its id, not the whole instance (problem statement, gold patch)."""
    if isinstance(task, Mapping):
        return task.get("instance_id") or task.get("task_id") or "<task mapping>"
    return task


__all__ = [
    "ADAPTER_KEYS",
    "DEFAULT_DIFF_COMMAND",
    "EarlyStopAgent",
    "interactive_class",
    "MINI_SWE_AGENT_V2",
    "PredictedFailure",
    "PredictedOutcome",
    "PredictedSuccess",
    "exception_for",
    "steps_from_new_messages",
    "wants_interactive",
]

"""mini-swe-agent: an agent that asks the earlyeval monitor after every step.

Usage (mini-swe-agent 2.x)::

    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models import get_model
    from earlyeval import Monitor
    from earlyeval.integrations.mini_swe_agent import EarlyStopAgent

    agent = EarlyStopAgent(
        get_model(config=model_cfg), LocalEnvironment(),
        monitor=Monitor.load("models/swebench"), run_id="django__django-1234",
        output_path=Path("out/django__django-1234.traj.json"), **agent_cfg,
    )
    info = agent.run(problem_statement)
    info["exit_status"]  # "Submitted", "LimitsExceeded", ..., or "PredictedFailure" / "PredictedSuccess"

Where it hooks in, and why ``query()``: in both 1.x and 2.x ``step()`` is
``execute_actions(query())`` (1.x: ``get_observation(query())``) and ``query()``
is the documented "override to add hooks" point that already raises the
package's own ``LimitsExceeded``.  When ``query()`` is entered, every message of
the previous turn is in ``self.messages`` whichever path added it (the
assistant reply and its observations from ``step()``, or a ``FormatError``
message that ``run()`` appended), and the next (paid) model call has not been
made yet.  So the adapter converts the messages added since the last call into
Steps, feeds them to the monitor, and, when it says halt, raises
``PredictedFailure``/``PredictedSuccess`` exactly where ``LimitsExceeded``
would be raised.  Scoring in ``step()`` instead would miss format-error turns
(2.x adds them in ``run()``, outside ``step()``).  The turn that submits is
never scored: ``Submitted`` ends the run first.

How the run ends, per version:

* 2.x (tested: 2.4.6): the exceptions subclass ``InterruptAgentFlow`` and carry
  an ``{"role": "exit", ...}`` message whose ``extra`` has ``exit_status``
  (``PredictedFailure``/``PredictedSuccess``), ``submission: ""`` and
  ``earlyeval`` (the halt: probabilities, reason, step).  ``run()`` appends
  it, saves the trajectory and returns that ``extra``; ``info.exit_status`` of
  the saved file is the exit status, and ``info.earlyeval`` holds the summary
  (halt, last decision, per-step probabilities) -- also for runs that were not
  halted.
* 1.x (tested: 1.17.5): the exceptions subclass ``TerminatingException``;
  ``run()`` returns ``(type(e).__name__, str(e))``, i.e. ``("PredictedFailure",
  "<message with probabilities>")``.  1.x agents do not save themselves: pass
  ``extra_info=agent.earlyeval_info()`` to ``minisweagent.run.utils.save.save_traj``.

A halt with ``PredictedSuccess`` stops before the agent submits: the submission
is empty unless ``earlyeval.submit_diff: true``, which runs ``diff_command``
(default ``git diff``) in the agent's environment and submits its output (2.x).

No Python: see :class:`EarlyStopAgent` for the YAML, and ``earlyeval-mini
swebench`` (:mod:`earlyeval.integrations.mini_cli`) for a SWE-bench batch.
"""

from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from minisweagent.agents.default import DefaultAgent

from earlyeval.ingest.mini_swe_agent import split_thought_and_command, steps_from_messages, usage_of
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step, Task
from earlyeval.integrations.base import PREDICTED_FAILURE, PREDICTED_SUCCESS, EarlyStopper, HaltedRun, StepMonitor, build_step
from earlyeval.integrations.config import monitor_from_config, split_config

try:  # mini-swe-agent 2.x
    from minisweagent.exceptions import InterruptAgentFlow as _FlowBase

    MINI_SWE_AGENT_V2 = True
except ImportError:  # 1.x
    from minisweagent.agents.default import TerminatingException as _FlowBase  # type: ignore[no-redef]

    MINI_SWE_AGENT_V2 = False

log = logging.getLogger("earlyeval.integrations.mini_swe_agent")

_LIVE = "<live mini-swe-agent run>"


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
# messages -> Steps
# ---------------------------------------------------------------------------


def steps_from_new_messages(messages: list[dict], first_index: int) -> list[Step]:
    """Steps of the messages a live run added since the last model call.

    Turn grouping follows the ingestor: an assistant message plus the
    user/tool messages that answer it.  Text-format (1.x, ```bash) turns go
    through the ingestor's ``steps_from_messages`` itself; 2.x turns carry
    their parsed commands in ``extra.actions`` and return codes in the
    observations' ``extra.returncode``.  A 2.x ``FormatError`` message with no
    assistant message before it is a rejected turn: no action, ``error=True``.
    """
    steps: list[Step] = []
    pending: dict | None = None
    obs: list[dict] = []

    def flush() -> None:
        nonlocal pending, obs
        if pending is not None:
            steps.append(_turn_to_step(pending, obs, first_index + len(steps)))
        pending, obs = None, []

    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        extra = m.get("extra") or {}
        if role == "assistant":
            flush()
            pending = m
        elif isinstance(extra, dict) and extra.get("interrupt_type") == "FormatError" and pending is None:
            steps.append(_rejected_step(m, first_index + len(steps)))
        elif role in ("user", "tool") and pending is not None:
            obs.append(m)
        # system/exit messages and stray user messages carry no step
    flush()
    return steps


def _turn_to_step(asst: dict, obs_msgs: list[dict], index: int) -> Step:
    extra = asst.get("extra") or {}
    if not isinstance(extra, dict) or not isinstance(extra.get("actions"), list):
        # 1.x text format: exactly the ingestor's rules
        steps, _ = steps_from_messages([asst, *obs_msgs], _LIVE)
        step = steps[0]
        step.index = index
        return step
    text = content_text(asst.get("content"))
    thought, _ = split_thought_and_command(text.replace("```mswea_bash_command", "```bash"))
    cmds = [str(a.get("command", "")) for a in extra["actions"] if isinstance(a, dict)]
    observation = "\n".join(content_text(m.get("content")) for m in obs_msgs).strip()
    rcs = [(m.get("extra") or {}).get("returncode") for m in obs_msgs]
    rcs = [r for r in rcs if isinstance(r, int)]
    error = any(r != 0 for r in rcs) if rcs else None
    return build_step(index, cmds, thought=thought, observation=observation, error=error, usage=usage_of(asst))


def _rejected_step(msg: dict, index: int) -> Step:
    extra = msg.get("extra") or {}
    reply = extra.get("model_response") if isinstance(extra.get("model_response"), str) else ""
    thought, _ = split_thought_and_command(reply.replace("```mswea_bash_command", "```bash"))
    return build_step(index, [], thought=thought, observation=content_text(msg.get("content")), error=True, usage=usage_of(msg))


# ---------------------------------------------------------------------------
# the agent
# ---------------------------------------------------------------------------


ADAPTER_KEYS = ("task", "run_id", "submit_diff", "diff_command")
DEFAULT_DIFF_COMMAND = "git diff"


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
            submit_diff: true               # on PredictedSuccess, submit the working `git diff`

    mini-swe-agent's ``get_agent`` pops ``agent_class`` and passes every other ``agent`` key as a
    keyword argument, so ``earlyeval`` arrives here (the other keys go to ``DefaultAgent``).  From
    Python, ``monitor=`` (any :class:`~earlyeval.integrations.base.StepMonitor`) may be given instead.
    The task the monitor is started with: ``earlyeval.task``, else ``task_id``, else the
    ``instance_id`` a benchmark runner set (``earlyeval-mini swebench`` passes the whole SWE-bench
    instance: id, problem statement, gold patch, tests), with the run's task text as prompt.
    """

    def __init__(self, model: Any, env: Any, *, monitor: StepMonitor | None = None,
                 earlyeval: Mapping[str, Any] | None = None, run_id: str | None = None,
                 task_id: str | None = None, **kwargs: Any):
        super().__init__(model, env, **kwargs)
        opts: dict[str, Any] = {}
        if monitor is None:
            mon_cfg, opts = split_config(earlyeval, ADAPTER_KEYS, "agent.earlyeval")
            monitor = monitor_from_config(mon_cfg, "agent.earlyeval")
            self.earlyeval_config: dict[str, Any] = {**mon_cfg, **opts}
        else:
            if earlyeval is not None:
                _, opts = split_config({"model": "<given monitor>", **earlyeval}, ADAPTER_KEYS, "agent.earlyeval")
            self.earlyeval_config = dict(opts)
        self.stopper = EarlyStopper(monitor, logger=log)
        self.run_id = run_id or opts.get("run_id")
        self.task_spec = opts.get("task")
        self.task_id = task_id or (self.task_spec if isinstance(self.task_spec, str) else None)
        self.submit_diff = bool(opts.get("submit_diff", False))
        self.diff_command = str(opts.get("diff_command") or DEFAULT_DIFF_COMMAND)
        self._scored_upto: int | None = None

    # -- lifecycle ---------------------------------------------------------
    def run(self, task: str = "", **kwargs: Any):  # type: ignore[override]
        self._scored_upto = None
        self.stopper.start(task=self.monitor_task(task), run_id=self.run_id or self._task_id() or None)
        return super().run(task, **kwargs)

    def _task_id(self) -> str:
        return self.task_id or getattr(self, "instance_id", "") or self.run_id or ""

    def monitor_task(self, task_text: str) -> Task | dict:
        """The task the monitor starts with: a benchmark instance, the configured task, or id + prompt."""
        inst = current_instance()
        if isinstance(inst, Mapping) and (not self._task_id() or inst.get("instance_id") == self._task_id()):
            return dict(inst)
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
        new = self.messages[self._scored_upto:]
        self._scored_upto = len(self.messages)
        try:
            steps = steps_from_new_messages(new, self.stopper.next_index)
        except Exception as e:  # never crash the agent over a message we could not read
            self.stopper.note_error(f"could not convert messages {self._scored_upto - len(new)}..: {e!r}")
            return
        for step in steps:
            self.stopper.observe(step)
            if self.stopper.halted is not None:
                raise self._halt_exception()

    def _halt_exception(self) -> PredictedOutcome:
        halted = self.stopper.halted
        assert halted is not None
        submission = ""
        if self.submit_diff and halted.exit_status == PREDICTED_SUCCESS:
            submission = self.working_diff()
        return exception_for(halted, submission)

    def working_diff(self) -> str:
        """The working tree's diff (``diff_command``, default ``git diff``) as the submission; "" on failure."""
        try:
            out = self.env.execute({"command": self.diff_command}) if MINI_SWE_AGENT_V2 else self.env.execute(self.diff_command)
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
        summary["config"] = {k: (str(v) if k == "model" else v) for k, v in self.earlyeval_config.items()}
        th = getattr(self.stopper.monitor, "thresholds", None)
        if isinstance(th, Mapping):
            summary["thresholds"] = dict(th)
        return {"earlyeval": summary}

    def serialize(self, *extra_dicts: dict) -> dict:  # 2.x only (1.x agents do not serialize)
        return super().serialize({"info": self.earlyeval_info()}, *extra_dicts)  # type: ignore[misc]


# the benchmark instance a runner is processing in this thread (earlyeval-mini swebench sets it)
_CURRENT = threading.local()


def current_instance() -> Mapping[str, Any] | None:
    return getattr(_CURRENT, "instance", None)


@contextmanager
def processing(instance: Mapping[str, Any] | None) -> Iterator[None]:
    """Within this block (one thread), EarlyStopAgent starts its monitor with ``instance``."""
    before = current_instance()
    _CURRENT.instance = instance
    try:
        yield
    finally:
        _CURRENT.instance = before


__all__ = [
    "ADAPTER_KEYS",
    "EarlyStopAgent",
    "current_instance",
    "processing",
    "MINI_SWE_AGENT_V2",
    "PredictedFailure",
    "PredictedOutcome",
    "PredictedSuccess",
    "exception_for",
    "steps_from_new_messages",
]

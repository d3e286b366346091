"""mini-swe-agent: an agent that asks the earlyeval monitor after every step.

Usage (mini-swe-agent 2.x)::

    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models import get_model
    from earlyeval import Monitor
    from earlyeval.integrations.mini_swe_agent import EarlyStopAgent

    agent = EarlyStopAgent(
        get_model(config=model_cfg), LocalEnvironment(),
        monitor=Monitor.load("models/swe-v1"), run_id="django__django-1234",
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

A halt with ``PredictedSuccess`` stops before the agent submits: the
submission is empty; collect the patch from the environment yourself (e.g.
``git diff``) if you want to evaluate it.
"""

from __future__ import annotations

import logging
from typing import Any

from minisweagent.agents.default import DefaultAgent

from ..ingest.mini_swe_agent import split_thought_and_command, steps_from_messages, usage_of
from ..render import content_text
from ..trajectory import Step, Task
from .base import PREDICTED_FAILURE, PREDICTED_SUCCESS, EarlyStopper, HaltedRun, StepMonitor, build_step

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

    def __init__(self, halted: HaltedRun):
        self.halted = halted
        if MINI_SWE_AGENT_V2:
            super().__init__(
                {
                    "role": "exit",
                    "content": halted.message(),
                    "extra": {
                        "exit_status": self.exit_status,
                        "submission": "",
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


def exception_for(halted: HaltedRun) -> PredictedOutcome:
    cls = PredictedSuccess if halted.exit_status == PREDICTED_SUCCESS else PredictedFailure
    return cls(halted)


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


class EarlyStopAgent(DefaultAgent):
    """``DefaultAgent`` that scores each finished turn and ends the run when the monitor says so.

    Extra keyword arguments (everything else goes to ``DefaultAgent``):
    ``monitor`` (a :class:`~earlyeval.integrations.base.StepMonitor`),
    ``run_id`` and ``task_id`` (passed to ``monitor.start``).
    """

    def __init__(self, model: Any, env: Any, *, monitor: StepMonitor, run_id: str | None = None,
                 task_id: str | None = None, **kwargs: Any):
        super().__init__(model, env, **kwargs)
        self.stopper = EarlyStopper(monitor, logger=log)
        self.run_id = run_id
        self.task_id = task_id
        self._scored_upto: int | None = None

    # -- lifecycle ---------------------------------------------------------
    def run(self, task: str = "", **kwargs: Any):  # type: ignore[override]
        self._scored_upto = None
        self.stopper.start(
            task=Task(task_id=self.task_id or self.run_id or "", prompt=task or ""),
            run_id=self.run_id,
        )
        return super().run(task, **kwargs)

    def query(self) -> dict:
        self.score_new_messages()
        return super().query()

    def score_new_messages(self) -> None:
        """Feed the turns added since the last call to the monitor; raise the halt if it says so."""
        if self._scored_upto is None:  # first model call: only the system/task prompt so far
            self._scored_upto = len(self.messages)
            return
        if self.stopper.halted is not None:
            raise exception_for(self.stopper.halted)  # (already raised once; keep ending the run)
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
                raise exception_for(self.stopper.halted)

    # -- saving --------------------------------------------------------------
    def earlyeval_info(self) -> dict[str, Any]:
        """``{"earlyeval": summary}``: for 1.x ``save_traj(extra_info=...)``; 2.x saves it itself."""
        return {"earlyeval": self.stopper.summary()}

    def serialize(self, *extra_dicts: dict) -> dict:  # 2.x only (1.x agents do not serialize)
        return super().serialize({"info": self.earlyeval_info()}, *extra_dicts)  # type: ignore[misc]


__all__ = [
    "EarlyStopAgent",
    "MINI_SWE_AGENT_V2",
    "PredictedFailure",
    "PredictedOutcome",
    "PredictedSuccess",
    "exception_for",
    "steps_from_new_messages",
]

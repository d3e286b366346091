"""SWE-agent (1.x; tested: 1.1.0): an agent hook that ends a decided run through the agent's own exit path.

``EarlyStopHook`` scores each ``StepOutput`` in ``on_step_done`` and, on a halt, sets ``done`` as SWE-agent's
own forced exits do, with autosubmission; the summary lands in the ``.traj``. Usage and behaviour:
docs/integrations.md, "SWE-agent".
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Iterator, Mapping

from earlyeval.core.trajectory import Action, Step, Task
from earlyeval.integrations.base import PREDICTED_SUCCESS, EarlyStopper, StepMonitor, build_step
from earlyeval.integrations.config import (
    RUN_ID,
    SWITCH,
    halt_on_of,
    monitor_from_config,
    split_config,
)
from earlyeval.live.reasons import HELD
from earlyeval.steps.swe_agent import SWE_AGENT_COMMANDS as SWE_AGENT_COMMANDS
from earlyeval.steps.swe_agent import step_output_actions

log = logging.getLogger("earlyeval.integrations.swe_agent")
# step kinds that cannot change the repository's diff
READ_ONLY_KINDS = frozenset({"view", "search"})
# what SWE-agent's autosubmission logs: kept out of the agent's log while a success halt only probes for a patch
PROBE_LOG_LINES = ("Attempting autosubmission after error", "Executing submission command")


class _DropProbeLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(PROBE_LOG_LINES)


@contextlib.contextmanager
def _quiet_probe(logger: Any) -> Iterator[None]:
    """The autosubmission's own warning and info lines dropped from ``logger`` for the duration of a probe."""
    if not isinstance(logger, logging.Logger):
        yield
        return
    f = _DropProbeLines()
    logger.addFilter(f)
    try:
        yield
    finally:
        logger.removeFilter(f)


def calls_of(step: Any) -> list[Action]:
    """The actions of one StepOutput for ``build_step``: its raw tool calls (function calling), or its
    command line, read by the ``swe-agent-traj`` reader's own ``earlyeval.steps.swe_agent``."""
    return step_output_actions(step)


def actions_of(step: Any) -> list[Action]:
    """The Actions of one StepOutput (as ``build_step`` renders them)."""
    return build_step(0, calls_of(step)).actions


ADAPTER_KEYS = {"autosubmit": SWITCH, "run_id": RUN_ID}  # checked (integrations.config)


class EarlyStopHook:
    """SWE-agent agent hook (``AbstractAgentHook`` interface) that halts decided runs.

    ``autosubmit``: a predicted failure also submits the repository's diff (SWE-agent's forced-exit
    convention); a predicted success always does (it halts only when there is one)."""

    def __init__(
        self,
        monitor: StepMonitor,
        *,
        autosubmit: bool = True,
        run_id: str | None = None,
        info_key: str = "earlyeval",
    ):
        self.stopper = EarlyStopper(monitor, logger=log)
        self.autosubmit = autosubmit
        self.run_id = run_id
        self.info_key = info_key
        self.agent: Any = None
        self._needs_start = True
        self._last_stats: dict[str, float] | None = None
        self._candidate: Any = None  # the autosubmitted StepOutput a success halt was granted on
        self._probed_empty = (
            False  # the last probe for a patch found none (a view or search cannot change that)
        )
        self._said_waiting = (
            False  # the agent's log was told once that a success halt waits for a patch
        )

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any], where: str = "earlyeval") -> "EarlyStopHook":
        """From an ``earlyeval`` config block: ``integrations/config.py``'s keys (``model``, ``thresholds``,
        ``tasks``, ``halt_on`` (default ``failure``), ...) plus ``autosubmit`` and ``run_id``."""
        mon, opts = split_config(cfg, ADAPTER_KEYS, where)
        mon = mon.replace(halt_on=halt_on_of(mon, where))
        return cls(
            monitor_from_config(mon, where, allow_pass=True),
            autosubmit=bool(opts.get("autosubmit", True)),
            run_id=opts.get("run_id"),
        )

    @property
    def halted(self):
        return self.stopper.halted

    # -- AbstractAgentHook ---------------------------------------------------
    def on_init(self, *, agent: Any) -> None:
        self.agent = agent
        self._needs_start = True  # RetryAgent: every attempt's agent is a new run

    def on_run_start(self) -> None:
        self._needs_start = True

    def on_step_done(self, *, step: Any, info: Any) -> None:
        try:
            self._on_step_done(step, info)
        except Exception as e:  # never crash the agent over the monitor
            self.stopper.note_error(f"on_step_done failed: {e!r}")

    def on_step_start(self) -> None: ...

    def on_actions_generated(self, *, step: Any) -> None: ...

    def on_action_started(self, *, step: Any) -> None: ...

    def on_action_executed(self, *, step: Any) -> None: ...

    def on_run_done(self, *, trajectory: Any, info: Any) -> None:
        if not self._needs_start:
            self._record(info)
            self.stopper.finish()  # a pass monitor learns the run's length and whether it was halted

    def on_setup_attempt(self) -> None: ...

    def on_model_query(self, *, messages: Any, agent: str) -> None: ...

    def on_query_message_added(self, **kwargs: Any) -> None: ...

    def on_setup_done(self) -> None: ...

    def on_tools_installation_started(self) -> None: ...

    def __getattr__(self, name: str):
        if name.startswith("on_"):  # hooks added to SWE-agent after this adapter was written
            return lambda *a, **k: None
        raise AttributeError(name)

    # -- scoring ----------------------------------------------------------------
    def _start(self) -> None:
        self._needs_start = False
        self._last_stats = None
        self._probed_empty = self._said_waiting = False
        ps = getattr(self.agent, "_problem_statement", None)
        task_id = str(getattr(ps, "id", "") or "")
        prompt = ""
        try:
            prompt = ps.get_problem_statement() if ps is not None else ""
        except Exception:
            pass
        self.stopper.start(
            task=Task(task_id=task_id, prompt=prompt or ""), run_id=self.run_id or task_id or None
        )

    def _on_step_done(self, step: Any, info: Any) -> None:
        if self._needs_start:
            self._start()
        usage = self._usage_delta(info)
        if getattr(step, "done", False):
            self._record(info)
            return  # submitted / exited: the run is over
        s: Step = build_step(
            self.stopper.next_index,
            calls_of(step),
            thought=(getattr(step, "thought", "") or "").strip(),  # as the ingestor
            observation=getattr(step, "observation", "") or "",
            error=None,  # SWE-agent reports no per-step error or exit code
            usage=usage,
        )
        self._candidate = None
        d = self.stopper.observe(s, candidate=lambda: self._autosubmission(step, s))
        halted = self.stopper.halted
        if halted is not None and halted.step_index == s.index:
            self._say(halted.message())
            self._exit(step, info, halted.exit_status)
        elif not d.halt and d.reason.startswith(HELD) and not self._said_waiting:
            self._said_waiting = True
            self._say(
                f"earlyeval: success predicted at step {s.index}; the run goes on until the repository has a "
                f"patch to submit ({d.reason[:160]})"
            )
        self._record(info)

    def _say(self, line: str) -> None:
        """One line in the agent's own log (SWE-agent users read that one), and in earlyeval's."""
        logger = getattr(self.agent, "logger", None)
        try:
            if isinstance(logger, logging.Logger) and logger is not log:
                logger.warning("%s", line)
        except Exception as e:  # never crash the agent over a log line
            self.stopper.note_error(f"could not log to the agent: {e!r}")

    def _autosubmission(self, step: Any, scored: Step) -> str:
        """The agent's own autosubmission of this step as a predicted success (kept for the halt); its patch.
        Not run when the repository cannot have a patch yet: "" then (see the module doc)."""
        if self.agent is None or not hasattr(self.agent, "attempt_autosubmission_after_error"):
            raise RuntimeError("no SWE-agent agent to submit through (on_init was not called)")
        state = getattr(step, "state", None)
        if isinstance(state, dict) and "diff" in state and not str(state["diff"] or "").strip():
            return ""  # SWE-agent's own diff of this step (diff_state): empty, so nothing to submit
        if (
            self._probed_empty
            and scored.actions
            and all(a.kind in READ_ONLY_KINDS for a in scored.actions)
        ):
            return ""  # nothing since the last empty probe could have changed the repository
        probe = step.model_copy(deep=True) if hasattr(step, "model_copy") else step
        probe.exit_status = PREDICTED_SUCCESS
        with _quiet_probe(getattr(self.agent, "logger", None)):
            self._candidate = self.agent.attempt_autosubmission_after_error(probe)
        patch = str(getattr(self._candidate, "submission", None) or "")
        self._probed_empty = not patch.strip()
        return patch

    def _exit(self, step: Any, info: Any, exit_status: str) -> None:
        step.exit_status = exit_status
        sub = self._candidate if exit_status == PREDICTED_SUCCESS else None
        if (
            sub is None
            and self.autosubmit
            and self.agent is not None
            and hasattr(self.agent, "attempt_autosubmission_after_error")
        ):
            try:
                sub = self.agent.attempt_autosubmission_after_error(step)
            except Exception as e:
                self.stopper.note_error(f"autosubmission failed: {e!r}")
        if sub is not None:
            step.submission = sub.submission
            step.observation = sub.observation
            step.exit_status = sub.exit_status
        step.done = True  # DefaultAgent.run(): `while not step_output.done`
        info["exit_status"] = step.exit_status
        info["submission"] = getattr(step, "submission", None)

    def _record(self, info: Any) -> None:
        try:
            info[self.info_key] = self.stopper.summary()
        except Exception as e:
            self.stopper.note_error(f"could not write info: {e!r}")

    def _usage_delta(self, info: Any) -> dict[str, Any]:
        stats = info.get("model_stats") if isinstance(info, dict) else None
        if not isinstance(stats, dict):
            return {}
        now = {k: stats.get(k) for k in ("tokens_sent", "tokens_received", "instance_cost")}
        if any(not isinstance(v, (int, float)) for v in now.values()):
            return {}
        before, self._last_stats = self._last_stats, now  # type: ignore[assignment]
        before = before or {"tokens_sent": 0, "tokens_received": 0, "instance_cost": 0.0}
        return {
            "input_tokens": int(now["tokens_sent"] - before["tokens_sent"]),
            "output_tokens": int(now["tokens_received"] - before["tokens_received"]),
            "cost_usd": float(now["instance_cost"] - before["instance_cost"]),
        }


__all__ = ["ADAPTER_KEYS", "EarlyStopHook", "SWE_AGENT_COMMANDS", "actions_of", "calls_of"]

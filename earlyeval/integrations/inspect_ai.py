"""inspect_ai: an ``on_continue`` callback for ``react()`` that ends a sample the monitor has decided.

It ends the sample with inspect's own ``LimitExceededError`` (type ``custom``), and it is what the registered
solver ``earlyeval/early_stop`` runs. Usage and behaviour: docs/integrations.md, "inspect_ai".
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Awaitable, Callable, Mapping

from inspect_ai.agent import AgentState
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.util import LimitExceededError, sandbox, store

from earlyeval.core.trajectory import Step, Task
from earlyeval.integrations.base import WORKING_DIFF_COMMAND, EarlyStopper, HaltedRun, StepMonitor
from earlyeval.model.policy import halts_on_success
from earlyeval.steps.inspect_eval import inspect_steps

log = logging.getLogger("earlyeval.integrations.inspect_ai")

_MAX_LIVE_SAMPLES = 4096


# sample-metadata keys that describe the task (SWE-bench's and earlyeval's Task fields)
TASK_KEYS = (
    "instance_id",
    "problem_statement",
    "patch",
    "FAIL_TO_PASS",
    "PASS_TO_PASS",
    "gold_patch",
    "test_patch",
    "fail_to_pass",
    "pass_to_pass",
)


def task_of(sample_id: Any, metadata: Any, prompt: str) -> dict[str, Any]:
    """The Monitor's task for an inspect sample: its id, its input as prompt, the SWE-bench fields of its metadata."""
    meta = metadata if isinstance(metadata, dict) else {}
    task = {k: meta[k] for k in TASK_KEYS if meta.get(k) is not None}
    if "instance_id" not in task:
        task["task_id"] = str(sample_id) if sample_id is not None else ""
    if not (task.get("prompt") or task.get("problem_statement")):
        task["prompt"] = prompt
    return task


def step_from_turn(
    asst: ChatMessageAssistant, tools: list[ChatMessageTool], index: int, usage: Any = None
) -> Step:
    """One assistant turn and its tool results, by the ``inspect-eval`` reader's own step builder
    (``steps.inspect_eval.inspect_steps``, the chat step definition of ``steps/chat.py``): a turn with
    tool calls has its reasoning and text as thought; a turn without does its text (``final_answer``),
    its reasoning is the thought; the observation is the tool results' text."""
    steps, _, _ = inspect_steps(
        [asst, *tools], {str(asst.id): usage} if usage is not None else None
    )
    step = steps[0]
    step.index = index
    return step


class _SampleRun:
    def __init__(self, stopper: EarlyStopper, anchor: Any):
        self.stopper = stopper
        self.anchor = (
            anchor  # the sample's Store: held, so its id() cannot be reused while the run is kept
        )
        self.seen: set[str] = set()


def halt_limit_error(halted: HaltedRun) -> LimitExceededError:
    """The halt as inspect's own limit error: the sample ends, is scored, and ``sample.limit`` records
    ``type='custom'``, ``limit`` = the steps observed, ``reason`` = the prediction with its probabilities."""
    return LimitExceededError(
        "custom", value=halted.n_steps, limit=halted.n_steps, message=halted.message()
    )


class EarlyStopOnContinue:
    """The ``on_continue`` callable; build it with :func:`earlyeval_on_continue`."""

    def __init__(
        self,
        monitor: StepMonitor | Callable[[], StepMonitor],
        *,
        then: str | Callable[[AgentState], Awaitable[Any]] | None = None,
        submit: bool = True,
        metadata_key: str = "earlyeval",
        task: Task | Mapping[str, Any] | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        halt_as_limit: bool = True,
    ):
        self._monitor = monitor
        self.then = then
        self.submit = submit
        self.key = metadata_key
        self.task = task
        self.run_id = run_id
        self.metadata = (
            metadata  # a TaskState's metadata (the solver passes it), written after every step
        )
        self.halt_as_limit = halt_as_limit
        self.runs: OrderedDict[Any, _SampleRun] = OrderedDict()
        self._warned_shared = False

    def _new_monitor(self) -> StepMonitor:
        m = self._monitor
        if hasattr(m, "observe") and hasattr(m, "start"):
            if self.runs and not self._warned_shared:
                self._warned_shared = True
                log.warning(
                    "one monitor instance serves every sample: correct only if samples run one at a time "
                    "(max_samples=1); pass a factory otherwise"
                )
            return m  # type: ignore[return-value]
        return m()  # type: ignore[operator]

    def _run_for(self, state: AgentState) -> _SampleRun:
        anchor = _sample_store()
        key = id(anchor) if anchor is not None else id(state)
        run = self.runs.get(key)
        if run is None:
            stopper = EarlyStopper(self._new_monitor(), logger=log)
            prompt = next((m.text for m in state.messages if isinstance(m, ChatMessageUser)), "")
            task = self.task
            if task is None:
                task = Task(task_id="", prompt=prompt)
            elif isinstance(task, Mapping) and not (
                task.get("prompt") or task.get("problem_statement")
            ):
                task = {**task, "prompt": prompt}
            stopper.start(task=task, run_id=self.run_id)
            run = self.runs[key] = _SampleRun(stopper, anchor if anchor is not None else state)
            while len(self.runs) > _MAX_LIVE_SAMPLES:
                self.runs.popitem(last=False)
        return run

    async def __call__(self, state: AgentState) -> bool | str | AgentState:
        halted: HaltedRun | None = None
        try:
            run = self._run_for(state)
            steps = self._new_steps(run, state)
            patch = (
                await _sandbox_diff()
                if steps and halts_on_success(getattr(run.stopper.monitor, "halt_on", "both"))
                else ""
            )
            for step in steps:
                run.stopper.observe(step, candidate=lambda: patch)
                if run.stopper.halted is not None:
                    halted = run.stopper.halted
                    break
            self._record(run)
        except Exception as e:  # never crash the sample over the monitor
            log.warning(
                "earlyeval on_continue failed (continuing the sample): %r", e, exc_info=True
            )
        if halted is not None:
            if self.halt_as_limit:
                raise halt_limit_error(halted)
            return False
        return await self._continue(state)

    def _new_steps(self, run: _SampleRun, state: AgentState) -> list[Step]:
        msgs = state.messages
        steps: list[Step] = []
        out_msg = getattr(state.output, "message", None) if state.output is not None else None
        for i, m in enumerate(msgs):
            if not isinstance(m, ChatMessageAssistant):
                continue
            mid = m.id or f"#{i}"
            if mid in run.seen:
                continue
            run.seen.add(mid)
            tools = []
            for t in msgs[i + 1 :]:
                if not isinstance(t, ChatMessageTool):
                    break
                tools.append(t)
            usage = state.output.usage if (out_msg is not None and out_msg.id == m.id) else None
            steps.append(step_from_turn(m, tools, run.stopper.next_index + len(steps), usage))
        return steps

    def _record(self, run: _SampleRun) -> None:
        summary = run.stopper.summary()
        th = getattr(run.stopper.monitor, "thresholds", None)
        if isinstance(th, Mapping):
            summary["thresholds"] = dict(th)
        if self.metadata is not None:
            self.metadata[self.key] = summary
        st = _sample_store()
        if st is not None:
            st.set(self.key, summary)

    async def _continue(self, state: AgentState) -> bool | str | AgentState:
        then = self.then
        called_tools = bool(state.output is not None and state.output.message.tool_calls)
        if callable(then):
            return await then(state)
        if isinstance(then, str):
            return True if called_tools else then
        return True if (self.submit or called_tools) else False


def earlyeval_on_continue(
    monitor: StepMonitor | Callable[[], StepMonitor],
    *,
    then: str | Callable[[AgentState], Awaitable[Any]] | None = None,
    submit: bool = True,
    metadata_key: str = "earlyeval",
    halt_as_limit: bool = True,
) -> EarlyStopOnContinue:
    """An ``on_continue`` for ``react()`` that ends the sample when the monitor halts (see module doc)."""
    return EarlyStopOnContinue(
        monitor, then=then, submit=submit, metadata_key=metadata_key, halt_as_limit=halt_as_limit
    )


async def _sandbox_diff() -> str:
    """The sample sandbox's working diff (a success halt's candidate); "" without a sandbox or on failure."""
    try:
        r = await sandbox().exec(["bash", "-c", WORKING_DIFF_COMMAND])
    except Exception as e:
        log.info("earlyeval: no sandbox diff for a success halt (%s); the sample goes on", e)
        return ""
    return r.stdout if r.success else ""


def _sample_store() -> Any:
    """The running sample's Store (public ``inspect_ai.util.store``), or None outside a sample."""
    try:
        return store()
    except Exception:
        return None


__all__ = [
    "TASK_KEYS",
    "EarlyStopOnContinue",
    "earlyeval_on_continue",
    "halt_limit_error",
    "step_from_turn",
    "task_of",
]

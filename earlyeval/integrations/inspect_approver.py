"""inspect_ai approver ``earlyeval/early_stop``: ends any agent's sample from ``--approval`` config alone.

The task's own solver keeps running; the approver answers ``terminate`` once the Monitor halts, scoring the
conversation inspect hands it with the ``inspect-eval`` reader's steps. Policy file, keys and what the Monitor
sees: docs/integrations.md, "inspect_ai".
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from typing import Any, Callable, Mapping

from inspect_ai.approval import Approval, Approver, approver
from inspect_ai.log import transcript
from inspect_ai.util import sandbox

from earlyeval.config.schema import NAME, Choice
from earlyeval.core.decision import Decision
from earlyeval.core.trajectory import Step
from earlyeval.integrations.base import EarlyStopper, HaltedRun, StepMonitor, _takes_candidate
from earlyeval.integrations.config import monitor_from_config, split_config
from earlyeval.integrations.inspect_ai import _sample_store, task_of
from earlyeval.live.reasons import HELD, NO_CANDIDATE
from earlyeval.model.policy import HALT_ON, halt_rule  # the one definition of the operating modes
from earlyeval.steps.inspect_eval import inspect_steps, usage_by_message

# how the Monitor's decision begins when a success halt is due at this step but waits for a candidate patch
WAITING = f"{HELD}: {NO_CANDIDATE})"

log = logging.getLogger("earlyeval.integrations.inspect_approver")

WHERE = "earlyeval/early_stop (approver)"
SUCCESS_NEEDS = ("diff", "nothing")
OTHERWISE = ("approve", "escalate")
ADAPTER_KEYS = {  # checked (integrations.config)
    "halt_on": Choice(HALT_ON),
    "success_needs": Choice(SUCCESS_NEEDS),
    "otherwise": Choice(OTHERWISE),
    "metadata_key": NAME,
}
_MAX_LIVE_SAMPLES = 4096


class HaltGate:
    """A monitor wrapper: a halt the configuration does not act on reaches the loop as "continue".

    ``halt_on`` drops the other side's halts (until ``Monitor`` takes ``halt_on`` itself: a monitor
    whose halt latched on the dropped side then reports no later halt); a success halt waits
    (``held``) until ``candidate`` is set."""

    def __init__(
        self, monitor: StepMonitor, halt_on: str = "failure", needs_candidate: bool = True
    ):
        self.monitor = monitor
        self.halt_on = halt_on
        self.needs_candidate = needs_candidate
        self.candidate = False
        self.held: Decision | None = (
            None  # a success halt due at the newest step, waiting for a patch
        )
        self.dropped = 0
        self.n_steps = 0
        # earlyeval's Monitor: the success gate is its own, re-checked each step
        self._gated = _takes_candidate(monitor)

    @property
    def thresholds(self) -> Any:
        return getattr(self.monitor, "thresholds", None)

    def start(self, task: Any = None, run_id: str | None = None) -> None:
        self.candidate, self.held, self.dropped, self.n_steps = False, None, 0, 0
        self.monitor.start(task=task, run_id=run_id)

    def observe(self, step: Step) -> Decision:
        """The monitor's decision on ``step``; ``held`` is set only when a success halt is due at this very step
        (an earlier step's prediction is never acted on: the threshold is re-checked where the halt happens)."""
        self.n_steps += 1
        self.held = None
        if (
            self._gated and self.needs_candidate
        ):  # the Monitor holds (never latches) a success halt without a patch
            d = self.monitor.observe(step, candidate=lambda: "patch" if self.candidate else "")  # type: ignore[call-arg]
        else:
            d = self.monitor.observe(step)
        if isinstance(d, Decision) and not d.halt and d.reason.startswith(WAITING):
            self.held = dataclasses.replace(
                d,
                halt=True,
                outcome="success",
                halt_rule=halt_rule(self.n_steps, 1),
                reason=f"halt after {self.n_steps} steps, predicting success, once a candidate "
                f"patch exists: {d.reason[len(WAITING) :].lstrip(') :')}",
            )
            return d
        if not isinstance(d, Decision) or not d.halt:
            return d
        if self.halt_on != "both" and d.outcome != self.halt_on:
            self.dropped += 1
            return dataclasses.replace(
                d, halt=False, reason=f"not acted on (halt_on={self.halt_on}): {d.reason}"
            )
        if d.outcome == "success" and self.needs_candidate and not self.candidate:
            self.held = d
            return dataclasses.replace(
                d,
                halt=False,
                reason=f"success halt held until a candidate patch exists: {d.reason}",
            )
        return d


class _Run:
    def __init__(self, stopper: EarlyStopper, gate: HaltGate, anchor: Any):
        # anchor: the sample's Store, held
        self.stopper, self.gate, self.anchor = (
            stopper,
            gate,
            anchor,
        )
        self.seen: set[str] = set()


async def has_candidate_patch() -> bool:
    """A non-empty ``git status --porcelain`` in the sample's default sandbox (False when there is none)."""
    try:
        r = await sandbox().exec(["git", "status", "--porcelain"], timeout=60)
    except Exception as e:  # no sandbox, no git: no candidate, so no success halt (fail open)
        log.info("earlyeval: no candidate patch check (%r): success halts wait", e)
        return False
    return bool(r.success and r.stdout.strip())


class EarlyStopApprover:
    """The approver object (``early_stop`` builds it from config); ``monitor`` is a zero-argument factory."""

    def __init__(
        self,
        monitor: Callable[[], StepMonitor],
        *,
        halt_on: str = "failure",
        success_needs: str = "diff",
        otherwise: str = "approve",
        metadata_key: str = "earlyeval",
        candidate: Callable[[], Any] = has_candidate_patch,
    ):
        self._monitor = monitor
        self.halt_on, self.success_needs, self.otherwise, self.key = (
            halt_on,
            success_needs,
            otherwise,
            metadata_key,
        )
        self._candidate = candidate
        self.runs: OrderedDict[int, _Run] = OrderedDict()

    async def __call__(self, message: str, call: Any, view: Any, history: list[Any]) -> Approval:
        run: _Run | None = None
        try:
            run = self._run_for(history)
            self._advance(run, history)
            gate = run.gate
            if run.stopper.halted is None and gate.held is not None and await self._candidate():
                gate.candidate = True
                run.stopper.halted = HaltedRun.from_decision(gate.held, run.stopper.n_steps)
                log.info("%s", run.stopper.halted.message())
            self._record(run)
        except Exception as e:  # never end or break a sample over the monitor
            log.warning(
                "earlyeval approver failed (the call gets %r): %r", self.otherwise, e, exc_info=True
            )
        halted = run.stopper.halted if run is not None else None
        if halted is not None:
            return Approval(
                decision="terminate",
                explanation=halted.message(),
                metadata={"earlyeval": halted.to_dict()},
            )
        return Approval(decision=self.otherwise)  # type: ignore[arg-type]

    def _run_for(self, history: list[Any]) -> _Run:
        anchor = _sample_store()
        key = id(anchor) if anchor is not None else id(history)
        run = self.runs.get(key)
        if run is None:
            gate = HaltGate(
                self._monitor(), self.halt_on, needs_candidate=self.success_needs == "diff"
            )
            stopper = EarlyStopper(gate, logger=log)
            init = _sample_init()
            sample = getattr(init, "sample", None)
            _, prompt, _ = inspect_steps(history)
            sid = getattr(sample, "id", None)
            stopper.start(
                task=task_of(sid, getattr(sample, "metadata", None), prompt),
                run_id=None if sid is None else str(sid),
            )
            run = self.runs[key] = _Run(stopper, gate, anchor if anchor is not None else history)
            while len(self.runs) > _MAX_LIVE_SAMPLES:
                self.runs.popitem(last=False)
        return run

    def _advance(self, run: _Run, history: list[Any]) -> None:
        """Score the turns completed since the last call: every assistant turn before the last one."""
        last = max(
            (i for i, m in enumerate(history) if getattr(m, "role", None) == "assistant"),
            default=-1,
        )
        done = history[:last] if last >= 0 else []
        if not any(getattr(m, "role", None) == "assistant" for m in done):
            return
        steps, _, ids = inspect_steps(done, usage_by_message(transcript().events))
        for step, mid in zip(steps, ids):
            mid = str(mid) if mid is not None else f"#{step.index}"
            if mid in run.seen:
                continue
            run.seen.add(mid)
            step.index = run.stopper.next_index
            run.stopper.observe(step)
            if run.stopper.halted is not None:
                return

    def _record(self, run: _Run) -> None:
        summary = run.stopper.summary()
        th = run.gate.thresholds
        if isinstance(th, Mapping):
            summary["thresholds"] = dict(th)
        summary["halt_on"] = self.halt_on
        summary["success_needs"] = self.success_needs
        summary["held_success"] = (
            run.gate.held.to_dict()
            if run.gate.held is not None and run.stopper.halted is None
            else None
        )
        summary["dropped_halts"] = run.gate.dropped
        st = _sample_store()
        if st is not None:
            st.set(self.key, summary)


def _sample_init() -> Any:
    try:
        return next(
            (e for e in transcript().events if getattr(e, "event", None) == "sample_init"), None
        )
    except Exception:
        return None


@approver(name="early_stop")
def early_stop(
    model: str | Callable[[], StepMonitor],
    thresholds: Any = None,
    tasks: str | None = None,
    strict: bool | None = None,
    explain: str | None = None,
    budget: Any = None,
    halt_on_impossible: Any = None,
    halt_on: str = "failure",
    success_needs: str = "diff",
    otherwise: str = "approve",
    metadata_key: str = "earlyeval",
    **unknown: Any,
) -> Approver:
    """Terminate a sample when earlyeval's monitor halts (module doc); every other call gets ``otherwise``.

    ``model``: a model directory, or (from Python) a zero-argument factory of monitors, one per sample."""
    factory = model if callable(model) else None
    given = {
        "model": "<factory>" if factory else model,
        "thresholds": thresholds,
        "tasks": tasks,
        "strict": strict,
        "explain": explain,
        "budget": budget,
        "halt_on_impossible": halt_on_impossible,
        "halt_on": halt_on,
        "success_needs": success_needs,
        "otherwise": otherwise,
        "metadata_key": metadata_key,
        **unknown,
    }
    mon_cfg, opts = split_config(
        {k: v for k, v in given.items() if v is not None}, ADAPTER_KEYS, WHERE
    )
    h = opts.get("halt_on", "failure")
    mon_cfg = mon_cfg.replace(halt_on=h)  # the Monitor's own halting side
    if factory is None:
        monitor_from_config(mon_cfg, WHERE)  # load (and check) the model once, before any sample
    return EarlyStopApprover(
        factory or (lambda: monitor_from_config(mon_cfg, WHERE)),
        halt_on=h,
        success_needs=opts.get("success_needs", "diff"),
        otherwise=opts.get("otherwise", "approve"),
        metadata_key=opts.get("metadata_key", "earlyeval"),
    )


__all__ = ["EarlyStopApprover", "HaltGate", "early_stop", "has_candidate_patch"]

"""One run as a Monitor follows it (``RunState``): its context, the feature families' streaming states, the steps
folded in, its halt, what is off for it and why, the notes on its inputs and its budget spend.

``Monitor.start`` makes a new one per run; the Monitor itself keeps only what its runs share (the loaded model,
the config, the halting rule).  Everything that is switched off for one run is one typed map, ``RunState.off``.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, TypedDict

import numpy as np

from earlyeval.config.monitor_config import MonitorConfig
from earlyeval.config.schema import parse_date
from earlyeval.core.decision import Decision
from earlyeval.core.trajectory import Step, Task, Trajectory
from earlyeval.features import Featurizer, RunContext
from earlyeval.features.context import context_gaps, context_state
from earlyeval.features.evidence import EvidenceState
from earlyeval.features.prior import default_match_patterns
from earlyeval.live import reasons
from earlyeval.live.inputs import as_task, clean_task, complete_task, task_sources
from earlyeval.live.loaded import LoadedModel
from earlyeval.live.remaining_budget import LiveBudget
from earlyeval.model.spend import SpendTracker
from earlyeval.model.thresholds import WarmStart

# the Monitor's logger: these lines are the Monitor's
log = logging.getLogger("earlyeval.live.monitor")

# What can be off for one run: "monitor" every step continues (an error: the states can no longer be trusted),
# "halting" the context cannot support a halt, "budget" the budget estimates (an error), "inputs" some of the
# context is absent (the run is degraded; halting stays on when the model was trained on that state).
Part = Literal["monitor", "halting", "budget", "inputs"]


class Who(TypedDict, total=False):
    """Who runs the task (``Monitor.start``'s keywords): what the prior family uses to leave this agent's own
    public results out, the prompt it was given and the date its public history stops at."""

    agent: str
    scaffold: str
    model: str
    split: str
    exclude_submissions: list[str] | None
    prior_match: list[str] | None
    prompt: str | None
    as_of: str


def task_context(
    task: Task | Mapping[str, Any] | None,
    run_id: str | None,
    table: Mapping[str, Task],
    strict: bool,
    who: Who,
) -> tuple[RunContext, list[str], dict[str, str]]:
    """(the run's context, notes on its inputs, where its reference fields came from) for ``Monitor.start``: the
    task cleaned (``live.inputs``) and completed by id from the task table.  ``strict``: a note is an error."""
    given, notes = clean_task(as_task(task, run_id))
    if notes and strict:
        raise ValueError("; ".join(f"task.{k}: {v}" for k, v in notes.items()))
    t = complete_task(given, table)
    as_of = who.get("as_of", "")
    if as_of:
        parse_date(as_of, "as_of")  # a real date, or the prior would compare it as a string
    prompt = who.get("prompt")
    ctx = RunContext(
        task=t,
        agent=who.get("agent", ""),
        scaffold=who.get("scaffold", ""),
        model=who.get("model", ""),
        split=who.get("split", ""),
        prompt=prompt if prompt is not None else (t.prompt if t else ""),
        exclude_submissions=list(who.get("exclude_submissions") or []),
        prior_match=list(who.get("prior_match") or []),
        task_id=t.task_id if t else "",
        as_of=as_of,
    )
    return ctx, [f"task.{k}: {v}" for k, v in notes.items()], task_sources(given, t, notes)


def run_context(
    traj: Trajectory, task: Task | None, as_of: str | None = "", same_agent: str | None = None
) -> RunContext:
    """A finished run's context for a replay.  ``as_of``: "" every public submission (an agent evaluated today),
    a YYYY-MM-DD date only those dated strictly before it, None the run's own catalog date (as offline);
    ``same_agent``: one more regex naming public submissions of this same agent (matched, like
    ``prior_match``, on name, folder, display name and models lower-cased with non-alphanumerics removed)."""
    ctx = RunContext.of(traj, task, as_of=as_of)
    if same_agent:
        pats = list(ctx.prior_match) or default_match_patterns(ctx.scaffold, ctx.model)
        ctx = dataclasses.replace(ctx, prior_match=pats + [same_agent])
    return ctx


def replayed_sources(ctx: RunContext) -> dict[str, str]:
    """Where a replayed run's reference fields came from: its own context (``RunContext.of``), or absent."""
    return {
        k: v.replace("task table", "run context") for k, v in task_sources(None, ctx.task).items()
    }


@dataclass
class RunState:
    """The state of one run (see the module doc); ``states`` None: not started."""

    run_id: str | None = None
    ctx: RunContext | None = None
    featurizer: Featurizer | None = None  # whose families' states ``states`` are
    states: list[Any] | None = (
        None  # the feature families' streaming states, in the featurizer's order
    )
    t: int = 0  # steps folded in
    acted: int = 0  # of which held an action of the agent (0: the task alone can decide, a "task prior" halt)
    evidence: EvidenceState | None = (
        None  # the success evidence rule's state (``LoadedModel.evidence``)
    )
    gate: int = 0  # the newest prefix's gate (``features.evidence``: ACTED, EVIDENCE), read by the halting rule
    halt: Decision | None = None  # the first halting decision (a halt is sticky)
    context: str = "none"  # Decision.context
    context_source: dict[str, str] = field(default_factory=dict)  # Decision.context_source
    off: dict[Part, str] = field(default_factory=dict)  # what is off for this run, and why
    warnings: list[str] = field(default_factory=list)  # notes on this run's inputs
    n_skipped: int = 0  # steps skipped as unreadable
    spend: SpendTracker | None = None  # the budget part's spend so far
    last_features: np.ndarray | None = None  # float32 row of the newest prefix
    last_timing: tuple[float, float] = (
        0.0,
        0.0,
    )  # seconds: (featurize, predict) of the newest step
    last_budget_time: float = 0.0  # seconds spent on Decision.budget for the newest step

    @classmethod
    def opened(
        cls,
        loaded: LoadedModel,
        config: MonitorConfig,
        ctx: RunContext,
        run_id: str | None,
        sources: dict[str, str],
        notes: list[str],
        say_once: Callable[[str], None],
    ) -> RunState:
        """A run begun from its context: what it lacks (``context_gaps``: said once per monitor, a ValueError under
        ``config.strict``), whether it may halt (``context_state``) and its families' states."""
        fz = loaded.bundle.featurizer
        gaps = context_gaps(fz, ctx)
        problems = [m for _, m in gaps]
        if problems and config.strict:
            raise ValueError("; ".join(problems))
        context, halt_off = context_state(fz, ctx, gaps, loaded.bundle.training)
        run = cls(
            run_id, ctx, fz, context=context, context_source=sources, warnings=notes + problems
        )
        run.spend = loaded.budget_model.tracker() if loaded.budget_model is not None else None
        run.evidence = loaded.evidence.start()
        for p in problems:
            say_once(p)
        if halt_off:
            run.off["halting"] = halt_off
        if problems:
            run.off["inputs"] = "; ".join(problems)
        try:
            run.states = fz.start(ctx)
        except Exception as e:
            if config.strict:
                raise
            run.turn_off("monitor", f"featurizer.start failed: {reasons.error_text(e)}")
        return run

    def record(
        self,
        d: Decision,
        budget: dict[str, Any] | None,
        flags: list[str],
        basis: str,
        shadow: bool = False,
    ) -> Decision:
        """The step's Decision with what this run knows of it (budget, context, flags, the halt's basis, the gate the
        rule read); its first halt kept (a halt is sticky).  ``shadow``: the monitor decides and records, and halts
        nothing (``reasons.shadowed``): the same decision, its halt only recorded as ``would_halt``."""
        d.budget, d.context, d.flags, d.halt_rule, d.gate = (
            budget,
            self.context,
            flags,
            basis,
            self.gate,
        )
        self.halt = self.halt or (d if d.halt else None)
        return reasons.shadowed(d) if shadow else d

    def turn_off(self, part: Part, why: str) -> None:
        """Switch ``part`` off for the rest of this run, logged (called where the error was caught)."""
        self.off[part] = why
        if part == "monitor":
            log.warning(reasons.LOG_DISABLED, self.run_id or "?", why, exc_info=True)
        elif part == "budget":
            log.warning(reasons.LOG_BUDGET_OFF, self.run_id or "?", why, exc_info=True)

    def fold(
        self, loaded: LoadedModel, st: Step, warm: WarmStart | None
    ) -> tuple[np.ndarray, float, float]:
        """Fold one clean step into the families' states: the float32 row of the new prefix and its calibrated
        (P(success), P(failure)) (a warm start's recalibration applied), timed."""
        assert self.states is not None
        t0 = time.perf_counter()
        fz = loaded.bundle.featurizer
        fz.update(self.states, st)
        self.t += 1
        self.acted += bool(st.actions)
        if self.evidence is not None:
            loaded.evidence.update(self.evidence, st)
            self.gate = loaded.evidence.gate(self.evidence)
        x = fz.values(self.states).astype(np.float32)
        t1 = time.perf_counter()
        ps, pf = loaded.proba(x, warm)
        self.last_features, self.last_timing = x, (t1 - t0, time.perf_counter() - t1)
        return x, ps, pf

    def budget(
        self, model: LiveBudget | None, st: Step, x: np.ndarray, ps: float, index: int
    ) -> dict[str, Any] | None:
        """Decision.budget for the newest prefix, timed; never raises.  An error turns the budget part off for the
        rest of the run (its spend may have taken the step in half-way); the outcome decision is not affected."""
        t0 = time.perf_counter()
        try:
            if model is None or self.spend is None or "budget" in self.off:
                return None
            self.spend.update(st)
            return model.predict(self.spend, x, ps)
        except Exception as e:
            self.turn_off("budget", f"error at step {index}: {reasons.error_text(e)}")
            return None
        finally:
            self.last_budget_time = time.perf_counter() - t0

    def fail_open(self, msg: str, index: int, flags: list[str]) -> Decision:
        """A decision to proceed at step ``index`` whose reason and flags say what was failed open on (logged)."""
        log.warning(reasons.LOG_RUN, self.run_id or "?", msg)
        return Decision.proceed(
            f"fail-open: {msg}", index, context=self.context, flags=flags + [msg]
        )

    def family_state(self, name: str) -> Any:
        """The streaming state of feature family ``name`` (None before start or without that family)."""
        families = self.featurizer.families if self.featurizer is not None else []
        return next((s for f, s in zip(families, self.states or []) if f.name == name), None)

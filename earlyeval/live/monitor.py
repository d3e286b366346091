"""Live halting: follow one agent run step by step and say when its outcome is clear; the same numbers as offline,
O(1) per step, fail-open (docs/monitor.md).  A Monitor holds what its runs share, the ``loaded`` model, its
``config`` (``MonitorConfig``) and its ``rule`` (``live.rule``); a run's state is the ``run`` ``start()`` makes."""

from __future__ import annotations

import dataclasses
import logging
import math
from pathlib import Path
from typing import Any, Mapping, Unpack

import numpy as np

from earlyeval.config.monitor_config import MonitorConfig
from earlyeval.core.decision import Decision
from earlyeval.core.trajectory import Step, Task, Trajectory
from earlyeval.features import Featurizer, RunContext
from earlyeval.live import reasons
from earlyeval.live.inputs import BadStep, _index_of, clean_step
from earlyeval.live.loaded import LoadedModel
from earlyeval.live.remaining_budget import halt_dims
from earlyeval.live.rule import Candidate, HaltingRule
from earlyeval.live.runstate import RunState, Who, replayed_sources, run_context, task_context
from earlyeval.model.modeldir import ModelBundle
from earlyeval.model.thresholds import WarmStart

log = logging.getLogger(__name__)


class Monitor:
    """Streaming P(success)/P(failure) and the halting decision for one run at a time."""

    def __init__(
        self,
        model: ModelBundle | LoadedModel,
        config: MonitorConfig | None = None,
        rule: HaltingRule | None = None,
    ):
        """Prefer ``Monitor.load``.  ``model``: a bundle, or a model loaded for other monitors of this config;
        ``rule``: the halting rule (default: the model's thresholds under ``config``)."""
        self.config = config if config is not None else MonitorConfig()
        self.loaded = model if isinstance(model, LoadedModel) else LoadedModel(model, self.config)
        dims = halt_dims(self.config.halt_on_impossible, self.loaded.budget_model)
        need = self.loaded.evidence.requirement
        self.rule = rule or HaltingRule.of(self.bundle.thresholds, self.config.halt_on, dims, need)
        self.pass_reference: Any = None  # a benchmark pass's: its runs' contexts carry it
        self.shadow = (self.config.mode or self.bundle.thresholds.get("default_mode")) == "shadow"
        self.run, self._once = RunState(), reasons.SaidOnce(log)

    @classmethod
    def load(
        cls,
        model_dir: str | Path | None = None,
        config: MonitorConfig | None = None,
        **settings: Any,
    ) -> Monitor:
        """A monitor on a model directory, loaded and verified (``model.modeldir``): ``config`` a ``MonitorConfig``,
        ``settings`` its fields by name (``halt_on="failure"``, ``tasks=...``, ...), checked by the record.  Raises
        ``ModelDirError`` (missing, damaged, unsigned when a signature is required) or ``SettingError``."""
        cfg = MonitorConfig.of(config, model_dir, **settings)
        return cls(LoadedModel.load(cfg), cfg)

    def spawn(self) -> Monitor:
        """A new monitor on the same loaded model, config and rule, for another concurrent run."""
        return Monitor(self.loaded, self.config, self.rule)

    def without_warm_start(self) -> Monitor:
        """A monitor on the same loaded model with the model's own rule and no explanation: what a warm start
        replays its runs through (``earlyeval.fitting.warm.warm_start``)."""
        plain = MonitorConfig(
            tasks=self.config.tasks, explain="never", use_c_api=self.config.use_c_api
        )
        rule = HaltingRule.of(self.bundle.thresholds, requirement=self.loaded.evidence.requirement)
        return Monitor(self.loaded, plain, rule)

    def use_warm_start(self, warm: WarmStart) -> dict[str, Any]:
        """Halt with a warm start's thresholds and recalibration of P(success) from now on, and so do the monitors
        this one spawns from now on (docs/monitor.md, "Warm start").  Returns what was fitted."""
        if not isinstance(warm, WarmStart):
            raise TypeError(f"use_warm_start takes a WarmStart, not {type(warm).__name__}")
        self.rule = self.rule.warmed(warm)
        return self.rule.warm_summary()

    @property
    def bundle(self) -> ModelBundle:
        return self.loaded.bundle

    @property
    def featurizer(self) -> Featurizer:
        return self.loaded.bundle.featurizer

    @property
    def halt_on(self) -> str:
        return self.rule.halt_on

    @property
    def thresholds(self) -> dict[str, Any]:
        """``success``, ``failure``, ``min_halt_step``: the halting rule's numbers (``rule.off`` says which are off)."""
        return self.rule.as_dict()

    def start(
        self,
        task: Task | Mapping[str, Any] | None = None,
        run_id: str | None = None,
        **who: Unpack[Who],
    ) -> RunContext | None:
        """Begin a run of ``task`` (a Task, Task fields or a SWE-bench instance; None: no context, never halts);
        ``who``: ``runstate.Who`` (agent, scaffold, model, split, prompt, as_of, ...).  Returns the run's
        context, or None when the task could not be used (the run proceeds unhalted)."""
        self.run = RunState(run_id)
        try:
            ctx, notes, sources = task_context(
                task, run_id, self.loaded.tasks, self.config.strict, who
            )
        except Exception as e:
            if self.config.strict:
                raise
            self.run.turn_off("monitor", f"start failed: {reasons.error_text(e)}")
            return None
        for n in notes:
            self._once(n, reasons.LOG_RUN, run_id or "?", n)
        return self.start_context(ctx, run_id, _sources=sources, _notes=notes)

    def start_context(
        self, ctx: RunContext, run_id: str | None = None, *, _sources: Any = None, _notes: Any = ()
    ) -> RunContext:
        """Begin a run from a ready RunContext (a replay: ``RunContext.of(traj, task)``, as offline)."""
        if self.pass_reference is not None and ctx.pass_reference is None:
            ctx = dataclasses.replace(ctx, pass_reference=self.pass_reference)
        sources = replayed_sources(ctx) if _sources is None else _sources
        say = lambda p: self._once(p, reasons.LOG_SAID_ONCE, run_id or "?", p)  # noqa: E731
        self.run = RunState.opened(
            self.loaded, self.config, ctx, run_id, sources, list(_notes), say
        )
        return ctx

    def replay(self, traj: Trajectory, task: Task | None = None, **context: Any) -> list[Decision]:
        """The decisions on a finished run's steps 1..T-1, fed as a live loop would (``task``: default the task
        table's; ``context``: ``as_of``, ``same_agent`` of ``runstate.run_context``)."""
        task = task if task is not None else self.loaded.tasks.get(traj.task_id)
        self.start_context(run_context(traj, task, **context), traj.run_id)
        return [self.observe(step) for step in traj.steps[:-1]]

    def observe(
        self, step: Step | Mapping[str, Any], *, candidate: Candidate | None = None
    ) -> Decision:
        """Fold one finished step in and decide; never raises (fail-open: bad input or a broken model gives a
        decision to proceed whose reason says why).  ``step``: a Step or a mapping (``live.inputs.clean_step``);
        ``candidate``: a live loop's, returning the agent's patch so far, called only when a success halt is
        due, which then happens only if it is non-empty."""
        index = _index_of(step, self.run.t)
        try:
            d = self._observe(step, index, candidate)
        except Exception as e:
            self.run.turn_off("monitor", f"error at step {index}: {reasons.error_text(e)}")
            d = Decision.proceed(
                f"fail-open: {reasons.error_text(e)}", index, context=self.run.context
            )
        d.halt_on, d.context_source = self.rule.halt_on, self.run.context_source
        return d

    def _observe(self, step: Any, index: int, candidate: Candidate | None) -> Decision:
        if "monitor" not in self.run.off and self.run.states is None:
            self.start_context(RunContext(), self.run.run_id)
            self.run.warnings.append(reasons.BEFORE_START)
            self._once(reasons.BEFORE_START, reasons.LOG_MONITOR, reasons.BEFORE_START)
        run = self.run
        if "monitor" in run.off:
            return Decision.proceed(
                reasons.disabled(run.off["monitor"]), index, context=run.context
            )
        try:  # read and check the step before any state sees it: a bad step is skipped, the run goes on
            st, flags = clean_step(step, run.t)
        except BadStep as e:
            run.n_skipped += 1
            return run.fail_open(reasons.skipped(index, e), index, [])
        x, ps, pf = run.fold(self.loaded, st, self.rule.warm)
        if not (math.isfinite(ps) and math.isfinite(pf)):
            return run.fail_open(reasons.non_finite(ps, pf), index, flags)
        budget = run.budget(self.loaded.budget_model, st, x, ps, index)
        v = self.rule.decide(run, ps, pf, budget, candidate)
        explain = self.config.explain
        on = not v.sticky and (explain != "never" if v.outcome else explain == "always")
        top = self.top_features(x, v.outcome or "success") if on else []
        reason = v.text(top, run.off.get("inputs"))
        d = Decision(v.outcome is not None, v.outcome, ps, pf, reason, index, self.thresholds, top)
        return run.record(d, budget, flags, v.basis, shadow=self.shadow)

    def top_features(
        self, x: np.ndarray, outcome: str = "success", k: int | None = None
    ) -> list[tuple[str, float]]:
        """Features that pushed most toward ``outcome`` (TreeSHAP contributions to the model's log-odds, positive
        toward it: ``live.explain``).  About a millisecond, so by default only when halting."""
        return self.loaded.explainer.top(x, outcome, self.config.top_k if k is None else k)


__all__ = ["BadStep", "Monitor"]

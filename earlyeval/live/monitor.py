"""Live halting: follow one agent run step by step and say when its outcome is clear.

The same numbers as offline, O(1) per step, fail-open (missing information never halts a run); one monitor per
run, ``spawn()`` for another. Use and guarantees: docs/monitor.md, "What the Monitor guarantees".
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import math
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from earlyeval.config.schema import parse_date
from earlyeval.core.decision import HALTING_CONTEXTS, Decision
from earlyeval.core.trajectory import Step, Task
from earlyeval.features import Featurizer, RunContext
from earlyeval.features.context import context_gaps, context_state
from earlyeval.live.inputs import (
    BadStep,
    _index_of,
    as_step,
    as_task,
    clean_step,
    clean_task,
    complete_task,
    task_sources,
    task_table,
)
from earlyeval.live.loaded import LoadedModel
from earlyeval.live.remaining_budget import DEFAULT_BUDGET_DIMS, halt_dims
from earlyeval.model.modeldir import ModelBundle, load_model_dir
from earlyeval.model.policy import (
    CONTINUE,
    NEVER,
    SUCCESS,
    TASK_PRIOR,
    candidate_missing,
    check_halt_on,
    halt_rule,
    halting_pair,
    halts_on_failure,
    side_reason,
    step_outcome,
)
from earlyeval.model.thresholds import WarmStart, override

log = logging.getLogger(__name__)

EXPLAIN = ("halt", "always", "never")


def _decision(
    reason: str,
    outcome: str | None = None,
    top: list[tuple[str, float]] | None = None,
    rule: str = "",
    **step: Any,
) -> Decision:
    """A Decision by name: it halts iff it predicts an outcome; ``step``: the step's probabilities and state."""
    return Decision(
        halt=outcome is not None,
        outcome=outcome,
        reason=reason,
        top_features=top or [],
        halt_rule=rule,
        **step,
    )


class Monitor:
    """Streaming P(success)/P(failure) and the halting decision for one run at a time."""

    def __init__(
        self,
        bundle: ModelBundle,
        *,
        explain: str = "halt",
        top_k: int = 5,
        strict: bool = False,
        use_c_api: bool = True,
        tasks: Mapping[str, Task] | str | Path | None = None,
        budget: bool | Iterable[str] = DEFAULT_BUDGET_DIMS,
        halt_on_impossible: bool | str | Iterable[str] = False,
        halt_on: str = "both",
        _loaded: LoadedModel | None = None,
        _warm: WarmStart | None = None,
    ):
        """``explain``: when to compute top features ("halt", "always", "never"); ``strict``: raise at
        start() when the task lacks what the model's families need, instead of warning; ``tasks``: a
        task table (dict, or a tasks.parquet written by ``earlyeval ingest``) that completes a started
        task by id (gold patch, tests, split), so an adapter that only knows the task id and prompt
        still feeds the gold and prior families.  ``budget``: fill ``Decision.budget`` from the model
        dir's budget estimators (``extra_budget.json``) when it has them: for the named dimensions (each
        costs ~30 µs a step; default steps only, which keeps observe() within its latency target),
        every dimension the model has (True), or none (False); ``halt_on_impossible``: also
        halt (predicting failure) when a dimension's P(feasible) falls below its stored early-stop
        threshold -- True for every dimension, or the names of the dimensions (off by default).
        ``halt_on``: which predicted outcomes may halt ("failure", "success", "both"; see the module doc)."""
        if explain not in EXPLAIN:
            raise ValueError(f"explain must be one of {EXPLAIN}, not {explain!r}")
        self.halt_on = check_halt_on(halt_on, "halt_on")
        self.bundle = bundle
        self.featurizer: Featurizer = bundle.featurizer
        self.model = bundle.model
        self.feature_names: list[str] = self.featurizer.names
        th = bundle.thresholds
        self.tau_s = float(th["success"])
        self.tau_f = float(th["failure"])
        self.min_halt_step = int(th.get("min_halt_step", 1))
        self.explain = explain
        self.top_k = int(top_k)
        self.strict = strict
        self._use_budget = budget if isinstance(budget, bool) else tuple(budget)
        # the predictors, Platt maps, budget model and explainer: loaded once, shared with spawned monitors
        self.loaded = (
            _loaded
            if _loaded is not None
            else LoadedModel(bundle, use_c_api=use_c_api, budget=self._use_budget)
        )
        self.budget_model, self.budget_status = self.loaded.budget_model, self.loaded.budget_status
        self.halt_on_impossible = halt_dims(halt_on_impossible, self.budget_model)
        self._warm = _warm  # use_warm_start(): inherited by the monitors spawned after it
        if self._warm is not None:
            self.tau_s, self.tau_f = self._warm.success, self._warm.failure
        self._families = set(self.featurizer.family_names)
        self.tasks = task_table(tasks)
        # context warnings already logged by this monitor (one line each, not per run)
        self._logged: set[str] = set()
        self.pass_reference: Any = (
            None  # set by a benchmark pass (live.benchpass): its runs' contexts carry it
        )
        self._reset()

    # ------------------------------------------------------------ building
    @classmethod
    def load(
        cls,
        model_dir: str | Any,
        *,
        thresholds: Any = None,
        require_signature: bool = False,
        key: bytes | str | None = None,
        **kwargs: Any,
    ) -> "Monitor":
        """Load a model directory (verified: see ``modeldir``) and build a monitor on it.

        Parameters
        ----------
        model_dir : str or Path
            A model directory written by ``earlyeval train``.
        thresholds : tuple, mapping or str, optional
            Halt with this (tau_s, tau_f) pair (or mapping, or "TS,TF") instead of the model's own, each
            finite and in (0.5, 1] (``earlyeval.model.thresholds.override``).  The directory is not
            changed; spawned monitors keep the override.
        require_signature : bool, default False
            Refuse a directory that is not signed with ``key`` (else ``$EARLYEVAL_MODEL_KEY`` /
            ``$EARLYEVAL_MODEL_KEY_FILE``), so an edit that re-computed the hashes is refused.
        key : bytes or str, optional
            The signing key (see ``require_signature``).
        **kwargs
            Passed to ``Monitor(...)``: ``halt_on``, ``budget``, ``tasks``, ``strict``, ``explain``, ...

        Returns
        -------
        Monitor

        Raises
        ------
        ModelDirError
            The directory is missing, truncated, tampered with, unsigned when a signature is required, or of
            another version.
        ThresholdError
            ``thresholds`` is out of range.
        """
        bundle = load_model_dir(model_dir, n_jobs=1, require_signature=require_signature, key=key)
        if thresholds is not None:
            bundle = dataclasses.replace(bundle, thresholds=override(bundle.thresholds, thresholds))
        return cls(bundle, **kwargs)

    def spawn(self) -> "Monitor":
        """A new monitor on the same loaded model (and predictors), for another concurrent run."""
        return Monitor(
            self.bundle,
            explain=self.explain,
            top_k=self.top_k,
            strict=self.strict,
            use_c_api=self.loaded.use_c_api,
            tasks=self.tasks,
            budget=self._use_budget,
            halt_on_impossible=sorted(self.halt_on_impossible),
            halt_on=self.halt_on,
            _loaded=self.loaded,
            _warm=self._warm,
        )

    def without_warm_start(self) -> "Monitor":
        """A monitor on the same loaded model and predictors without any warm start, budget or explanation: what a
        warm start replays its runs through (``earlyeval.fitting.warm.warm_start``)."""
        return Monitor(
            self.bundle,
            explain="never",
            use_c_api=self.loaded.use_c_api,
            tasks=self.tasks,
            budget=False,
            _loaded=self.loaded,
        )

    def use_warm_start(self, warm: WarmStart) -> dict[str, Any]:
        """Halt with a warm start's thresholds, and its recalibration of P(success), from now on.

        ``warm`` is what ``earlyeval.fitting.warm.warm_start`` fitted on K finished, labelled runs of the new agent
        (docs/monitor.md, "Warm start").  This monitor and every monitor it spawns from now on use it; its parent
        and siblings, and those they spawn, keep their thresholds.  Returns what was fitted (``selection``: the
        rule's decision, its tests and its guarantee)."""
        if not isinstance(warm, WarmStart):
            raise TypeError(
                f"use_warm_start takes a model.thresholds.WarmStart, not {type(warm).__name__}"
            )
        self._warm = warm
        self.tau_s, self.tau_f = warm.success, warm.failure
        return {
            "runs": len(warm.runs),
            "recalibration": {"a": warm.calibration.a, "b": warm.calibration.b},
            "thresholds": self.thresholds,
            "selection": dict(warm.selection),
        }

    @property
    def thresholds(self) -> dict[str, float]:
        return {"success": self.tau_s, "failure": self.tau_f, "min_halt_step": self.min_halt_step}

    @property
    def halting_thresholds(self) -> tuple[float, float]:
        """The (tau_s, tau_f) the rule applies under ``halt_on`` (an off side is ``policy.NEVER``)."""
        return halting_pair(self.tau_s, self.tau_f, self.halt_on)

    @property
    def predictor_kind(self) -> str:
        """ "c-api" (LightGBM's single-row fast path) or "booster" (Booster.predict fallback)."""
        return self.loaded.predictor_kind

    def _reset(self) -> None:
        self.ctx: RunContext | None = None
        self.run_id: str | None = None
        self.warnings: list[str] = []
        self._states: list[Any] | None = None
        self._t = 0
        self._acted = 0  # steps of this run with an action of the agent (0: the task alone can decide: "task prior")
        self._halt: Decision | None = None
        self._disabled: str | None = None
        self._degraded = ""
        self.context = "none"  # Decision.context of this run (set by start_context)
        self._halt_off = ""  # why halting is off for this run's context ("" when it is on)
        self.n_skipped = 0  # steps skipped as unreadable in this run
        self.last_features: np.ndarray | None = None  # float32 row of the newest prefix
        # seconds: (featurize, predict) of the newest step
        self.last_timing: tuple[float, float] = (
            0.0,
            0.0,
        )
        self.last_budget_time = 0.0  # seconds spent on Decision.budget for the newest step
        self._spend = self.budget_model.tracker() if self.budget_model is not None else None
        self._budget_off: str | None = (
            None  # why the budget part is off for this run (an error), else None
        )
        self.context_source: dict[
            str, str
        ] = {}  # where the task's reference fields came from (Decision.context_source)
        # notes on this run's inputs made by start() (a gold patch given as bytes ...): kept across the reset
        # start_context does, then part of ``warnings``
        self._start_notes: list[str] = getattr(self, "_pending_notes", [])
        self._pending_notes: list[str] = []

    # ----------------------------------------------------------------- run
    def start(
        self,
        task: Task | Mapping[str, Any] | None = None,
        run_id: str | None = None,
        *,
        agent: str = "",
        scaffold: str = "",
        model: str = "",
        split: str = "",
        exclude_submissions: list[str] | None = None,
        prompt: str | None = None,
        prior_match: list[str] | None = None,
        as_of: str = "",
    ) -> RunContext | None:
        """Begin a run.

        Parameters
        ----------
        task : Task or mapping, optional
            A Task or a dict (Task fields, or SWE-bench's ``instance_id`` / ``problem_statement`` /
            ``patch`` / ``FAIL_TO_PASS``).  Without one the monitor runs without context and never halts.
        run_id : str, optional
            The run's identifier, recorded in the decisions.
        agent, scaffold, model, split : str
            Who runs: what the prior family uses to leave this agent's own public results out.
        exclude_submissions, prior_match : list of str, optional
            More public submissions to leave out as this agent's own (names, or patterns to match).
        prompt : str, optional
            The task text the agent was given (default: the task's prompt).
        as_of : str, default ""
            YYYY-MM-DD: the public history is limited to submissions dated strictly before it ("" = all).

        Returns
        -------
        RunContext or None
            The run's context, or None when the task could not be used (the run then proceeds unhalted).
        """
        self._reset()
        self.run_id = run_id
        try:
            given, notes = clean_task(as_task(task, run_id))
            if notes and self.strict:
                raise ValueError("; ".join(f"task.{k}: {v}" for k, v in notes.items()))
            t = complete_task(given, self.tasks)
            if as_of:
                parse_date(as_of, "as_of")  # a real date, or the prior would compare it as a string
            ctx = RunContext(
                task=t,
                agent=agent,
                scaffold=scaffold,
                model=model,
                split=split,
                prompt=prompt if prompt is not None else (t.prompt if t else ""),
                exclude_submissions=list(exclude_submissions or []),
                prior_match=list(prior_match or []),
                task_id=t.task_id if t else "",
                as_of=as_of,
                pass_reference=self.pass_reference,
            )
        except Exception as e:
            if self.strict:
                raise
            self._disable(f"start failed: {type(e).__name__}: {e}")
            return None
        for k, v in notes.items():
            self._note(f"task.{k}: {v}")
        return self.start_context(ctx, run_id, _sources=task_sources(given, t, notes))

    def start_context(
        self, ctx: RunContext, run_id: str | None = None, *, _sources: dict[str, str] | None = None
    ) -> RunContext | None:
        """Begin a run from a ready RunContext (replay uses ``RunContext.of(traj, task)``, as offline)."""
        self._reset()
        self.run_id = run_id
        if self.pass_reference is not None and ctx.pass_reference is None:
            ctx = dataclasses.replace(ctx, pass_reference=self.pass_reference)
        self.ctx = ctx
        self.context_source = _sources if _sources is not None else task_sources(None, ctx.task)
        if _sources is None:  # the caller built the context: its task is what this run was given
            self.context_source = {
                k: v.replace("task table", "run context") for k, v in self.context_source.items()
            }
        gaps = context_gaps(self.featurizer, ctx)
        problems = [m for _, m in gaps]
        if problems and self.strict:
            raise ValueError("; ".join(problems))
        self.context, self._halt_off = context_state(
            self.featurizer, ctx, gaps, self.bundle.training
        )
        for p in problems:
            if p not in self._logged:
                self._logged.add(p)
                log.warning("earlyeval monitor (run %s; said once): %s", run_id or "?", p)
        self.warnings = self._start_notes + problems
        self._degraded = f" [degraded: {'; '.join(problems)}]" if problems else ""
        try:
            self._states = self.featurizer.start(ctx)
        except Exception as e:
            if self.strict:
                raise
            self._disable(f"featurizer.start failed: {type(e).__name__}: {e}")
        return ctx

    def family_state(self, name: str) -> Any:
        """The run's streaming state of feature family ``name`` (None before start or without that family)."""
        return next(
            (s for f, s in zip(self.featurizer.families, self._states or []) if f.name == name),
            None,
        )

    def _note(self, msg: str) -> None:
        """A warning about this run's inputs, logged once per monitor (kept for the next start_context)."""
        self._pending_notes.append(msg)
        if msg not in self._logged:
            self._logged.add(msg)
            log.warning("earlyeval monitor (run %s): %s", self.run_id or "?", msg)

    def _disable(self, why: str) -> None:
        self._disabled = why
        log.warning(
            "earlyeval monitor disabled for run %s (continuing the run): %s",
            self.run_id or "?",
            why,
            exc_info=True,
        )

    # ---------------------------------------------------------------- step
    def observe(
        self, step: Step | Mapping[str, Any], *, candidate: Callable[[], str | None] | None = None
    ) -> Decision:
        """Fold one finished step in and decide; never raises (fail-open).

        Parameters
        ----------
        step : Step or mapping
            The step just finished (a mapping is cleaned as ``earlyeval.live.inputs.clean_step`` says).
        candidate : callable, optional
            A live loop's: returns the agent's candidate answer so far (its patch); called only when a
            success halt is due, which then happens only if it is non-empty.

        Returns
        -------
        Decision
            Whether to halt and with which predicted outcome, the probabilities, the reason, and the
            budget intervals when the model has them.  Bad input or a broken model gives a decision to
            proceed whose reason says why (fail-open), never an exception.
        """
        d = self._observe(step, candidate)
        d.halt_on = self.halt_on
        d.context_source = self.context_source
        return d

    def _observe(
        self, step: Step | Mapping[str, Any], candidate: Callable[[], str | None] | None
    ) -> Decision:
        index = _index_of(step, self._t)
        if self._disabled is not None:
            return Decision.proceed(
                f"fail-open: monitor disabled for this run ({self._disabled})",
                step_index=index,
                context=self.context,
            )
        try:
            if self._states is None:
                self.start_context(RunContext(), self.run_id)
                msg = "observe() before start(): started with an empty context"
                self.warnings.append(msg)
                if msg not in self._logged:  # once per monitor, not once per run
                    self._logged.add(msg)
                    log.warning("earlyeval monitor: %s", msg)
                if self._disabled is not None:
                    return Decision.proceed(
                        f"fail-open: monitor disabled for this run ({self._disabled})",
                        step_index=index,
                        context=self.context,
                    )
            try:  # read and check the step before any state sees it: a bad step is skipped, the run goes on
                st, flags = clean_step(step, self._t)
            except BadStep as e:
                self.n_skipped += 1
                msg = f"skipped unreadable step {index} ({e}); still monitoring"
                log.warning("earlyeval monitor (run %s): %s", self.run_id or "?", msg)
                return Decision.proceed(
                    f"fail-open: {msg}", step_index=index, context=self.context, flags=[msg]
                )
            t0 = time.perf_counter()
            self.featurizer.update(self._states, st)
            self._t += 1
            self._acted += bool(st.actions)
            x = self.featurizer.values(self._states).astype(np.float32)
            t1 = time.perf_counter()
            ps, pf = self.proba(x)
            t2 = time.perf_counter()
            self.last_features = x
            self.last_timing = (t1 - t0, t2 - t1)
            if not (math.isfinite(ps) and math.isfinite(pf)):
                msg = f"the model gave a non-finite probability (p_success={ps}, p_failure={pf}): no decision at this step"
                log.warning("earlyeval monitor (run %s): %s", self.run_id or "?", msg)
                return Decision.proceed(
                    f"fail-open: {msg}", step_index=index, context=self.context, flags=flags + [msg]
                )
            budget = self._budget_step(st, x, ps, index)
            self.last_budget_time = time.perf_counter() - t2
            d = self._decide(x, ps, pf, index, budget, candidate)
            d.flags = flags
            return d
        except Exception as e:
            msg = f"{type(e).__name__}: {e}"
            self._disable(f"error at step {index}: {msg}")
            return Decision.proceed(f"fail-open: {msg}", step_index=index, context=self.context)

    def _budget_step(self, st: Step, x: np.ndarray, ps: float, index: int) -> dict[str, Any] | None:
        """Decision.budget for the newest prefix; never raises.  An error turns the budget part off for
        the rest of the run (its spend state may have taken the step in half-way), logged, budget=None;
        the outcome decision is not affected."""
        if self._spend is None or self._budget_off is not None:
            return None
        try:
            self._spend.update(st)
            return self.budget_model.predict(self._spend, x, ps)
        except Exception as e:
            self._budget_off = f"error at step {index}: {type(e).__name__}: {e}"
            log.warning(
                "earlyeval monitor: budget estimates off for run %s (outcome decisions go on): %s",
                self.run_id or "?",
                self._budget_off,
                exc_info=True,
            )
            return None

    def proba(self, x: np.ndarray) -> tuple[float, float]:
        """Calibrated (P(success), P(failure)) of one float32 feature row (``LoadedModel.proba``, with this
        monitor's warm start)."""
        return self.loaded.proba(x, self._warm)

    def _decide(
        self,
        x: np.ndarray,
        ps: float,
        pf: float,
        index: int,
        budget: dict[str, Any] | None = None,
        candidate: Callable[[], str | None] | None = None,
    ) -> Decision:
        t = self._t
        # this step's fields, named once
        step = functools.partial(
            _decision,
            p_success=ps,
            p_failure=pf,
            step_index=index,
            thresholds=self.thresholds,
            budget=budget,
            context=self.context,
        )
        if self._halt is not None:
            h = self._halt
            return step(
                f"already halted at step {h.step_index} ({h.outcome}, {h.halt_rule}); "
                f"p_success={ps:.3f}, p_failure={pf:.3f}",
                h.outcome,
                rule=h.halt_rule,
            )
        ts, tf = self.halting_thresholds
        probs = f"{side_reason('success', ps, ts, self.halt_on)}, {side_reason('failure', pf, tf, self.halt_on)}"
        if self.context not in HALTING_CONTEXTS:  # missing information never halts a run
            return step(
                f"continue (never halts: {self._halt_off}): {probs}{self._degraded}",
                top=self._always_top(x),
            )
        code = step_outcome(ps, pf, ts, tf, t, self.min_halt_step)  # the one rule, at prefix t
        held = self._success_held(candidate) if code == SUCCESS and candidate is not None else ""
        if held:  # a live loop without a patch yet: the success side waits, the failure side still applies
            code = step_outcome(ps, pf, NEVER, tf, t, self.min_halt_step)
        if code != CONTINUE:
            outcome = "success" if code == SUCCESS else "failure"
            top, why = self._explained(x, outcome)
            rule = halt_rule(t, self._acted)
            basis = f"{rule}: no action of the agent read yet" if rule == TASK_PRIOR else rule
            self._halt = step(
                f"halt after {t} steps, predicting {outcome} ({basis}): {probs}{why}{self._degraded}",
                outcome,
                top,
                rule,
            )
            return self._halt
        hits = [
            k
            for k in self.halt_on_impossible
            if budget
            and budget.get(k)
            and budget[k]["impossible"]
            and halts_on_failure(self.halt_on)
        ]
        if hits:
            top, why = self._explained(x, "failure")
            rule = ", ".join(
                f"{k} P(feasible)={budget[k]['p_feasible']:.3f} < {budget[k]['tau']:g} "
                f"(spent {budget[k]['spent']:g} of B={budget[k]['budget']:g})"
                for k in hits
            )
            basis = halt_rule(t, self._acted, budget=True)
            lead = (
                "budget rule"
                if basis != TASK_PRIOR
                else f"{TASK_PRIOR}: no action of the agent read yet; budget rule"
            )
            self._halt = step(
                f"halt after {t} steps, predicting failure ({lead}: {rule}): {probs}{why}{self._degraded}",
                "failure",
                top,
                basis,
            )
            return self._halt
        if held:
            note = f"continue (success predicted, not halted: {held}): {probs}"
        elif t < self.min_halt_step:
            note = f"continue: {probs} (halting starts at step {self.min_halt_step})"
        else:
            note = f"continue: {probs}"
        return step(note + self._degraded, top=self._always_top(x))

    def _always_top(self, x: np.ndarray) -> list[tuple[str, float]]:
        """explain="always": the success side's top features on every step."""
        return self.top_features(x, "success") if self.explain == "always" else []

    def _explained(self, x: np.ndarray, outcome: str) -> tuple[list[tuple[str, float]], str]:
        top = self.top_features(x, outcome) if self.explain != "never" else []
        return top, (
            f"; top features: {', '.join(f'{n} {c:+.2f}' for n, c in top[:3])}" if top else ""
        )

    def _success_held(self, candidate: Callable[[], str | None]) -> str:
        """Why a due success halt of a live loop waits ("" when it may halt): a run of no action yet is
        never halted as a success (the task alone cannot stand for the agent's work), nor one without a patch."""
        if not self._acted:
            return "no action of the agent yet (a success halt waits for one)"
        return candidate_missing(candidate)

    # ------------------------------------------------------------- explain
    def top_features(
        self, x: np.ndarray, outcome: str = "success", k: int | None = None
    ) -> list[tuple[str, float]]:
        """Features that pushed most toward ``outcome`` (``live.explain.Explainer``: TreeSHAP contributions to the
        model's log-odds, positive toward ``outcome``).  About a millisecond, so by default only when halting."""
        return self.loaded.explainer.top(x, outcome, self.top_k if k is None else k)


__all__ = [
    "BadStep",
    "Monitor",
    "as_step",
    "as_task",
    "clean_step",
    "complete_task",
    "context_gaps",
    "context_state",
]

"""A benchmark pass: one object per pass of one agent over a benchmark (issue 28, items 1 and 3).

A hashed audit sample is never halted, and its graded runs move the thresholds only as far as an anytime-valid
confidence sequence certifies (``live.pass_certify``); the state is one JSON file shared by threads and
processes (``live.pass_state``: bound to its model and settings, re-derived from its records at every read).
Usage, guarantee and state: docs/monitor.md, "A benchmark pass".
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path
from typing import Any, Callable

from earlyeval.core.atomic import folder_lock
from earlyeval.core.decision import HALTING_CONTEXTS, NEVER, Decision
from earlyeval.core.errors import SettingError
from earlyeval.core.trajectory import cost_value, token_count
from earlyeval.features.passref import PassReference, PassState, RunProfile
from earlyeval.live.monitor import Monitor
from earlyeval.live.pass_certify import (
    ALPHA,
    AUDIT_SHARE,
    GRID,
    MAX_ERROR,
    audited,
    candidate_taus,
    certify_counts,
    certify_pass,
    pass_order,
    run_errors,
    run_on_workers,
    would_halt,
)
from earlyeval.live.pass_state import (
    VERSION,
    Certifier,
    Loaded,
    PassSettings,
    StateFile,
    check_record,
    clean_probs,
)
from earlyeval.model import signature
from earlyeval.model.policy import gated_pair, halting_pair
from earlyeval.model.shift_test import detectable_note, shift_summary

log = logging.getLogger(__name__)


class AuditMonitor:
    """The monitor of an audited run: the Monitor's decisions, never a halt; the probabilities are kept."""

    def __init__(self, monitor: Monitor):
        self.monitor = monitor
        self.probs: list[list[float] | None] = []

    def start(self, *args: Any, **kwargs: Any) -> Any:
        self.probs = []
        return self.monitor.start(*args, **kwargs)

    def observe(self, step: Any, **kwargs: Any) -> Decision:
        # no candidate: an audit run is never halted, so nothing waits for a patch
        return self._audited(self.monitor.observe(step))

    def replay(self, traj: Any, task: Any = None, **context: Any) -> list[Decision]:
        """``Monitor.replay`` of an audited run: its decisions, never a halt; the probabilities kept."""
        self.probs = []
        return [self._audited(d) for d in self.monitor.replay(traj, task, **context)]

    def _audited(self, d: Decision) -> Decision:
        if (
            d.p_success is not None
        ):  # a counted prefix (a skipped or failed step has no probabilities and no t)
            pf, halting = d.p_failure, d.context in HALTING_CONTEXTS
            m = self.monitor
            self.probs.append(
                gated_pair(d.p_success, pf, m.run.t, int(d.gate or 0), m.rule.task_skips)
                if halting and pf is not None
                else None
            )
        if d.halt:
            d = dataclasses.replace(
                d, halt=False, outcome=None, reason=f"audit run, never halted (would: {d.reason})"
            )
        else:
            d = dataclasses.replace(d, reason=f"audit run, never halted: {d.reason}")
        return d

    def __getattr__(self, name: str) -> Any:
        return getattr(self.monitor, name)


class Pass:
    """One benchmark pass of one agent: its monitors, its finished runs, its audit sample and certified thresholds.

    ``state``: the state file (None: in memory); a state written by a pass on another model or with other
    settings, or signed with another key, is refused (``PassStateError``).  ``key``: the signing key (default
    ``$EARLYEVAL_MODEL_KEY`` / ``$EARLYEVAL_MODEL_KEY_FILE``, as for model directories); ``require_signature``:
    refuse to run without one."""

    def __init__(
        self,
        monitor: Monitor,
        state: str | Path | None = None,
        *,
        audit_share: float = AUDIT_SHARE,
        seed: int = 0,
        alpha: float = ALPHA,
        max_error: float = MAX_ERROR,
        key: bytes | str | None = None,
        require_signature: bool = False,
        expected_runs: int | None = None,
    ):
        self.base_monitor = monitor
        # the pair the monitors' rule applies: a side their halt_on turns off is NEVER and stays off, so that the
        # audit runs certify the halts the pass makes (not those of a rule that also halts on the other side)
        self.halt_on = str(getattr(monitor, "halt_on", "both"))
        self.base = halting_pair(monitor.rule.success, monitor.rule.failure, self.halt_on)
        self.min_t = monitor.rule.min_halt_step
        self.settings = PassSettings(
            seed=seed,
            audit_share=audit_share,
            alpha=alpha,
            max_error=max_error,
            halt_on=self.halt_on,
            base=self.base,
            min_halt_step=self.min_t,
            model_content_hash=_content_hash(monitor),
        )
        s = self.settings
        self.audit_share, self.seed, self.alpha, self.max_error = (
            s.audit_share,
            s.seed,
            s.alpha,
            s.max_error,
        )
        self._lock = threading.Lock()
        self._audit_monitors: dict[str, AuditMonitor] = {}
        self.warnings: list[str] = []
        self.certifier = Certifier(s)
        # said up front: the shifts the audit sample of a pass this size can see (None: size not given)
        self.detectable = (
            None if expected_runs is None else detectable_note(expected_runs, audit_share)
        )
        if self.detectable is not None:
            log.info("earlyeval pass: %s", self.detectable["sentence"])
        self.file = self._state_file(state, key, require_signature)
        self.path = self.file.path if self.file is not None else None
        self._loaded = Loaded({}, {}, "new pass (no state file)", True)
        self.state: dict[str, Any] = {}
        self._set(self._loaded)
        if self.file is not None:
            with self._lock, folder_lock(self.file.path.parent):
                self._set(self.file.read())

    def _state_file(
        self, state: str | Path | None, key: bytes | str | None, required: bool
    ) -> StateFile | None:
        if state is None:
            return None
        if self.settings.model_content_hash is None:
            raise SettingError(
                "Pass",
                "state",
                "a pass with a state file needs a model loaded from a model directory (its content "
                "hash binds the state)",
            )
        k = signature.model_key(key)
        if required and k is None:
            raise SettingError(
                "Pass",
                "require_signature",
                "needs the signing key (EARLYEVAL_MODEL_KEY, EARLYEVAL_MODEL_KEY_FILE or key=)",
            )
        return StateFile(state, self.settings, k)

    @classmethod
    def load(
        cls,
        model_dir: str | Path,
        state: str | Path | None = None,
        *,
        audit_share: float = AUDIT_SHARE,
        seed: int = 0,
        alpha: float = ALPHA,
        max_error: float = MAX_ERROR,
        **kwargs: Any,
    ) -> "Pass":
        """A pass on one loaded model (``Monitor.load(model_dir, **kwargs)``)."""
        return cls(
            Monitor.load(model_dir, **kwargs),
            state,
            audit_share=audit_share,
            seed=seed,
            alpha=alpha,
            max_error=max_error,
            key=kwargs.get("key"),
            require_signature=bool(kwargs.get("require_signature", False)),
        )

    # ------------------------------------------------------------ state
    def _set(self, loaded: Loaded) -> None:
        """``loaded`` in force: its thresholds derived from its records (never a stored pair)."""
        for w in loaded.warnings:
            self._say(w)
        self._loaded = loaded
        pair, test = self.certifier.certified(loaded.records, bool(loaded.bad))
        self.state = {
            "finished": loaded.records,
            "thresholds": pair,
            "shift_test": shift_summary(test),
            "status": loaded.status,
            "cold": loaded.cold,
        }
        if test.rejected is not None:
            self._say(self.state["shift_test"]["fallback"])

    def _say(self, warning: str) -> None:
        """A warning logged once (the adapters' logs) and kept for the summary."""
        if warning not in self.warnings:
            log.warning("earlyeval pass: %s", warning)
            self.warnings.append(warning)

    def _refresh(self) -> None:
        if self.file is not None:
            with folder_lock(self.file.path.parent):
                self._set(self.file.read())

    @property
    def status(self) -> str:
        return str(self.state.get("status", "new pass (no state file)"))

    @property
    def thresholds(self) -> tuple[float, float]:
        return float(self.state["thresholds"][0]), float(self.state["thresholds"][1])

    @property
    def history(self) -> list[dict[str, Any]]:
        """The thresholds after each graded audit run, in grading order (derived from the records)."""
        return self.certifier.history(self._loaded.records, bool(self._loaded.bad))

    # ------------------------------------------------------------ runs
    def is_audited(self, run_id: str) -> bool:
        return audited(self.seed, run_id, self.audit_share)

    def monitor(self, run_id: str, refresh: bool = True) -> Monitor | AuditMonitor:
        """The monitor for ``run_id``: the certified thresholds as of now (re-read from the state file when
        ``refresh``); for an audited run, one that never halts."""
        with self._lock:
            if refresh:
                self._refresh()
            ts, tf = self.thresholds
            m = self.base_monitor.spawn()
            # an off side keeps the model's own tau (never applied)
            m.rule = m.rule.moved(min(ts, NEVER), min(tf, NEVER))
            m.pass_reference = self.reference()
            if self.is_audited(run_id):
                am = AuditMonitor(m)
                self._audit_monitors[run_id] = am
                return am
            return m

    def reference(self) -> PassReference | None:
        """The audited runs finished so far, as the pass features read them (None below MIN_REFERENCE); every
        profile was checked with its record."""
        return PassReference.of(
            RunProfile.from_dict(r["profile"])
            for r in self.state["finished"].values()
            if r.get("audited") and r.get("profile") is not None
        )

    def finish(
        self,
        run_id: str,
        *,
        steps: int,
        tokens: int | None = None,
        cost: float | None = None,
        halted: bool = False,
        outcome: int | None = None,
        probs: list[list[float] | None] | None = None,
        profile: RunProfile | None = None,
    ) -> dict[str, Any]:
        """Record a finished run (usage None when unknown); for an audited run its graded outcome (0/1), which
        re-certifies the thresholds.  ``probs`` / ``profile``: an audited run's per-prefix (p_s, p_f) and its
        ``RunProfile`` (what the pass features of later runs read), else those its ``monitor()`` recorded in this
        process.  Returns the thresholds now in force."""
        aud = self.is_audited(run_id)
        if aud and halted:
            raise ValueError(f"run {_shown(run_id)} is audited and cannot have been halted")
        grade = _grade(run_id, outcome) if aud and outcome is not None else None
        with self._lock:
            am = self._audit_monitors.pop(run_id, None)
            rec: dict[str, Any] = {
                "steps": steps,
                "tokens": token_count(tokens),
                "cost": cost_value(cost),
                "halted": bool(halted),
                "audited": aud,
            }
            if aud:  # kept even before the grade arrives, so that ``grade`` can certify later
                rec["profile"] = _profile_of(profile, am)
                got = probs if probs is not None else (am.probs if am is not None else None)
                rec["probs"] = clean_probs(got)

            def apply(ld: Loaded) -> None:
                rec["seq"] = 1 + max((r["seq"] for r in ld.records.values()), default=0)
                ld.bad.pop(run_id, None)
                ld.records.pop(run_id, None)
                _put(ld, run_id, _graded(ld, run_id, rec, grade), self.settings)

            self._update(apply)
            return {"thresholds": self.thresholds, "audited": aud}

    def grade(self, run_id: str, outcome: int) -> dict[str, Any]:
        """The graded outcome (0/1) of an audited run that finished earlier (the harness grades after the run):
        it re-certifies the thresholds as ``finish(..., outcome=)`` would have.  Returns the thresholds now."""
        if not self.is_audited(run_id):
            raise ValueError(
                f"run {_shown(run_id)} is not audited: only audited runs are graded into the pass"
            )
        grade = _grade(run_id, outcome)

        def apply(ld: Loaded) -> None:
            rec = ld.records.get(run_id)
            if rec is None:
                raise ValueError(
                    f"run {_shown(run_id)} has not finished in this pass: finish it before grading it"
                )
            _put(ld, run_id, _graded(ld, run_id, dict(rec), grade), self.settings)

        with self._lock:
            self._update(apply)
        return {"thresholds": self.thresholds, "audited": True}

    def _update(self, apply: Callable[[Loaded], None]) -> None:
        """Apply one change to the state: in memory, or read-merge-write of the state file under its lock."""
        if self.file is None:
            apply(self._loaded)
            self._set(dataclasses.replace(self._loaded, status="in memory", cold=False))
            return
        with folder_lock(self.file.path.parent):
            ld = self.file.read()
            self._set(ld)
            apply(ld)
            ld = dataclasses.replace(
                ld, status="resumed" if not ld.cold else ld.status, cold=False, warnings=[]
            )
            pair, test = self.certifier.certified(ld.records, bool(ld.bad))
            self.file.write(ld, pair, shift_summary(test))
            self._set(ld)

    def summary(self) -> dict[str, Any]:
        fin = self.state["finished"]
        n_aud = sum(1 for r in fin.values() if r.get("audited"))
        return {
            "n_finished": len(fin),
            "n_audited": n_aud,
            "audited_share": n_aud / len(fin) if fin else None,
            "thresholds": list(self.thresholds),
            "label_free": list(self.base),
            "history": self.history,
            "status": self.status,
            "warnings": list(self.warnings),
            "left_out": sorted(self._loaded.bad),
            "shift_test": self.state["shift_test"],
            "shift_detectable": self.detectable,
        }


def _shown(run_id: Any) -> str:
    """A run id as an error shows it: quoted, and cut to 80 characters (a run id is the caller's to choose)."""
    r = repr(run_id)
    return r if len(r) <= 80 else f"{r[:77]}..."


def _content_hash(monitor: Monitor) -> str | None:
    bundle = getattr(monitor, "bundle", None)
    h = (getattr(bundle, "manifest", None) or {}).get("content_hash")
    return h if isinstance(h, str) else None


def _grade(run_id: str, outcome: Any) -> int:
    """A graded outcome: 0 or 1 (a bool or a numpy integer taken as its value); anything else refused."""
    import numbers

    if isinstance(outcome, numbers.Integral) and int(outcome) in (0, 1):
        return int(outcome)
    raise ValueError(f"run {_shown(run_id)}: outcome must be 0 or 1, not {_shown(outcome)}")


def _profile_of(profile: RunProfile | None, am: "AuditMonitor | None") -> dict[str, Any] | None:
    if profile is None and am is not None:
        ps = am.monitor.run.family_state("pass")
        profile = ps.profile() if isinstance(ps, PassState) else None
    return profile.to_dict() if profile is not None else None


def _graded(ld: Loaded, run_id: str, rec: dict[str, Any], grade: int | None) -> dict[str, Any]:
    if grade is not None:
        rec["outcome"] = grade
        rec["graded_seq"] = 1 + max(
            (r.get("graded_seq") or 0 for r in ld.records.values()), default=0
        )
        # the runs finished when it was graded, itself included (at ``finish`` it is not in the records yet)
        rec["finished_at_grade"] = len(ld.records) + (0 if ld.records.get(run_id) else 1)
    return rec


def _put(ld: Loaded, run_id: str, rec: dict[str, Any], settings: PassSettings) -> None:
    """``rec`` into the state, checked as a record read from the file is (``pass_state.check_record``)."""
    ld.records[run_id] = check_record(run_id, rec, settings, f"run {_shown(run_id)}")


class PassMonitor:
    """A run's monitor drawn from a shared :class:`Pass`: what an adapter's ``pass`` config block builds.

    ``start(task, run_id)`` spawns the run's monitor from the pass (its thresholds and reference as of now; an
    audited run's never halts); ``observe`` delegates; ``finish(steps=, halted=)`` tells the pass the run ended
    (usage unknown is None).  A failure of the pass never stops the run: the run goes on with a plain monitor,
    and ``warnings`` says so."""

    def __init__(self, the_pass: Pass):
        self.the_pass = the_pass
        self.current: Monitor | AuditMonitor | None = None
        self.run_id: str | None = None
        self.halt_on = the_pass.base_monitor.halt_on
        self.warnings: list[str] = []

    def start(self, task: Any = None, run_id: str | None = None, **kwargs: Any) -> Any:
        self.run_id = run_id
        try:
            self.current = self.the_pass.monitor(str(run_id))
        except Exception as e:  # noqa: BLE001 - fail open: the label-free monitor, no pass
            self._warn(
                f"pass unavailable for run {run_id} ({type(e).__name__}: {e}): label-free monitor"
            )
            self.current = self.the_pass.base_monitor.spawn()
        return self.current.start(task, run_id, **kwargs)

    def observe(self, step: Any, *, candidate: Callable[[], str | None] | None = None) -> Decision:
        if self.current is None:
            self.start(None, self.run_id)
        assert self.current is not None
        if isinstance(self.current, AuditMonitor):
            return self.current.observe(step)
        return self.current.observe(step, candidate=candidate)

    def finish(
        self, *, steps: int, halted: bool, tokens: int | None = None, cost: float | None = None
    ) -> None:
        """Tell the pass the run ended (the outcome of an audited run is graded later: ``Pass.finish``)."""
        if self.run_id is None:
            return
        try:
            self.the_pass.finish(
                self.run_id,
                steps=steps,
                tokens=tokens,
                cost=cost,
                halted=halted and not self.the_pass.is_audited(self.run_id),
            )
        except Exception as e:  # noqa: BLE001 - the run is over; its record is lost, and said so
            self._warn(f"pass finish failed for run {self.run_id} ({type(e).__name__}: {e})")

    def _warn(self, msg: str) -> None:
        log.warning("earlyeval pass: %s", msg)
        self.warnings.append(msg)

    def __getattr__(self, name: str) -> Any:
        if name in ("current", "the_pass"):
            raise AttributeError(name)
        return getattr(
            self.current if self.current is not None else self.the_pass.base_monitor, name
        )


# the certification's names, used from here by the pass simulator and the tests (``live.pass_certify``)
__all__ = [
    "ALPHA",
    "AUDIT_SHARE",
    "GRID",
    "MAX_ERROR",
    "VERSION",
    "AuditMonitor",
    "Pass",
    "PassMonitor",
    "audited",
    "candidate_taus",
    "certify_counts",
    "certify_pass",
    "pass_order",
    "run_errors",
    "run_on_workers",
    "would_halt",
]

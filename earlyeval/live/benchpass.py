"""A benchmark pass: one object per pass of one agent over a benchmark (issue 28, items 1 and 3).

A hashed audit sample is never halted, and its graded runs move the thresholds only as far as an anytime-valid
confidence sequence certifies; the state is one JSON file shared by threads and processes. Usage, guarantee
and state: docs/monitor.md, "A benchmark pass".
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import json
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np

from earlyeval.core.atomic import folder_lock, json_bytes, write_bytes
from earlyeval.core.decision import HALTING_CONTEXTS, Decision
from earlyeval.features.passref import PassReference, PassState, RunProfile
from earlyeval.live.monitor import Monitor
from earlyeval.model.anytime import cs_bounds, cs_lower_above, cs_upper_at_most
from earlyeval.model.policy import (
    CONTINUE,
    NEVER,
    SUCCESS,
    halting_pair,
    step_outcome,
)

log = logging.getLogger(__name__)

VERSION = 1
# candidate taus per side, fixed before any label (with the label-free tau added): bolder and more cautious
# the defaults: audited share, guarantee level, error bound
AUDIT_SHARE, ALPHA, MAX_ERROR = (
    0.10,
    0.05,
    0.03,
)
GRID = (0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995)


def audited(seed: int, run_id: str, share: float) -> bool:
    """Whether ``run_id`` is in the audit sample: a hash of (seed, run_id) only, never of a prediction or order."""
    h = hashlib.sha256(f"{int(seed)}:{run_id}".encode()).digest()
    return int.from_bytes(h[:8], "big") / 2.0**64 < share


def would_halt(probs: list[list[float] | None], ts: float, tf: float, min_t: int) -> str | None:
    """The outcome ("success"/"failure") the rule would halt an audited run with at (ts, tf), or None.  ``probs``
    holds (p_s, p_f) per prefix t = 1, 2, ...; None where the run could not halt (context, fail-open)."""
    for t, pp in enumerate(probs, start=1):
        if pp is None:
            continue
        code = step_outcome(pp[0], pp[1], ts, tf, t, min_t)
        if code != CONTINUE:
            return "success" if code == SUCCESS else "failure"
    return None


def candidate_taus(base: tuple[float, float]) -> list[float]:
    """The taus each side may be certified at: GRID plus the label-free pair, fixed before any label."""
    return sorted(set(GRID) | {base[0], base[1]} - {NEVER})


def run_errors(
    probs: list[list[float] | None],
    outcome: int,
    base: tuple[float, float],
    min_t: int,
    taus: list[float],
) -> dict[tuple[int, float], tuple[int, int]]:
    """One graded audit run's (error, halted) per (side, tau): side 0 moves tau_s (tau_f at the base), side 1
    tau_f.  Counts over runs add up, so a pass certifies incrementally (``certify_counts``)."""
    out = {}
    for i, side in enumerate(("success", "failure")):
        for tau in taus:
            ts, tf = (tau, base[1]) if i == 0 else (base[0], tau)
            h = would_halt(probs, ts, tf, min_t)
            out[(i, tau)] = (
                int(h == side and int(outcome) != (1 if side == "success" else 0)),
                int(h == side),
            )
    return out


def certify_counts(
    counts: Mapping[tuple[int, float], tuple[int, int]],
    n_audit: int,
    base: tuple[float, float],
    alpha: float,
    max_error: float,
) -> dict[str, Any]:
    """The certified (tau_s, tau_f) from summed ``run_errors`` counts, and the bounds behind it.

    Per side and per candidate tau, the confidence sequence at level alpha / (2 * candidates) holds for every
    tau, both sides and every time at once with probability >= 1 - alpha (union bound), for audit runs i.i.d.
    from the pass's run distribution."""
    out: dict[str, Any] = {"n_audited_graded": n_audit, "alpha": alpha, "max_error": max_error}
    taus = candidate_taus(base)
    a = alpha / (2 * len(taus))
    pair = list(base)
    for i, side in enumerate(("success", "failure")):
        en = {tau: counts.get((i, tau), (0, 0)) for tau in taus}
        # e / n > max_error puts the upper bound above it too: only the others need the tail sum
        ok = [
            t
            for t in taus
            if en[t][1] > 0
            and en[t][0] <= max_error * en[t][1]
            and cs_upper_at_most(en[t][0], en[t][1], a, max_error)
        ]
        b = base[i]
        if (
            b < NEVER and b in en and cs_lower_above(en[b][0], en[b][1], a, max_error)
        ):  # label-free tau rejected
            up = [t for t in ok if t > b]
            pair[i] = min(up) if up else NEVER
        elif ok and min(ok) < b:  # certified bolder
            pair[i] = min(ok)
        shown = {t: [*en[t], *cs_bounds(en[t][0], en[t][1], a)] for t in {b, pair[i]} if t in en}
        out[side] = {
            "tau": pair[i],
            "counts": {f"{t:g}": list(v) for t, v in en.items()},
            "bounds": {f"{t:g}": v for t, v in shown.items()},
        }
    out["pair"] = pair
    return out


def certify_pass(
    audit: list[dict[str, Any]],
    base: tuple[float, float],
    min_t: int,
    alpha: float,
    max_error: float,
) -> dict[str, Any]:
    """``certify_counts`` over the graded audit runs (each a record with ``probs`` and ``outcome``)."""
    taus = candidate_taus(base)
    counts: dict[tuple[int, float], tuple[int, int]] = {}
    for r in audit:
        for k, (e, n) in run_errors(r["probs"], r["outcome"], base, min_t, taus).items():
            e0, n0 = counts.get(k, (0, 0))
            counts[k] = (e0 + e, n0 + n)
    return certify_counts(counts, len(audit), base, alpha, max_error)


def pass_order(run_ids: list[str], seed: int) -> list[int]:
    """Indices into ``run_ids`` in pass order: sorted by run id, then shuffled by numpy ``default_rng(seed)``
    (the order ``score --pass`` replays and the evaluation's pass simulator draws)."""
    by_id = sorted(range(len(run_ids)), key=lambda i: (run_ids[i], i))
    return [by_id[int(k)] for k in np.random.default_rng(seed).permutation(len(by_id))]


def run_on_workers(
    order: list[int],
    workers: int,
    run: Callable[[int, int, int], int],
    deliver: Callable[[int], None],
) -> None:
    """Runs in ``order`` on ``workers`` simulated workers, time counted in steps.  A run starts when a worker
    frees up, after every run finished at or before then is delivered (``deliver(i)``); ``run(i, k, start)``
    plays run i (the k-th started) and returns its duration.  What run i can read was delivered before it."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"--pass-workers {workers!r}: a number of workers >= 1")
    free = [(0, w) for w in range(workers)]  # (time the worker frees up, worker)
    done: list[
        tuple[int, int, int]
    ] = []  # (finish time, start order, run): the events not yet delivered
    for k, i in enumerate(order):
        start, w = heapq.heappop(free)
        while done and done[0][0] <= start:
            deliver(heapq.heappop(done)[2])
        dur = int(run(i, k, start))
        heapq.heappush(done, (start + dur, k, i))
        heapq.heappush(free, (start + dur, w))
    while done:
        deliver(heapq.heappop(done)[2])


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
            self.probs.append([d.p_success, pf] if halting and pf is not None else None)
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
    """One benchmark pass of one agent: its monitors, its finished runs, its audit sample and certified thresholds."""

    def __init__(
        self,
        monitor: Monitor,
        state: str | Path | None = None,
        *,
        audit_share: float = AUDIT_SHARE,
        seed: int = 0,
        alpha: float = ALPHA,
        max_error: float = MAX_ERROR,
    ):
        if not 0.0 <= audit_share <= 1.0:
            raise ValueError(f"audit_share must be in [0, 1], not {audit_share!r}")
        self.base_monitor = monitor
        # the pair the monitors' rule applies: a side their halt_on turns off is NEVER and stays off, so that the
        # audit runs certify the halts the pass makes (not those of a rule that also halts on the other side)
        self.halt_on = str(getattr(monitor, "halt_on", "both"))
        self.base = halting_pair(monitor.rule.success, monitor.rule.failure, self.halt_on)
        self.min_t = monitor.rule.min_halt_step
        self.audit_share, self.seed, self.alpha, self.max_error = (
            float(audit_share),
            int(seed),
            float(alpha),
            float(max_error),
        )
        self.path = Path(state) if state is not None else None
        self._lock = threading.Lock()
        self._audit_monitors: dict[str, AuditMonitor] = {}
        self.warnings: list[str] = []
        self.state = self._cold()
        if self.path is not None:
            with self._lock, folder_lock(self.path.parent):
                self.state = self._read()

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
        )

    # ------------------------------------------------------------ state
    def _cold(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "seed": self.seed,
            "audit_share": self.audit_share,
            "base": list(self.base),
            "thresholds": list(self.base),
            "finished": {},
            "history": [],
            "cold": True,
        }

    def _read(self) -> dict[str, Any]:
        """The state on disk; cold (and said so) when it is missing, unreadable or not this pass's."""
        assert self.path is not None
        if not self.path.exists():
            return {
                **self._cold(),
                "status": f"no pass state at {self.path}: cold start (label-free thresholds)",
            }
        try:
            st = json.loads(self.path.read_text())
            if (
                not isinstance(st, dict)
                or st.get("version") != VERSION
                or not isinstance(st.get("finished"), dict)
            ):
                raise ValueError("not a pass state of this version")
            if (
                st.get("seed") != self.seed
                or st.get("audit_share") != self.audit_share
                or st.get("base") != list(self.base)
            ):
                raise ValueError(
                    "seed, audit share or label-free thresholds differ from this pass's"
                )
            th = st.get("thresholds")
            if not (
                isinstance(th, list)
                and len(th) == 2
                and all(isinstance(x, (int, float)) and 0.5 < x <= NEVER for x in th)
            ):
                raise ValueError("field 'thresholds' is not a pair in (0.5, 1]")
            return {**st, "cold": False, "status": "resumed"}
        except (OSError, ValueError) as e:
            msg = f"pass state {self.path} unreadable ({e}): cold start (label-free thresholds)"
            if msg not in self.warnings:
                log.warning(msg)
                self.warnings.append(msg)
            return {**self._cold(), "status": msg}

    @property
    def status(self) -> str:
        return str(self.state.get("status", "new pass (no state file)"))

    @property
    def thresholds(self) -> tuple[float, float]:
        return float(self.state["thresholds"][0]), float(self.state["thresholds"][1])

    # ------------------------------------------------------------ runs
    def is_audited(self, run_id: str) -> bool:
        return audited(self.seed, run_id, self.audit_share)

    def monitor(self, run_id: str, refresh: bool = True) -> Monitor | AuditMonitor:
        """The monitor for ``run_id``: the certified thresholds as of now (re-read from the state file when
        ``refresh``); for an audited run, one that never halts."""
        with self._lock:
            if refresh and self.path is not None:
                with folder_lock(self.path.parent):
                    self.state = self._read()
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
        """The audited runs finished so far, as the pass features read them (None below MIN_REFERENCE).  A
        profile the state file holds in a bad shape is left out, and said so."""
        profiles = []
        for rid, r in self.state["finished"].items():
            if not r.get("audited") or r.get("profile") is None:
                continue
            try:
                profiles.append(
                    RunProfile.from_dict(
                        r["profile"], f"{self.path or 'pass'}: finished.{rid}.profile"
                    )
                )
            except ValueError as e:
                if str(e) not in self.warnings:
                    log.warning("%s: left out of the pass reference", e)
                    self.warnings.append(str(e))
        return PassReference.of(profiles)

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
            raise ValueError(f"run {run_id!r} is audited and cannot have been halted")
        with self._lock:
            am = self._audit_monitors.pop(run_id, None)
            rec: dict[str, Any] = {
                "steps": int(steps),
                "tokens": tokens,
                "cost": cost,
                "halted": bool(halted),
                "audited": aud,
            }
            if aud:
                ps = (
                    am.monitor.run.family_state("pass")
                    if profile is None and am is not None
                    else None
                )
                prof = (
                    profile
                    if profile is not None
                    else (ps.profile() if isinstance(ps, PassState) else None)
                )
                rec["profile"] = prof.to_dict() if prof is not None else None
            if aud:  # kept even before the grade arrives, so that ``grade`` can certify later
                rec["probs"] = (
                    probs if probs is not None else (am.probs if am is not None else None)
                )
            if aud and outcome is not None:
                if outcome not in (0, 1):
                    raise ValueError(f"run {run_id!r}: outcome must be 0 or 1, not {outcome!r}")
                rec["outcome"] = int(outcome)
            self._update(lambda st: self._apply(st, run_id, rec))
            return {"thresholds": self.thresholds, "audited": aud}

    def grade(self, run_id: str, outcome: int) -> dict[str, Any]:
        """The graded outcome (0/1) of an audited run that finished earlier (the harness grades after the run):
        it re-certifies the thresholds as ``finish(..., outcome=)`` would have.  Returns the thresholds now."""
        if not self.is_audited(run_id):
            raise ValueError(
                f"run {run_id!r} is not audited: only audited runs are graded into the pass"
            )
        if outcome not in (0, 1):
            raise ValueError(f"run {run_id!r}: outcome must be 0 or 1, not {outcome!r}")

        def apply(st: dict[str, Any]) -> None:
            rec = st["finished"].get(run_id)
            if not isinstance(rec, dict):
                raise ValueError(
                    f"run {run_id!r} has not finished in this pass: finish it before grading it"
                )
            self._apply(st, run_id, {**rec, "outcome": int(outcome)})

        with self._lock:
            self._update(apply)
        return {"thresholds": self.thresholds, "audited": True}

    def _update(self, apply: Callable[[dict[str, Any]], None]) -> None:
        """Apply one change to the state: in memory, or read-merge-write of the state file under its lock."""
        if self.path is None:
            apply(self.state)
            return
        with folder_lock(self.path.parent):
            st = self._read()
            apply(st)
            write_bytes(
                self.path, json_bytes({k: v for k, v in st.items() if k not in ("cold", "status")})
            )
            self.state = {
                **st,
                "status": "resumed" if not st.get("cold") else st.get("status"),
                "cold": False,
            }

    def _apply(self, st: dict[str, Any], run_id: str, rec: dict[str, Any]) -> None:
        st["finished"][run_id] = rec
        if "outcome" in rec and rec.get("probs") is not None:
            audit = [
                r for r in st["finished"].values() if "outcome" in r and r.get("probs") is not None
            ]
            cert = certify_pass(audit, self.base, self.min_t, self.alpha, self.max_error)
            ts, tf = cert["pair"]
            pair = list(halting_pair(ts, tf, self.halt_on))
            st["thresholds"] = pair
            st["history"].append(
                {
                    "n_finished": len(st["finished"]),
                    "n_audited_graded": len(audit),
                    "thresholds": pair,
                }
            )

    def summary(self) -> dict[str, Any]:
        fin = self.state["finished"]
        n_aud = sum(1 for r in fin.values() if r.get("audited"))
        return {
            "n_finished": len(fin),
            "n_audited": n_aud,
            "audited_share": n_aud / len(fin) if fin else None,
            "thresholds": list(self.thresholds),
            "label_free": list(self.base),
            "history": list(self.state["history"]),
            "status": self.status,
            "warnings": list(self.warnings),
        }


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

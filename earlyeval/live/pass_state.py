"""The state file of a benchmark pass (docs/monitor.md, "A benchmark pass", "State").

One JSON file shared by a pass's threads and processes, read and written under its folder's lock.  It cannot be
edited into another pass:

* it names what it is bound to (``PassSettings``: the model's content hash, seed, audit share, alpha, error bound,
  ``halt_on``, label-free pair, ``min_halt_step``), and a pass with other ones refuses it (``PassStateError``
  naming the file and the field);
* it holds records, not conclusions: the thresholds are re-derived from its graded audit records at every read
  (``Certifier``); the ``thresholds`` it shows are for people and never read back;
* every record is checked by one function (``check_record``); a bad one is left out with a warning naming the
  run (it stays in the file as written), and while one is there the pass is never bolder than label-free;
* with a key (``$EARLYEVAL_MODEL_KEY``, the model directories' key) it is signed, and one that does not match the
  key is refused;
* it is read only when it is a regular file, within a bound, as strict JSON (a repeated key is refused), and it
  is written as strict JSON (never NaN or Infinity).

The format is versioned (``VERSION``).  A new field goes into ``FinishedRun`` (a run's record), ``PassSettings``
(what the pass is bound to) or ``STATE_KEYS`` (a block of its own, checked in ``StateFile._doc_parts``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from earlyeval.config.records import Record, setting
from earlyeval.config.schema import HEX64, Bool, Choice, Int, Invalid, ListOf, Num, Validator
from earlyeval.core.atomic import write_bytes
from earlyeval.core.decision import NEVER
from earlyeval.core.errors import IngestError, PassStateError, SettingError, StrictJSONError
from earlyeval.core.jsonio import dumps_strict, loads_strict, read_regular
from earlyeval.features.passref import RunProfile
from earlyeval.live.pass_certify import (
    audited,
    candidate_taus,
    certify_counts,
    run_errors,
    would_halt,
)
from earlyeval.model import signature
from earlyeval.model.policy import halting_pair
from earlyeval.model.shift_test import ShiftTest

FORMAT = "earlyeval-pass-state"
VERSION = 2
STATE_KEYS = ("format", "version", "pass", "finished", "thresholds", "shift_test", "signature")
MAX_RUNS = 10_000_000  # finished runs one pass may record
MAX_STEPS = 10_000_000  # steps one run may have
MAX_RUN_ID = 1024  # characters of a run id
_DOMAIN = (
    b"earlyeval pass state, v2\n"  # what the MAC signs, so that it means nothing for another file
)


class _Probs(Validator):
    """An audited run's (P(success), P(failure)) per counted prefix; null where the run could not halt."""

    def __call__(self, v: Any, key: str) -> list[list[float] | None]:
        pair = Num(0.0, 1.0)
        if not isinstance(v, list):
            raise Invalid(
                key, f"{type(v).__name__}, expected an array of [p_success, p_failure] or null"
            )
        if len(v) > MAX_STEPS:
            raise Invalid(key, f"{len(v)} prefixes, more than {MAX_STEPS}")
        out: list[list[float] | None] = []
        for i, pp in enumerate(v):
            if pp is None:
                out.append(None)
            elif isinstance(pp, list) and len(pp) == 2:
                out.append([pair(pp[0], f"{key}[{i}][0]"), pair(pp[1], f"{key}[{i}][1]")])
            else:
                raise Invalid(f"{key}[{i}]", "expected [p_success, p_failure] or null")
        return out


class _Profile(Validator):
    def __call__(self, v: Any, key: str) -> dict[str, Any]:
        try:
            return RunProfile.from_dict(v, key).to_dict()
        except ValueError as e:  # "<key>.<field>: why": the field named as a file key
            where, _, why = str(e).partition(": ")
            raise Invalid(where, why) from None


@dataclass(frozen=True)
class FinishedRun(Record):
    """One finished run of the pass, as its state file holds it (the keys are the file's)."""

    seq: int = setting(Int(1, MAX_RUNS))  # its place in the order runs finished
    steps: int = setting(Int(0, MAX_STEPS))
    halted: bool = setting(Bool())
    audited: bool = setting(Bool())
    tokens: int | None = setting(Int(0, 10**15), None, optional=True)  # unknown: null, never 0
    cost: float | None = setting(Num(0.0, 1e12), None, optional=True)
    # audited runs only: what certifies (probs, outcome) and what the pass features read (profile)
    probs: list[list[float] | None] | None = setting(_Probs(), None, optional=True)
    profile: dict[str, Any] | None = setting(_Profile(), None, optional=True)
    outcome: int | None = setting(Choice((0, 1)), None, optional=True)
    graded_seq: int | None = setting(
        Int(1, MAX_RUNS), None, optional=True
    )  # its place among grades
    finished_at_grade: int | None = setting(Int(0, MAX_RUNS), None, optional=True)

    def to_file(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        return {k: v for k, v in d.items() if v is not None or k in ("tokens", "cost")}


@dataclass(frozen=True)
class PassSettings(Record):
    """What a pass is bound to: a state written under other settings is refused, never resumed."""

    seed: int = setting(Int(0, 2**63 - 1))
    audit_share: float = setting(Num(0.0, 1.0))
    alpha: float = setting(Num(0.0, 1.0, lo_open=True, hi_open=True))
    max_error: float = setting(Num(0.0, 1.0, lo_open=True, hi_open=True))
    halt_on: str = setting(Choice(("failure", "success", "both")))
    base: tuple[float, float] = setting(
        ListOf(Num(0.5, 1e9, lo_open=True)), cast=tuple
    )  # the label-free pair
    min_halt_step: int = setting(Int(1, 1_000_000))
    # None: a model never saved (no content hash), which only an in-memory pass may use
    model_content_hash: str | None = setting(HEX64, None, optional=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(self.base) != 2:
            raise SettingError(
                "PassSettings", "base", f"{len(self.base)} thresholds, expected [tau_s, tau_f]"
            )

    def to_file(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "base": list(self.base)}


def check_record(run_id: Any, raw: Any, settings: PassSettings, where: str) -> dict[str, Any]:
    """A run's record as validated (``FinishedRun.to_file``), or a ValueError naming ``where.<field>``: the one
    place a record is checked, for what the file says and for what ``finish``/``grade`` are about to write."""
    if not isinstance(run_id, str) or not run_id or len(run_id) > MAX_RUN_ID:
        raise ValueError(f"{where}: the run id is not a string of 1 to {MAX_RUN_ID} characters")
    r = FinishedRun.from_mapping(raw, lambda k, why: ValueError(f"{where}.{k}: {why}"))
    aud = audited(settings.seed, run_id, settings.audit_share)
    if r.audited != aud:
        raise ValueError(
            f"{where}.audited: {r.audited} in the file, but the audit sample (seed {settings.seed}, "
            f"share {settings.audit_share:g}) says {aud}"
        )
    if r.audited and r.halted:
        raise ValueError(f"{where}.halted: an audited run is never halted")
    if not r.audited and (r.probs, r.profile, r.outcome) != (None, None, None):
        raise ValueError(f"{where}: probs, profile and outcome belong to audited runs only")
    if (r.outcome is None) != (r.graded_seq is None) or (r.outcome is None) != (
        r.finished_at_grade is None
    ):
        raise ValueError(f"{where}: outcome, graded_seq and finished_at_grade go together")
    return r.to_file()


def _short(run_id: Any) -> str:
    r = repr(run_id)
    return r if len(r) <= 80 else f"{r[:77]}..."


def _probs_key(probs: list[list[float] | None] | None) -> tuple[Any, ...]:
    return tuple(None if pp is None else (pp[0], pp[1]) for pp in probs or ())


class Certifier:
    """The thresholds the graded audit records certify (``pass_certify.certify_counts``), re-derived from the
    records at every read.  A record's error counts are computed once per content (a re-graded record is new)."""

    def __init__(self, settings: PassSettings):
        self.settings = settings
        self.taus = candidate_taus(settings.base)
        self._counts: dict[tuple[Any, ...], dict[tuple[int, float], tuple[int, int]]] = {}

    def graded(self, records: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
        """The records that certify: audited, graded, with probabilities; in the order they were graded."""
        out = [
            (rid, r)
            for rid, r in records.items()
            if r.get("audited") and r.get("outcome") is not None and r.get("probs") is not None
        ]
        return sorted(out, key=lambda x: (x[1]["graded_seq"], x[0]))

    def _errors(self, rid: str, r: dict[str, Any]) -> dict[tuple[int, float], tuple[int, int]]:
        key = (rid, r["outcome"], _probs_key(r["probs"]))
        got = self._counts.get(key)
        if got is None:
            s = self.settings
            got = run_errors(r["probs"], r["outcome"], s.base, s.min_halt_step, self.taus)
            if len(self._counts) > 100_000:  # stale keys of re-graded records: start over
                self._counts.clear()
            self._counts[key] = got
        return got

    def _pair(
        self, counts: dict[tuple[int, float], tuple[int, int]], n: int, cautious_only: bool
    ) -> list[float]:
        s = self.settings
        cert = certify_counts(counts, n, s.base, s.alpha, s.max_error)
        ts, tf = cert["pair"]
        pair = list(halting_pair(ts, tf, s.halt_on))
        if cautious_only:  # a record was left out: nothing may make the pass bolder than label-free
            pair = [max(p, b) for p, b in zip(pair, halting_pair(*s.base, s.halt_on))]
        return pair

    def _running(
        self, graded: Iterable[tuple[str, dict[str, Any]]]
    ) -> Iterable[tuple[dict[tuple[int, float], tuple[int, int]], int]]:
        counts: dict[tuple[int, float], tuple[int, int]] = {}
        for n, (rid, r) in enumerate(graded, start=1):
            for k, (e, m) in self._errors(rid, r).items():
                e0, m0 = counts.get(k, (0, 0))
                counts[k] = (e0 + e, m0 + m)
            yield counts, n

    def certified(
        self, records: dict[str, dict[str, Any]], cautious_only: bool
    ) -> tuple[list[float], ShiftTest]:
        """The pair certified by every graded audit record (label-free with none) and the shift test
        (``model.shift_test``) over the same records in grading order, each audited run judged by the halt it
        would have had at the pair in force when it was graded. Once the test fires, the side it fired on is off
        for the rest of the pass: "over" (wrong success halts) turns success halts off, "under" failure halts."""
        s = self.settings
        pair = list(halting_pair(*s.base, s.halt_on))
        test = ShiftTest()
        graded = self.graded(records)
        for (counts, n), (_, r) in zip(self._running(graded), graded):
            test.update(would_halt(r["probs"], pair[0], pair[1], s.min_halt_step), r["outcome"])
            pair = self._pair(counts, n, cautious_only)
        if test.rejected is not None:
            pair[0 if test.rejected == "over" else 1] = NEVER
        return pair, test

    def thresholds(self, records: dict[str, dict[str, Any]], cautious_only: bool) -> list[float]:
        """The pair in force (``certified``)."""
        return self.certified(records, cautious_only)[0]

    def history(
        self, records: dict[str, dict[str, Any]], cautious_only: bool
    ) -> list[dict[str, Any]]:
        """The pair after each graded run, in grading order (derived, like the pair itself)."""
        graded = self.graded(records)
        return [
            {
                "n_finished": int(r["finished_at_grade"]),
                "n_audited_graded": n,
                "thresholds": self._pair(counts, n, cautious_only),
            }
            for (counts, n), (_, r) in zip(self._running(graded), graded)
        ]


@dataclass
class Loaded:
    """A state as read: its valid records, the bad ones as written (left out), what was said about it."""

    records: dict[str, dict[str, Any]]
    bad: dict[str, Any]
    status: str
    cold: bool
    warnings: list[str] = dataclasses.field(default_factory=list)


def _canonical(doc: dict[str, Any]) -> bytes:
    return json.dumps(
        doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


class StateFile:
    """The file of one pass: its path resolved once (every worker locks and writes the same real file, even one
    given a link to it), read and written as the module doc says."""

    def __init__(
        self,
        path: str | Path,
        settings: PassSettings,
        key: bytes | None,
        max_bytes: int | None = None,
    ):
        self.path = Path(path).expanduser().resolve()
        self.settings, self.key, self.max_bytes = settings, key, max_bytes

    def _refuse(self, field: str, reason: str) -> PassStateError:
        return PassStateError(str(self.path), field, reason)

    def cold(self, why: str, warn: bool) -> Loaded:
        status = f"{why}: cold start (label-free thresholds)"
        return Loaded({}, {}, status, True, [status] if warn else [])

    def read(self) -> Loaded:
        """The state; cold (and said so) when missing, unparsable or of another version; refused
        (``PassStateError``) when it is not a regular file, is over the bound, repeats a key, is bound to
        another model or settings, or does not match the key."""
        try:
            data = read_regular(self.path, self.max_bytes)
        except FileNotFoundError:
            return self.cold(f"no pass state at {self.path}", warn=False)
        except IngestError as e:
            raise self._refuse("<file>", e.reason) from None
        try:
            doc = loads_strict(data.decode("utf-8"))
        except UnicodeDecodeError as e:
            return self.cold(f"pass state {self.path} unreadable (not UTF-8: {e.reason})", True)
        except StrictJSONError as e:
            if e.key == "<json>" and e.reason.startswith("invalid JSON"):
                return self.cold(f"pass state {self.path} unreadable ({e.reason})", True)
            raise self._refuse(e.key, e.reason) from None
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            return self.cold(f"pass state {self.path} unreadable (not an {FORMAT} file)", True)
        if doc.get("version") != VERSION:
            why = f"version {doc.get('version')!r}, this earlyeval reads {VERSION}"
            return self.cold(f"pass state {self.path} unreadable ({why})", True)
        return self._checked(doc)

    def _checked(self, doc: dict[str, Any]) -> Loaded:
        unknown = sorted(set(doc) - set(STATE_KEYS))
        if unknown:
            raise self._refuse(unknown[0], f"not a field of a version-{VERSION} pass state")
        self._check_signature(doc)
        self._check_settings(doc.get("pass"))
        finished = doc.get("finished")
        if not isinstance(finished, dict) or len(finished) > MAX_RUNS:
            return self.cold(f"pass state {self.path} unreadable (field 'finished')", True)
        out = Loaded({}, {}, "resumed", False)
        for rid, raw in finished.items():
            try:
                out.records[rid] = check_record(
                    rid, raw, self.settings, f"finished.{_short(rid)[1:-1]}"
                )
            except ValueError as e:
                out.bad[rid] = raw
                out.warnings.append(
                    f"pass state {self.path}: run {_short(rid)} left out ({e}); while it is there "
                    "the thresholds are never bolder than label-free"
                )
        return out

    def _check_settings(self, given: Any) -> None:
        ours = self.settings.to_file()
        if not isinstance(given, dict):
            raise self._refuse("pass", "missing: the state names no model and no settings")
        # the model first: a state of another model is refused as that, whatever else differs
        for k, v in sorted(ours.items(), key=lambda kv: kv[0] != "model_content_hash"):
            if given.get(k) != v:
                raise self._refuse(
                    f"pass.{k}",
                    f"{given.get(k)!r} in the file, {v!r} in this pass: the state was written by a pass on "
                    "another model or with other settings; give this pass another state file",
                )
        extra = sorted(set(given) - set(ours))
        if extra:
            raise self._refuse(f"pass.{extra[0]}", "not a setting of a pass")

    def _check_signature(self, doc: dict[str, Any]) -> None:
        sig = doc.get("signature")
        if self.key is None:
            return
        if sig is None:
            raise self._refuse(
                "signature",
                "missing, and a signing key is set (EARLYEVAL_MODEL_KEY): an unsigned state is not resumed",
            )
        body = {k: v for k, v in doc.items() if k != "signature"}
        mac = signature.mac_of(self.key, _DOMAIN, _canonical(body))
        if not isinstance(sig, dict) or not signature.macs_match(mac, sig.get("mac")):
            raise self._refuse(
                "signature",
                "does not match this key: the state was edited after it was written, or signed "
                "with another key",
            )

    def write(
        self, loaded: Loaded, thresholds: list[float], shift: dict[str, Any] | None = None
    ) -> None:
        """The state as strict JSON, atomically (``core.atomic.write_bytes``), signed when there is a key."""
        doc: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "pass": self.settings.to_file(),
            "finished": {**loaded.bad, **loaded.records},
            "thresholds": [float(x) for x in thresholds],  # derived, for people: never read back
        }
        if shift is not None:  # derived too (Certifier.certified), for people: never read back
            doc["shift_test"] = shift
        if self.key is not None:
            doc["signature"] = {
                "algorithm": "HMAC-SHA256",
                "mac": signature.mac_of(self.key, _DOMAIN, _canonical(doc)),
            }
        write_bytes(self.path, dumps_strict(doc))


def finite_or_none(x: Any) -> float | None:
    """A probability or a cost as the state holds it: a finite float, else None (unknown, never NaN)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def clean_probs(probs: Any) -> list[list[float] | None] | None:
    """Per-prefix (p_s, p_f) as the state holds them: a pair of finite floats, else None (could not halt)."""
    if probs is None:
        return None
    out: list[list[float] | None] = []
    for pp in probs:
        vals = [finite_or_none(x) for x in pp] if pp is not None and len(pp) == 2 else []
        out.append(
            [v for v in vals if v is not None] if len(vals) == 2 and None not in vals else None
        )
    return out


__all__ = [
    "Certifier",
    "FinishedRun",
    "Loaded",
    "PassSettings",
    "StateFile",
    "check_record",
    "clean_probs",
    "finite_or_none",
]

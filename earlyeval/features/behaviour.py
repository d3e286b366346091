"""Behavioural features: reference-free, the family that must carry across agents.

Shares, recencies and flags read off the run itself, O(1) per step, and no token counts or costs. Why:
docs/architecture.md, "Feature families".
"""

from __future__ import annotations

import math
from collections import Counter, deque
from typing import ClassVar

import numpy as np

from earlyeval.core.trajectory import KINDS, Step
from earlyeval.features.base import RunContext, StatelessFamily
from earlyeval.features.signals import (
    edit_targets,
    has_not_found,
    has_syntax_error,
    has_traceback,
    is_reproduction,
    is_revert,
    last_error_line,
    parse_test_summary,
    step_kinds,
)

NAN = float("nan")
_RECENT = 5


def _log(x: float | None) -> float:
    return NAN if x is None else math.log1p(max(x, 0.0))


class BehaviourState:
    __slots__ = (
        "t",
        "kinds",
        "recent",
        "last_kind",
        "act_chars",
        "obs_chars",
        "thought_chars",
        "last_obs",
        "last_act",
        "first_edit",
        "last_edit",
        "first_test",
        "last_test",
        "repro_created",
        "repro_last_run",
        "n_summaries",
        "last_summary",
        "last_summary_at",
        "passed_after_edit",
        "err_known",
        "err_true",
        "recent_err",
        "n_traceback",
        "last_traceback",
        "n_syntax",
        "last_syntax",
        "n_not_found",
        "files_edited",
        "max_file_edits",
        "edit_actions",
        "reverts",
        "prev_action",
        "repeat_run",
        "max_repeat",
        "action_counts",
        "n_dup",
        "prev_err_line",
        "err_repeat_run",
        "max_err_repeat",
        "n_empty",
        "n_submit",
        "submit_no_edit",
        "submit_no_test",
    )

    def __init__(self) -> None:
        self.t = 0
        self.kinds = Counter()
        self.recent: deque[str] = deque(maxlen=_RECENT)
        self.last_kind = ""
        self.act_chars = self.obs_chars = self.thought_chars = 0
        self.last_obs = self.last_act = 0
        self.first_edit = self.last_edit = self.first_test = self.last_test = -1
        self.repro_created = self.repro_last_run = -1
        self.n_summaries = 0
        self.last_summary = None
        self.last_summary_at = -1
        self.passed_after_edit = 0
        self.err_known = self.err_true = 0
        self.recent_err: deque[int] = deque(maxlen=_RECENT)
        self.n_traceback = 0
        self.last_traceback = -1
        self.n_syntax = 0
        self.last_syntax = -1
        self.n_not_found = 0
        self.files_edited: Counter = Counter()
        self.max_file_edits = 0  # max(files_edited.values()), kept as it grows (O(1) per step)
        self.edit_actions = self.reverts = 0
        self.prev_action = None
        self.repeat_run = self.max_repeat = 0
        self.action_counts: Counter = Counter()
        self.n_dup = 0
        self.prev_err_line = ""
        self.err_repeat_run = self.max_err_repeat = 0
        self.n_empty = self.n_submit = self.submit_no_edit = self.submit_no_test = 0


def _since(now: int, at: int) -> float:
    return NAN if at < 0 else float(now - at)


def _count_edits(s: BehaviourState, step: Step, t: int) -> None:
    """An edit step (step ``t``): when edits happened, each edit action, the files it edits, a reproduction it writes."""
    if s.first_edit < 0:
        s.first_edit = t
    s.last_edit = t
    for a in step.actions or []:
        if a.kind != "edit":
            continue
        s.edit_actions += 1
        if is_revert(a.text):
            s.reverts += 1
        for f in edit_targets(a.text):
            s.files_edited[f] += 1
            if s.files_edited[f] > s.max_file_edits:
                s.max_file_edits = s.files_edited[f]
        if s.repro_created < 0 and is_reproduction(a.text):
            s.repro_created = t


def _count_errors(s: BehaviourState, step: Step, obs: str, t: int) -> None:
    """The step's error flag and what its observation says went wrong (traceback, syntax error, not found)."""
    if step.error is not None:
        s.err_known += 1
        s.err_true += int(step.error)
        s.recent_err.append(int(step.error))
    if has_traceback(obs):
        s.n_traceback += 1
        s.last_traceback = t
    if has_syntax_error(obs):
        s.n_syntax += 1
        s.last_syntax = t
    if has_not_found(obs):
        s.n_not_found += 1


def _count_repeats(s: BehaviourState, act: str, obs: str) -> None:
    """Empty, repeated and duplicate actions, and the same error line again: signs of a run going round in circles."""
    key = act.strip()
    if not key:
        s.n_empty += 1
    if key and key == s.prev_action:
        s.repeat_run += 1
    else:
        s.repeat_run = 0
    s.max_repeat = max(s.max_repeat, s.repeat_run)
    if key:
        if s.action_counts[key] > 0:
            s.n_dup += 1
        s.action_counts[key] += 1
    s.prev_action = key
    el = last_error_line(obs)
    if el and el == s.prev_err_line:
        s.err_repeat_run += 1
    else:
        s.err_repeat_run = 0
    s.max_err_repeat = max(s.max_err_repeat, s.err_repeat_run)
    s.prev_err_line = el


class BehaviourFamily(StatelessFamily):
    name: ClassVar[str] = "behaviour"

    _names: ClassVar[list[str]] = (
        [
            "step",
            "log_step",
            "log_action_chars",
            "log_obs_chars",
            "log_thought_chars",
            "log_obs_chars_last",
            "log_action_chars_last",
            "obs_chars_last_rel",
        ]
        + [f"share_{k}" for k in KINDS]
        + [f"recent_share_{k}" for k in KINDS]
        + [f"last_is_{k}" for k in KINDS]
        + [
            "n_edit",
            "n_test",
            "has_edit",
            "has_test",
            "first_edit_rel",
            "since_last_edit",
            "since_last_test",
            "since_first_test",
            "has_repro",
            "since_repro_created",
            "repro_ran_after_edit",
            "n_test_summaries",
            "last_test_passed",
            "last_test_fail_log",
            "last_test_pass_ratio",
            "test_after_last_edit",
            "test_after_edit_passed",
            "ever_passed_after_edit",
            "since_test_summary",
            "share_error_steps",
            "last_error",
            "recent_error_share",
            "share_traceback",
            "since_traceback",
            "last_traceback",
            "n_syntax_error",
            "since_syntax_error",
            "share_not_found",
            "files_edited",
            "edit_actions",
            "reverts",
            "edits_per_file",
            "max_edits_same_file",
            "repeat_action_run",
            "max_repeat_action_run",
            "share_duplicate_actions",
            "repeat_error_run",
            "max_repeat_error_run",
            "share_empty_actions",
            "n_submit",
            "submitted_without_edit",
            "submitted_without_test",
        ]
    )

    def start(self, ctx: RunContext) -> BehaviourState:
        return BehaviourState()

    def update(self, s: BehaviourState, step: Step) -> None:
        t = s.t  # index of this step within the run
        s.t += 1
        kind, kinds_here = step_kinds(step)
        s.kinds[kind] += 1
        s.recent.append(kind)
        s.last_kind = kind
        act, obs = step.action or "", step.observation or ""
        s.act_chars += len(act)
        s.obs_chars += len(obs)
        s.thought_chars += len(step.thought or "")
        s.last_obs, s.last_act = len(obs), len(act)

        if "edit" in kinds_here:
            _count_edits(s, step, t)
        if "test" in kinds_here:
            if s.first_test < 0:
                s.first_test = t
            s.last_test = t
            if s.repro_created >= 0 and is_reproduction(act):
                s.repro_last_run = t
        summ = parse_test_summary(obs) if ("test" in kinds_here or kind == "other") else None
        if summ is not None:
            s.n_summaries += 1
            s.last_summary = summ
            s.last_summary_at = t
            if s.last_edit >= 0 and summ.ok:
                s.passed_after_edit = 1

        _count_errors(s, step, obs, t)
        _count_repeats(s, act, obs)

        if kind == "submit":
            s.n_submit += 1
            if s.first_edit < 0:
                s.submit_no_edit = 1
            if s.first_test < 0:
                s.submit_no_test = 1

    def values(self, s: BehaviourState) -> np.ndarray:
        t = max(s.t, 1)
        now = s.t - 1
        recent_n = max(len(s.recent), 1)
        rc = Counter(s.recent)
        summ = s.last_summary
        test_after_edit = float(s.last_summary_at >= 0 and s.last_summary_at >= s.last_edit >= 0)
        if s.last_edit >= 0 and s.last_summary_at >= s.last_edit and summ is not None:
            after_edit_passed = float(summ.ok)
        else:
            after_edit_passed = NAN
        v = [
            float(s.t),
            math.log1p(s.t),
            _log(s.act_chars),
            _log(s.obs_chars),
            _log(s.thought_chars),
            _log(s.last_obs),
            _log(s.last_act),
            s.last_obs / (s.obs_chars / t) if s.obs_chars > 0 else NAN,
        ]
        v += [s.kinds[k] / t for k in KINDS]
        v += [rc[k] / recent_n for k in KINDS]
        v += [float(s.last_kind == k) for k in KINDS]
        v += [
            float(s.kinds["edit"]),
            float(s.kinds["test"]),
            float(s.first_edit >= 0),
            float(s.first_test >= 0),
            s.first_edit / t if s.first_edit >= 0 else NAN,
            _since(now, s.last_edit),
            _since(now, s.last_test),
            _since(now, s.first_test),
            float(s.repro_created >= 0),
            _since(now, s.repro_created),
            float(s.repro_last_run >= 0 and s.repro_last_run > s.last_edit >= 0),
            float(s.n_summaries),
            float(summ.ok) if summ else NAN,
            _log(summ.failed) if summ else NAN,
            (summ.passed / summ.total if summ.total else NAN) if summ else NAN,
            test_after_edit,
            after_edit_passed,
            float(s.passed_after_edit),
            _since(now, s.last_summary_at),
            s.err_true / s.err_known if s.err_known else NAN,
            float(s.recent_err[-1]) if s.recent_err else NAN,
            sum(s.recent_err) / len(s.recent_err) if s.recent_err else NAN,
            s.n_traceback / t,
            _since(now, s.last_traceback),
            float(s.last_traceback == now),
            float(s.n_syntax),
            _since(now, s.last_syntax),
            s.n_not_found / t,
            float(len(s.files_edited)),
            float(s.edit_actions),
            float(s.reverts),
            s.edit_actions / len(s.files_edited) if s.files_edited else NAN,
            float(s.max_file_edits) if s.files_edited else 0.0,
            float(s.repeat_run),
            float(s.max_repeat),
            s.n_dup / t,
            float(s.err_repeat_run),
            float(s.max_err_repeat),
            s.n_empty / t,
            float(s.n_submit),
            float(s.submit_no_edit),
            float(s.submit_no_test),
        ]
        return np.asarray(v, dtype=np.float64)

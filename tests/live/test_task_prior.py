"""A task skip says so, is off unless the model's policy allows it, and a run of no actions is never halted as a
success.

A halt at step 1, or before any action of the agent, is decided by the task alone: a task skip, which a model
trained with ``task_skips`` allows (the Decision's ``halt_rule`` is then "task prior", and its reason says so) and
the default policy refuses; later halts say "outcome rule".
"""

from __future__ import annotations

import pytest
from _monitor_helpers import constant_model

from earlyeval.core.trajectory import Action, make_step
from earlyeval.integrations.base import EarlyStopper
from earlyeval.live import reasons
from earlyeval.live.monitor import Monitor
from earlyeval.model.policy import OUTCOME_RULE, TASK_PRIOR, halt_rule

PATCH = "diff --git a/mod.py b/mod.py\n+a = 2\n"


ANY = {"success_evidence": "test-any-action"}  # any action is evidence (test-only rule)


@pytest.fixture(scope="module")
def sure_success(tmp_path_factory):
    """P(success) = 0.8 at every step; success halts from step 1 (failure never), task skips allowed."""
    return constant_model(
        tmp_path_factory.mktemp("m") / "m",
        0.8,
        {"success": 0.6, "failure": 2.0, "min_halt_step": 1, "task_skips": True, **ANY},
    )


@pytest.fixture(scope="module")
def sure_success_default(tmp_path_factory):
    """The same, under the default policy: task skips off."""
    return constant_model(
        tmp_path_factory.mktemp("md") / "m",
        0.8,
        {"success": 0.6, "failure": 2.0, "min_halt_step": 1, **ANY},
    )


@pytest.fixture(scope="module")
def sure_success_from_2(tmp_path_factory):
    return constant_model(
        tmp_path_factory.mktemp("m2") / "m",
        0.8,
        {"success": 0.6, "failure": 2.0, "min_halt_step": 2, "task_skips": True, **ANY},
    )


def test_the_default_policy_refuses_a_task_skip_and_says_why(sure_success_default):
    mon = Monitor.load(sure_success_default, halt_on="both")
    mon.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r1")
    d = mon.observe(_acted(0))
    assert not d.halt and reasons.TASK_SKIP_OFF in d.reason
    d = mon.observe(_acted(1))  # t = 2, after an action: the run's own prefix may halt
    assert d.halt and d.outcome == "success" and d.halt_rule == OUTCOME_RULE


def _acted(k: int):
    return make_step(k, [Action("bash", "cat mod.py")], observation="a = 1")


def _empty(k: int):
    return make_step(
        k, [], thought="hmm", observation="Expected exactly 1 action, found 0.", error=True
    )


def test_halt_rule_names_the_basis():
    assert halt_rule(1, 1) == TASK_PRIOR and halt_rule(5, 0) == TASK_PRIOR
    assert halt_rule(2, 1) == OUTCOME_RULE and halt_rule(3, 2, budget=True) == "budget rule"


def test_a_halt_at_step_1_says_task_prior(sure_success):
    mon = Monitor.load(sure_success, halt_on="both")
    mon.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r1")
    d = mon.observe(_acted(0))
    assert d.halt and d.outcome == "success" and d.halt_rule == TASK_PRIOR
    assert (
        "(task prior: no action of the agent read yet)" in d.reason
        and "outcome rule" not in d.reason
    )
    later = mon.observe(_acted(1))  # sticky: the halt keeps its basis
    assert later.halt and later.halt_rule == TASK_PRIOR and TASK_PRIOR in later.reason


def test_a_halt_before_any_action_says_task_prior_and_one_after_says_outcome_rule(
    sure_success_from_2, tmp_path
):
    # a failure halt before any action of the agent (task skips on): the task decided
    sure_failure = constant_model(
        tmp_path / "f",
        0.2,
        {"success": 2.0, "failure": 0.6, "min_halt_step": 2, "task_skips": True},
    )
    mon = Monitor.load(sure_failure, halt_on="both")
    mon.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r0")
    ds = [mon.observe(_empty(0)), mon.observe(_empty(1))]
    assert not ds[0].halt and ds[1].halt and ds[1].halt_rule == TASK_PRIOR
    # a success halt needs the run's evidence, never there before an action
    mon = Monitor.load(sure_success_from_2, halt_on="both")
    mon.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r1")
    ds = [mon.observe(_empty(0)), mon.observe(_empty(1))]
    assert not ds[1].halt and "no evidence of the run's own" in ds[1].reason
    mon.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r2")
    ds = [mon.observe(_empty(0)), mon.observe(_acted(1))]
    assert ds[1].halt and ds[1].halt_rule == OUTCOME_RULE and "(outcome rule)" in ds[1].reason
    assert ds[0].halt_rule == ""  # no halt, no basis


def test_a_run_of_no_actions_is_never_halted_as_a_success_in_a_live_loop(sure_success):
    """With a candidate patch (a live loop), empty steps never give a success halt, whatever P(success);
    the first step with an action may (the success gate then still asks for the patch)."""
    mon = Monitor.load(sure_success, halt_on="both")
    mon.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r1")
    out = [mon.observe(_empty(k), candidate=lambda: PATCH) for k in range(4)]
    assert not any(d.halt for d in out)
    # no action read: no evidence of the run's own (the task alone cannot stand for its work)
    assert all(
        d.reason.startswith("continue (success predicted, not halted: no evidence of the run's own")
        for d in out
    )
    d = mon.observe(_acted(4), candidate=lambda: PATCH)
    assert d.halt and d.outcome == "success" and d.halt_rule == OUTCOME_RULE


def test_the_early_stopper_holds_a_no_action_success_halt_of_a_monitor_without_candidate(
    sure_success,
):
    """A monitor whose observe takes no candidate= is gated in the EarlyStopper the same way; its message says
    the basis."""
    mon = Monitor.load(sure_success, halt_on="both")

    class NoCandidate:  # a minimal StepMonitor: observe(step) only
        halt_on = "both"

        def start(self, task=None, run_id=None):
            mon.start(task, run_id)

        def observe(self, step):
            return mon.observe(step)

    es = EarlyStopper(NoCandidate())
    es.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r1")
    for k in range(3):
        assert not es.observe(_empty(k), candidate=lambda: PATCH).halt
    assert es.halted is None
    es.observe(_acted(3), candidate=lambda: PATCH)
    assert es.halted is not None and es.halted.outcome == "success"
    es.start({"task_id": "repo__repo-1", "prompt": "fix"}, "r2")
    es.observe(_acted(0), candidate=lambda: PATCH)
    assert es.halted is not None and "task prior" in es.halted.message()

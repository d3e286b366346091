"""Pass-relative features (issue 28 item 2): their values, the cold start, and no run read before it finished."""

from __future__ import annotations

import json
import math

import _paths  # noqa: F401
import numpy as np
import pytest
from _monitor_helpers import make_runs, make_tasks, train_bundle

from earlyeval.core.trajectory import Action, make_step
from earlyeval.evaluation.pass_refs import reference_sets, training_references
from earlyeval.features import Featurizer, RunContext
from earlyeval.features.passref import (
    MIN_REFERENCE,
    PassFamily,
    PassReference,
    RunProfile,
    profile_of,
)
from earlyeval.live.benchpass import Pass, audited, pass_order, run_on_workers
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import save_model_dir


def _ref(steps, first_edit, tests):
    return PassReference.of(RunProfile(s, e, k) for s, e, k in zip(steps, first_edit, tests))


def _run(kinds: list[str]):
    acts = {
        "edit": Action("str_replace_editor", "create src/a.py", "edit"),
        "test": Action("bash", "python -m pytest", "test"),
        "read": Action("bash", "cat src/a.py", "read"),
    }
    return [make_step(i, [acts[k]], observation="ok") for i, k in enumerate(kinds)]


def test_the_values_read_the_step_against_the_reference_runs():
    ref = _ref([2, 4, 6, 8, 10], [0, 1, 3, None, 5], [0, 2, 3, 0, 5])
    fam = PassFamily()
    s = fam.start(RunContext(pass_reference=ref))
    for st in _run(["read", "read", "edit", "test", "test"]):
        fam.update(s, st)
    v = dict(zip(fam.names, fam.values(s)))
    assert v["pass_still_running"] == pytest.approx(3 / 5)  # 6, 8 and 10 steps are longer than 5
    assert v["pass_step_over_median"] == pytest.approx(5 / 6)
    # first edits at 0, 1, 3 are within 5 steps
    assert v["pass_edited_by_now"] == pytest.approx(3 / 5)
    # this run edited at 2: 3, never and 5 are later
    assert v["pass_edit_earlier_than"] == pytest.approx(3 / 5)
    # test rates 0, 0, .5, .5, .5 against this run's 2 / 5: two are below
    assert v["pass_test_rate_pct"] == pytest.approx(2 / 5)
    assert v["pass_reference_runs"] == 5
    # the steps a live monitor scores: all but the last (the submitting turn, which no loop scores)
    assert profile_of(
        type("T", (), {"steps": _run(["read", "edit", "test", "test"])})()
    ) == RunProfile(3, 1, 1)


def test_the_cold_start_is_the_missing_value_path():
    few = [RunProfile(5, 1, 1)] * (MIN_REFERENCE - 1)
    assert PassReference.of(few) is None
    fam = PassFamily()
    for ctx in (RunContext(), RunContext(pass_reference=PassReference.of(few))):
        s = fam.start(ctx)
        fam.update(s, _run(["edit"])[0])
        assert np.isnan(fam.values(s)).all()
        assert "pass reference" in fam.check_context(ctx)
    assert fam.check_context(RunContext(pass_reference=_ref([3] * 5, [0] * 5, [0] * 5))) is None


@pytest.mark.parametrize(
    "bad",
    [
        {"steps": -1, "first_edit": None, "tests": 0},
        {"steps": 3, "first_edit": 3, "tests": 0},
        {"steps": 3, "first_edit": None, "tests": "2"},
        {"steps": True, "first_edit": 0, "tests": 0},
    ],
)
def test_a_malformed_profile_is_refused_naming_its_field(bad):
    with pytest.raises(ValueError, match=r"where\."):
        RunProfile.from_dict(bad, "where")


@pytest.mark.parametrize("workers", [1, 4])
def test_a_training_reference_holds_only_audited_runs_finished_before_the_run_started(workers):
    rng = np.random.default_rng(workers)
    ids = [f"r{i:03d}" for i in range(120)]
    steps = [int(x) for x in rng.integers(1, 30, len(ids))]
    refs = reference_sets(ids, steps, seed=2, workers=workers, audit_share=0.3)
    start, finish = {}, {}

    def run(i, k, t0):
        start[i], finish[i] = t0, t0 + steps[i]
        return steps[i]

    run_on_workers(pass_order(ids, 2), workers, run, lambda i: None)
    nonempty = 0
    for i in range(len(ids)):
        want = {
            j
            for j in range(len(ids))
            if j != i and audited(2, ids[j], 0.3) and finish[j] <= start[i]
        }
        assert set(refs[i]) == want, i
        nonempty += bool(want)
    assert nonempty > len(ids) // 2


def test_training_references_are_per_agent_and_do_not_depend_on_the_input_order():
    runs = make_runs(200, seed=4)
    a = training_references(runs, audit_share=0.3)
    b = training_references(runs[::-1], audit_share=0.3)[::-1]
    assert sum(r is not None for r in a) > 50
    for x, y in zip(a, b):
        assert (x is None) == (y is None)
        if x is not None:
            assert np.array_equal(x.steps, y.steps) and x.n == y.n
    # each run's reference is made of its own agent's runs only: an agent's references survive removing the other
    only_a = [t for t in runs if t.agent == "agent-a"]
    ra = training_references(only_a, audit_share=0.3)
    for t, r in zip(only_a, ra):
        x = a[runs.index(t)]
        assert (x is None and r is None) or np.array_equal(x.steps, r.steps)


@pytest.fixture(scope="module")
def pass_model(tmp_path_factory):
    tasks = make_tasks(12)
    bundle, _, _ = train_bundle(make_runs(80, seed=0), tasks, families=("behaviour", "pass"))
    bundle.thresholds = {"success": 1.0, "failure": 1.0, "min_halt_step": 1}
    return save_model_dir(bundle, tmp_path_factory.mktemp("pm") / "m"), tasks


def test_the_live_pass_records_audited_profiles_and_hands_later_runs_their_reference(
    pass_model, tmp_path
):
    model, tasks = pass_model
    runs = make_runs(40, seed=5, agents=("agent-a",))
    p = Pass(Monitor.load(model), tmp_path / "pass.json", audit_share=0.5, seed=1)
    seen = []
    for t in runs:
        m = p.monitor(t.run_id)
        seen.append(m.pass_reference)
        ctx = m.start_context(RunContext.of(t, tasks.get(t.task_id)), t.run_id)
        assert ctx.pass_reference is m.pass_reference
        for s in t.steps[:-1]:  # as every live loop feeds it: the final turn is never scored
            m.observe(s)
        p.finish(t.run_id, steps=len(t.steps))
    fin = json.loads((tmp_path / "pass.json").read_text())["finished"]
    aud = [t for t in runs if p.is_audited(t.run_id)]
    assert len(aud) > MIN_REFERENCE
    for (
        t
    ) in runs:  # a profile for each audited run (by the family's own counting), none for the others
        want = profile_of(t).to_dict() if p.is_audited(t.run_id) else None
        assert fin[t.run_id].get("profile") == want
    k = next(i for i, r in enumerate(seen) if r is not None)
    # defined from the 5th audited run on
    assert sum(p.is_audited(t.run_id) for t in runs[:k]) == MIN_REFERENCE
    assert seen[-1].n == sum(p.is_audited(t.run_id) for t in runs[:-1])


def test_a_bad_profile_in_the_state_file_is_left_out_and_said_so(pass_model, tmp_path):
    model, _ = pass_model
    p = Pass(Monitor.load(model), tmp_path / "pass.json", audit_share=1.0, seed=1)
    for i in range(MIN_REFERENCE + 1):
        p.finish(f"r{i}", steps=4, profile=RunProfile(4, 1, 1))
    st = json.loads((tmp_path / "pass.json").read_text())
    st["finished"]["r0"]["profile"] = {"steps": "four"}
    (tmp_path / "pass.json").write_text(json.dumps(st))
    q = Pass(Monitor.load(model), tmp_path / "pass.json", audit_share=1.0, seed=1)
    ref = q.monitor("new").pass_reference
    assert ref is not None and ref.n == MIN_REFERENCE
    assert any("finished.r0.profile.steps" in w for w in q.summary()["warnings"])


def test_a_monitor_without_a_pass_still_decides_and_says_the_pass_features_are_missing(pass_model):
    model, tasks = pass_model
    t = make_runs(3, seed=9, agents=("agent-a",))[0]
    m = Monitor.load(model)
    m.start_context(RunContext.of(t, tasks.get(t.task_id)), t.run_id)
    d = m.observe(t.steps[0])
    assert d.p_success is not None and not math.isnan(d.p_success)
    assert d.context == "partial-trained" and any("pass reference" in w for w in m.run.warnings)
    names = m.loaded.feature_names
    assert np.isnan(m.run.last_features[[names.index(n) for n in PassFamily().names]]).all()
    assert Featurizer([PassFamily()]).names == PassFamily().names

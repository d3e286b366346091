"""Monitor: streaming == batch, the halting rule of metrics, fail-open, inputs, explanations."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np
import pytest
from _monitor_helpers import both_sides, make_runs, make_tasks, quantile_thresholds, train_bundle

from earlyeval.core.decision import Decision
from earlyeval.core.trajectory import Action, Step, make_step
from earlyeval.features.evidence import prefix_gates
from earlyeval.fitting.metrics import halting
from earlyeval.integrations.base import EarlyStopper, StepMonitor
from earlyeval.live.inputs import as_step
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import save_model_dir
from earlyeval.model.outcome import split_proba


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny 4-family model (text included) trained on synthetic runs, saved and reloaded."""
    tasks = make_tasks(12)
    trajs = make_runs(80, seed=0)
    # text: through BLAS
    bundle, X, ctxs = train_bundle(trajs, tasks, families=("behaviour", "text", "gold", "prior"))
    # by construction
    bundle.thresholds = quantile_thresholds(
        bundle, trajs, tasks, min_halt_step=3, need=(both_sides,)
    )
    d = save_model_dir(bundle, tmp_path_factory.mktemp("model") / "m")
    return {"dir": d, "bundle": bundle, "trajs": trajs, "tasks": tasks, "ctxs": ctxs}


def _stream(mon: Monitor, traj, ctx, n: int | None = None):
    mon.start_context(ctx, traj.run_id)
    rows, ps, pf, ds = [], [], [], []
    for step in traj.steps[: n if n is not None else len(traj.steps)]:
        d = mon.observe(step)
        rows.append(mon.run.last_features.copy())
        ps.append(d.p_success)
        pf.append(d.p_failure)
        ds.append(d)
    return np.asarray(rows), np.asarray(ps), np.asarray(pf), ds


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def test_streaming_features_and_probabilities_equal_batch(trained):
    """On every prefix of every run: the loaded monitor's row == prefix_matrix of the trained featurizer,
    and its probabilities == OutcomeModel.predict_proba of that matrix."""
    mon = Monitor.load(trained["dir"])
    assert mon.loaded.predictor_kind == "c-api"
    fz, model = trained["bundle"].featurizer, trained["bundle"].model
    assert {"behaviour", "text", "gold", "prior"} == set(fz.family_names)
    n_text = 0
    for traj, ctx in zip(trained["trajs"][:40], trained["ctxs"][:40]):
        rows, ps, pf, _ = _stream(mon, traj, ctx)
        X = fz.prefix_matrix([traj], [ctx], max_t=[len(traj.steps)])
        assert _same(rows, X), traj.run_id
        bs, bf = split_proba(model.predict_proba(X))
        np.testing.assert_allclose(ps, bs, rtol=0, atol=1e-12)
        np.testing.assert_allclose(pf, bf, rtol=0, atol=1e-12)
        n_text += int(
            np.abs(X[:, [i for i, n in enumerate(fz.names) if n.startswith("txt_")]]).sum() > 0
        )
    assert n_text > 30  # the text block is really exercised, not all zeros
    assert len(np.unique(np.round(bs, 6))) > 1


def test_halts_exactly_where_metrics_halting_does(trained):
    mon = Monitor.load(trained["dir"])
    th = mon.thresholds
    assert th["min_halt_step"] == 3
    kinds = set()
    for traj, ctx in zip(trained["trajs"], trained["ctxs"]):
        T = len(traj.steps)
        _, ps, pf, ds = _stream(mon, traj, ctx, T - 1)  # prefixes t = 1..T-1, as offline
        gate = prefix_gates(mon.loaded.evidence, traj.steps)  # the offline gates of the same rule
        t_halt, pred = halting(ps, pf, th["success"], th["failure"], th["min_halt_step"], gate)
        first = next((k for k, d in enumerate(ds) if d.halt), None)
        assert (first + 1 if first is not None else 0) == t_halt, traj.run_id
        if t_halt:
            assert t_halt >= 3
            d = ds[first]
            assert d.outcome == ("success" if pred == 1 else "failure")
            kinds.add(d.outcome)
            assert all(x.halt and x.outcome == d.outcome for x in ds[first:])  # sticky
            assert (
                f"{th['success']:g}" in d.reason
                and f"{th['failure']:g}" in d.reason
                and "p_success=" in d.reason
            )
            assert d.step_index == traj.steps[first].index
        assert all(not d.halt for d in ds[: (first if first is not None else len(ds))])
    assert kinds == {"success", "failure"}  # both halting sides happen on this data


def test_no_halt_before_min_halt_step(trained, tmp_path):
    b = trained["bundle"]
    from earlyeval.model.modeldir import ModelBundle

    low = ModelBundle(
        b.featurizer, b.model, {"success": 0.0, "failure": 0.0, "min_halt_step": 4}, b.training
    )
    mon = Monitor(low)
    traj, ctx = trained["trajs"][0], trained["ctxs"][0]
    _, _, _, ds = _stream(mon, traj, ctx, 6)
    assert [d.halt for d in ds] == [False, False, False, True, True, True]
    assert "halting starts at step 4" in ds[0].reason


def test_top_features_only_when_halting_and_signed_toward_outcome(trained):
    mon = Monitor.load(trained["dir"])
    booster = trained["bundle"].model.boosters_["success"]
    seen = 0
    for traj, ctx in zip(trained["trajs"], trained["ctxs"]):
        _, _, _, ds = _stream(mon, traj, ctx)
        first = next((k for k, d in enumerate(ds) if d.halt), None)
        for k, d in enumerate(ds):
            if k != first:
                assert d.top_features == []
        if first is None:
            continue
        d = ds[first]
        mon.start_context(ctx)
        for s in traj.steps[: first + 1]:
            mon.observe(s)
        ref = booster.predict(mon.run.last_features[None, :], pred_contrib=True)[0][:-1]
        sign = 1.0 if d.outcome == "success" else -1.0
        sign *= 1.0 if trained["bundle"].model.platt_["success"].a < 0 else -1.0
        assert d.top_features, traj.run_id
        for name, c in d.top_features:
            j = mon.loaded.feature_names.index(name)
            assert c > 0 and c == pytest.approx(sign * ref[j], abs=1e-12)
        assert d.top_features[0][1] == pytest.approx(max(sign * ref), abs=1e-12)
        seen += 1
    assert seen > 5


def test_failure_booster_path_twin_balanced(tmp_path):
    tasks = make_tasks(12)
    trajs = make_runs(60, seed=3)
    bundle, X, ctxs = train_bundle(trajs, tasks, families=("behaviour", "gold"), twin="balanced")
    mon = Monitor.load(save_model_dir(bundle, tmp_path / "m"))
    assert set(bundle.model.boosters_) == {"success", "failure"}
    rows, ps, pf, _ = _stream(mon, trajs[0], ctxs[0])
    bs, bf = split_proba(bundle.model.predict_proba(rows))
    np.testing.assert_allclose(ps, bs, atol=1e-12, rtol=0)
    np.testing.assert_allclose(pf, bf, atol=1e-12, rtol=0)
    assert np.max(np.abs(pf - (1 - ps))) > 1e-6  # really the second model, not the mirror


def test_fail_open_on_featurizer_error_then_recovers_on_next_run(trained, monkeypatch, caplog):
    mon = Monitor.load(trained["dir"])
    traj, ctx = trained["trajs"][1], trained["ctxs"][1]
    gold = next(f for f in mon.featurizer.families if f.name == "gold")
    real_update = gold.update
    calls = {"n": 0}

    def broken(state, step):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("boom in gold")
        return real_update(state, step)

    monkeypatch.setattr(gold, "update", broken)
    mon.start_context(ctx, "r1")
    with caplog.at_level(logging.WARNING, logger="earlyeval.live.monitor"):
        ds = [mon.observe(s) for s in traj.steps[:5]]
    assert ds[0].p_success is not None and ds[1].p_success is not None
    assert (
        not ds[2].halt
        and ds[2].p_success is None
        and "boom in gold" in ds[2].reason
        and ds[2].reason.startswith("fail-open")
    )
    assert all(not d.halt and d.p_success is None and "disabled" in d.reason for d in ds[3:])
    assert any("boom in gold" in r.getMessage() for r in caplog.records)
    monkeypatch.setattr(gold, "update", real_update)
    rows, ps, _, _ = _stream(mon, traj, ctx)  # a new run starts clean
    X = trained["bundle"].featurizer.prefix_matrix([traj], [ctx], max_t=[len(traj.steps)])
    assert _same(rows, X)


def test_fail_open_on_prediction_error_and_bad_input(trained, monkeypatch):
    mon = Monitor.load(trained["dir"])
    mon.start(task=trained["tasks"]["repo__repo-1"], run_id="x")
    d = mon.observe(12345)  # not a step at all: skipped, flagged, and the run is still monitored
    assert (
        not d.halt
        and d.p_success is None
        and "skipped unreadable step" in d.reason
        and "not int" in d.flags[0]
    )
    d2 = mon.observe(trained["trajs"][0].steps[0])
    assert d2.p_success is not None and mon.run.t == 1 and mon.run.n_skipped == 1
    mon.start(task=trained["tasks"]["repo__repo-1"], run_id="y")

    def bad(x):
        raise ValueError("predictor exploded")

    monkeypatch.setitem(mon.loaded.raw, "success", bad)
    d = mon.observe(trained["trajs"][0].steps[0])
    assert not d.halt and "predictor exploded" in d.reason


def test_observe_without_start_works_and_warns(trained):
    mon = Monitor.load(trained["dir"])
    d = mon.observe(trained["trajs"][0].steps[0])
    assert d.p_success is not None
    assert any("before start" in w for w in mon.run.warnings)


def test_missing_gold_and_prior_warn_and_give_nan(trained, caplog):
    mon = Monitor.load(trained["dir"])
    with caplog.at_level(logging.WARNING, logger="earlyeval.live.monitor"):
        mon.start(task={"task_id": "unknown__task-9", "prompt": "fix it"}, run_id="r")
    assert any("gold patch" in w for w in mon.run.warnings)
    assert any("public-history" in w for w in mon.run.warnings)
    assert any("gold patch" in r.getMessage() for r in caplog.records)
    d = mon.observe(trained["trajs"][0].steps[0])
    names = mon.loaded.feature_names
    gold_idx = [
        i
        for i, n in enumerate(names)
        if n.startswith(
            (
                "gold_",
                "diff_gold",
                "edits_in_gold",
                "f2p_",
                "since_f2p",
                "test_patch",
                "edited_precision",
                "since_first_gold",
                "since_diff",
            )
        )
    ]
    prior_idx = [names.index("prior_solve_rate")]
    assert (
        np.isnan(mon.run.last_features[gold_idx]).all()
        and np.isnan(mon.run.last_features[prior_idx]).all()
    )
    assert d.p_success is not None and "degraded" in d.reason
    with pytest.raises(ValueError, match="gold patch"):
        Monitor.load(trained["dir"], strict=True).start(task={"task_id": "t", "prompt": "p"})
    # a full task: no warning
    mon.start(
        task=trained["tasks"]["repo__repo-2"],
        run_id="ok",
        prompt="compute_2 returns the wrong value",
    )
    assert mon.run.warnings == []


def test_dict_task_and_steps_equal_objects(trained):
    tasks = trained["tasks"]
    t = tasks["repo__repo-3"]
    swe = {
        "instance_id": t.task_id,
        "problem_statement": t.prompt,
        "patch": t.gold_patch,
        "test_patch": t.test_patch,
        "FAIL_TO_PASS": t.fail_to_pass,
        "meta": t.meta,
    }
    steps = [
        make_step(0, [Action("bash", "cat pkg/mod3.py")], observation="def compute_3(x):"),
        make_step(
            1,
            [Action("bash", "python -m pytest tests/test_mod3.py")],
            observation="1 failed in 0.1s",
            error=True,
        ),
    ]
    dicts = [
        {"action": "cat pkg/mod3.py", "observation": "def compute_3(x):"},
        {
            "action": "python -m pytest tests/test_mod3.py",
            "observation": "1 failed in 0.1s",
            "error": True,
        },
    ]
    m1, m2 = Monitor.load(trained["dir"]), Monitor.load(trained["dir"])
    m1.start(task=t, run_id="a")
    m2.start(task=swe, run_id="a")
    for s, d in zip(steps, dicts):
        a, b = m1.observe(s), m2.observe(d)
        assert a.p_success == b.p_success and _same(m1.run.last_features, m2.run.last_features)
    assert as_step(steps[1].to_dict(), 0) == steps[1]  # a serialized Step round-trips


def test_spawned_monitors_follow_interleaved_runs_independently(trained):
    base = Monitor.load(trained["dir"])
    other = base.spawn()
    (t1, c1), (t2, c2) = list(zip(trained["trajs"], trained["ctxs"]))[4:6]
    ref1 = _stream(Monitor.load(trained["dir"]), t1, c1)[1]
    ref2 = _stream(Monitor.load(trained["dir"]), t2, c2)[1]
    base.start_context(c1)
    other.start_context(c2)
    got1, got2 = [], []
    for k in range(max(len(t1.steps), len(t2.steps))):
        if k < len(t1.steps):
            got1.append(base.observe(t1.steps[k]).p_success)
        if k < len(t2.steps):
            got2.append(other.observe(t2.steps[k]).p_success)
    assert got1 == list(ref1) and got2 == list(ref2)


def test_monitor_in_early_stopper_and_protocol(trained):
    mon = Monitor.load(trained["dir"])
    assert isinstance(mon, StepMonitor)
    stopper = EarlyStopper(mon)
    stopper.start(task=trained["tasks"]["repo__repo-0"], run_id="loop")
    d = stopper.after_step(
        action="grep -rn compute_0 pkg/", observation="pkg/mod0.py:10:def compute_0(x):"
    )
    assert isinstance(d, Decision) and d.p_success is not None and d.step_index == 0
    assert stopper.errors == []


def test_booster_fallback_path_is_the_same(trained):
    fast, slow = Monitor.load(trained["dir"]), Monitor.load(trained["dir"], use_c_api=False)
    assert slow.loaded.predictor_kind == "booster"
    traj, ctx = trained["trajs"][7], trained["ctxs"][7]
    assert list(_stream(fast, traj, ctx)[1]) == list(_stream(slow, traj, ctx)[1])


def test_package_import_stays_light():
    code = (
        "import sys, earlyeval; assert 'lightgbm' not in sys.modules and 'sklearn' not in sys.modules, 'heavy import'; "
        "from earlyeval import Monitor; assert Monitor.__name__ == 'Monitor'; print('ok')"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_step_dict_without_index_gets_the_run_position():
    s = as_step({"action": "submit", "tool": "submit"}, 7)
    assert isinstance(s, Step) and s.index == 7 and s.kind == "submit"


def test_task_table_completes_a_task_known_only_by_id(trained):
    """An adapter that knows only the task id and prompt (EarlyStopAgent) still feeds the gold family."""
    full = trained["tasks"]["repo__repo-5"]
    mon = Monitor.load(trained["dir"], tasks=trained["tasks"])
    mon.start(task={"task_id": full.task_id, "prompt": "the prompt the agent saw"}, run_id="r")
    assert (
        mon.run.warnings == []
        and mon.run.ctx.task.gold_patch == full.gold_patch
        and mon.run.ctx.prompt == "the prompt the agent saw"
    )
    bare = Monitor.load(trained["dir"])
    bare.start(task={"task_id": full.task_id, "prompt": "the prompt the agent saw"}, run_id="r")
    assert any("gold patch" in w for w in bare.run.warnings)
    step = trained["trajs"][0].steps[0]
    mon.observe(step)
    bare.observe(step)
    assert not np.isnan(mon.run.last_features[mon.loaded.feature_names.index("gold_n_files")])
    assert np.isnan(bare.run.last_features[bare.loaded.feature_names.index("gold_n_files")])


@pytest.mark.parametrize("halt_on", ["failure", "success", "both"])
def test_halt_on_halts_where_the_rule_does_on_the_halting_pair(trained, halt_on):
    """Monitor(halt_on=...) halts exactly where the rule halts on policy.halting_pair (an off side never halts),
    spawned monitors keep the setting, and every Decision reports it."""
    from earlyeval.model.policy import halting_pair

    mon = Monitor.load(trained["dir"], halt_on=halt_on).spawn()
    assert mon.halt_on == halt_on
    ts, tf = halting_pair(mon.rule.success, mon.rule.failure, halt_on)
    kinds = set()
    for traj, ctx in zip(trained["trajs"], trained["ctxs"]):
        _, ps, pf, ds = _stream(mon, traj, ctx, len(traj.steps) - 1)
        gate = prefix_gates(mon.loaded.evidence, traj.steps)
        t_halt, pred = halting(ps, pf, ts, tf, mon.rule.min_halt_step, gate)
        first = next((k for k, d in enumerate(ds) if d.halt), None)
        assert (first + 1 if first is not None else 0) == t_halt, traj.run_id
        if first is not None:
            kinds.add(ds[first].outcome)
        assert all(d.halt_on == halt_on for d in ds)
    assert kinds == ({"success", "failure"} if halt_on == "both" else {halt_on})


def test_a_due_success_halt_waits_for_a_candidate_patch(trained):
    """observe(step, candidate=f): a predicted success halts only when f() is non-empty; without one the run goes on
    (not sticky) and the reason says why; f is called only when a success halt is due."""
    mon = Monitor.load(trained["dir"], halt_on="both")
    for traj, ctx in zip(trained["trajs"], trained["ctxs"]):
        _, ps, pf, ds = _stream(mon, traj, ctx, len(traj.steps) - 1)
        first = next((k for k, d in enumerate(ds) if d.halt), None)
        if first is not None and ds[first].outcome == "success":
            break
    else:
        pytest.fail("no success halt in the synthetic runs")
    calls = []

    def candidate():
        calls.append(len(calls))
        return "" if len(calls) < 2 else "diff --git a/x b/x\n+fix\n"

    mon.start_context(ctx, traj.run_id)
    out = [mon.observe(s, candidate=candidate) for s in traj.steps[: len(traj.steps) - 1]]
    held = out[first]
    assert not held.halt and held.reason.startswith(
        "continue (success predicted, not halted: no candidate patch yet"
    )
    assert len(calls) >= 1 and calls[0] == 0  # consulted first at the step the success halt was due
    later = next((k for k, d in enumerate(out) if d.halt), None)
    n_held = sum(d.reason.startswith("continue (success predicted, not halted") for d in out)
    assert n_held >= 1 and all(not d.halt for d in out[: later if later is not None else len(out)])
    granted = later is not None and out[later].outcome == "success"
    assert len(calls) == n_held + granted  # called once per due success halt, and only then
    if granted:  # the second call had a patch: the halt came then
        assert calls[-1] == 1 and later > first
    crashed = Monitor.load(trained["dir"], halt_on="both")
    crashed.start_context(ctx, traj.run_id)
    res = [crashed.observe(s, candidate=lambda: 1 / 0) for s in traj.steps[: first + 1]]
    assert (
        not res[first].halt
        and "the candidate patch could not be read (ZeroDivisionError" in res[first].reason
    )


def test_halt_on_is_checked():
    from earlyeval.model.policy import check_halt_on

    with pytest.raises(ValueError, match=r"halt_on: 'never' is not one of failure, success, both"):
        check_halt_on("never")

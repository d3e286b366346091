"""peer_prior: the other training agents' success rate on the task, fold-fitted and leakage-free."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from synth import SMALL_LGBM, loao_baseline, make_dataset, make_trajectories

from earlyeval.app.stages.train import train_bench
from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.trajectory import Action, Trajectory, make_step
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.holdout_groups import inner_sets
from earlyeval.features import Featurizer, RunContext, build_family
from earlyeval.features.peer import PeerPriorFamily
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import load_model_dir

FAMS = ["behaviour", "peer_prior"]
NAMES = ["peer_rate", "peer_agent_rate", "peer_shrunk", "peer_n_runs", "peer_n_agents"]


def run(agent: str, task: str, y: int, i: int = 0) -> Trajectory:
    steps = [make_step(k, [Action("bash", "ls")], observation="x") for k in range(4)]
    return Trajectory(
        run_id=f"{agent}/{task}/{i}",
        agent=agent,
        bench="synth",
        task_id=task,
        steps=steps,
        outcome=y,
    )


def ctx(agent: str, task: str) -> RunContext:
    return RunContext(agent=agent, task_id=task)


@pytest.fixture(scope="module")
def hand():
    # t1: A 1/2 (two trials), B 0/1, C 1/1;  t2: A 1/1 only.  10 runs... base rate p0 = 4/6
    trajs = [
        run("A", "t1", 1, 0),
        run("A", "t1", 0, 1),
        run("B", "t1", 0),
        run("C", "t1", 1),
        run("A", "t2", 1),
        run("B", "t2", 1),
    ]
    fam = PeerPriorFamily(strength=2.0, counts=True).fit(
        trajs, [RunContext.of(t, None) for t in trajs]
    )
    return fam


def test_leave_own_agent_out_by_hand(hand):
    p0 = 4 / 6
    assert hand.table.base_rate == pytest.approx(p0)
    # A on t1: only B (0/1) and C (1/1) count, never A's own two runs
    v = hand.values(hand.start(ctx("A", "t1")))
    np.testing.assert_allclose(v, [1 / 2, (0 + 1) / 2, (1 + 2 * p0) / (2 + 2), 2, 2])
    # B on t1: A 1/2 and C 1/1 -> 2/3 run-weighted, (0.5 + 1)/2 agent-weighted
    v = hand.values(hand.start(ctx("B", "t1")))
    np.testing.assert_allclose(v, [2 / 3, 0.75, (2 + 2 * p0) / (3 + 2), 3, 2])
    # an agent the table never saw (the held-out agent) gets every training agent
    v = hand.values(hand.start(ctx("D", "t1")))
    np.testing.assert_allclose(v, [2 / 4, (0.5 + 0 + 1) / 3, (2 + 2 * p0) / (4 + 2), 4, 3])


def test_unknown_is_missing_not_zero(hand):
    # B on t2: only B's own run exists on t2 besides A's -> A counts; A on t2: only B (1/1)
    np.testing.assert_allclose(hand.values(hand.start(ctx("A", "t2")))[:2], [1.0, 1.0])
    for c in (ctx("C", "t3"), RunContext(agent="A")):  # a task nobody ran; no task id at all
        v = hand.values(hand.start(c))
        assert np.isnan(v[0]) and np.isnan(v[1])
        assert v[2] == pytest.approx(4 / 6) and v[3] == 0 and v[4] == 0
    fam = PeerPriorFamily(counts=True).fit([run("A", "t9", 1)], [ctx("A", "t9")])
    assert np.isnan(fam.values(fam.start(ctx("A", "t9")))[0])  # only the agent itself ran it


def test_state_is_plain_json_and_round_trips(hand):
    meta, arrays = hand.get_state()
    assert arrays == {}
    back = PeerPriorFamily.from_state(json.loads(json.dumps(meta, allow_nan=False)), {})
    for c in (ctx("A", "t1"), ctx("D", "t1"), ctx("C", "t3")):
        a, b = hand.values(hand.start(c)), back.values(back.start(c))
        assert np.array_equal(a, b, equal_nan=True)
    unfit = PeerPriorFamily.from_state(json.loads(json.dumps(PeerPriorFamily().get_state()[0])), {})
    # counts are opt-in, and the choice survives the round trip
    assert unfit.names == NAMES[:3] and back.names == NAMES
    assert np.isnan(unfit.values(unfit.start(ctx("A", "t1")))).all()


# ------------------------------------------------------------------ LOAO


def config(**kw) -> EvalConfig:
    base = dict(
        families=FAMS,
        min_steps=3,
        holdout_min_runs=20,
        lgbm_params=SMALL_LGBM,
        warm_repeats=2,
        n_jobs=1,
        seed=0,
        inner_folds=6,
        peer_params={"counts": True},
    )
    base.update(kw)
    return EvalConfig(**base)


@pytest.fixture(scope="module")
def data():
    # task difficulty shared across agents, so the peer rate carries signal (the positive controls rely on it)
    trajs, tasks = make_trajectories(n_tasks=30, seed=3)
    rng = np.random.default_rng(5)
    easy = {tid: bool(rng.random() < 0.5) for tid in tasks}
    for t in trajs:
        t.outcome = int(rng.random() < (0.8 if easy[t.task_id] else 0.15))
    return trajs, tasks


@pytest.fixture(scope="module")
def baseline(data):
    return loao_baseline(config(), *data)


def _flip(trajs, agents):
    out = copy.deepcopy(trajs)
    for t in out:
        if t.agent in agents:
            t.outcome = 1 - t.outcome
    return out


def _cols(names):
    return [names.index(n) for n in NAMES]


def test_held_out_labels_never_reach_its_features_or_predictions(data, baseline):
    trajs, tasks = data
    ds1, cfg, res1 = baseline
    ds2 = make_dataset(cfg.families, trajs=_flip(trajs, {"agent-a"}), tasks=tasks)
    res2 = run_loao(ds2, cfg)
    ex = frozenset(["agent-a"])
    f1, f2 = res1.runner.fit(ex), res2.runner.fit(ex)
    runs = np.flatnonzero(res1.runner.run_agent == "agent-a")
    rows = res1.runner.rows_of(runs, 2)
    X1, n1 = res1.runner.features(f1, runs, rows)
    X2, _ = res2.runner.features(f2, runs, rows)
    assert np.array_equal(X1, X2, equal_nan=True)
    assert not np.isnan(X1[:, _cols(n1)[0]]).all()  # the held-out agent does get a peer rate
    for p, q in zip(res1.sets["agent-a"].p_s, res2.sets["agent-a"].p_s):
        np.testing.assert_array_equal(p, q)
    assert res1.thresholds["agent-a"] == res2.thresholds["agent-a"]
    for fitted_ex, fitted in res1.runner._fits.items():  # no fit's table holds an agent it left out
        peer = next(f for f in fitted.fold_families if f.name == "peer_prior")
        held_in_table = {a for by in peer.table.counts.values() for a in by}
        assert not (held_in_table & fitted_ex)
    # positive control: agent-a's labels do reach the other agents' folds
    assert any(
        not np.array_equal(p, q) for p, q in zip(res1.sets["agent-b"].p_s, res2.sets["agent-b"].p_s)
    )


def test_training_rows_leave_their_own_agent_out(data, baseline):
    """Training rows of agent-b (fold without agent-a) are computed from agent-c and agent-d only."""
    trajs, _ = data
    ds, cfg, res = baseline
    runner = res.runner
    fitted = runner.fit(frozenset(["agent-a"]))
    names = fitted.feature_names
    X, _ = runner.features(
        fitted, np.asarray(sorted(set(runner.prefix_run[fitted.train_rows]))), fitted.train_rows
    )
    prow = runner.prefix_run[fitted.train_rows]
    checked = 0
    for r in np.unique(prow):
        t = trajs[r]
        if t.agent != "agent-b":
            continue
        peers = [
            u.outcome for u in trajs if u.task_id == t.task_id and u.agent in ("agent-c", "agent-d")
        ]
        got = X[prow == r][:, _cols(names)]
        assert np.all(got[:, 0] == np.float32(np.mean(peers))) and np.all(
            got[:, 3] == len(peers)
        ), t.run_id
        checked += 1
    assert checked > 10


def test_own_labels_do_not_move_own_training_features(data, baseline):
    trajs, tasks = data
    _, cfg, res1 = baseline
    ds2 = make_dataset(cfg.families, trajs=_flip(trajs, {"agent-b"}), tasks=tasks)
    r2 = FoldRunner(ds2, cfg)
    ex = frozenset(["agent-a"])
    f1, f2 = res1.runner.fit(ex), r2.fit(ex)
    assert np.array_equal(f1.train_rows, f2.train_rows)
    X1, names = res1.runner.features(
        f1, np.asarray(sorted(set(res1.runner.prefix_run[f1.train_rows]))), f1.train_rows
    )
    X2, _ = r2.features(f2, np.asarray(sorted(set(r2.prefix_run[f2.train_rows]))), f2.train_rows)
    agent = res1.runner.run_agent[res1.runner.prefix_run[f1.train_rows]]
    c = _cols(names)
    own = agent == "agent-b"
    direct = [c[0], c[1], c[3], c[4]]  # rate, agent rate, counts: nothing of agent-b's own labels
    assert np.array_equal(X1[own][:, direct], X2[own][:, direct], equal_nan=True)
    # the shrunk value is one function of (k, n) for every row of the fold: its only trace of agent-b is
    # the fold's base rate p0, one constant shared by all rows, so it cannot tell a row its own label
    for X, f in ((X1, f1), (X2, f2)):
        fam = next(q for q in f.fold_families if q.name == "peer_prior")
        k = np.nan_to_num(X[:, c[0]].astype(np.float64)) * X[:, c[3]]
        expect = (k + fam.strength * fam.table.base_rate) / (X[:, c[3]] + fam.strength)
        np.testing.assert_allclose(X[:, c[2]], expect, rtol=1e-6)
    # the others do see agent-b
    assert not np.array_equal(X1[~own][:, direct], X2[~own][:, direct], equal_nan=True)


def test_inner_threshold_folds_refit_without_the_inner_agent(data, baseline):
    trajs, tasks = data
    ds, cfg, res1 = baseline
    large = ds.large_agents(cfg.holdout_min_runs)
    sets1, method = inner_sets(res1.runner, frozenset(["agent-a"]), large)
    assert method.startswith("inner-loao") and set(sets1) == {"agent-b", "agent-c", "agent-d"}
    # flipping inner agent agent-c's labels leaves its inner predictions unchanged: its fold never saw them
    r2 = FoldRunner(make_dataset(cfg.families, trajs=_flip(trajs, {"agent-c"}), tasks=tasks), cfg)
    sets2, _ = inner_sets(r2, frozenset(["agent-a"]), large)
    for p, q in zip(sets1["agent-c"].p_s, sets2["agent-c"].p_s):
        np.testing.assert_array_equal(p, q)
    assert any(not np.array_equal(p, q) for p, q in zip(sets1["agent-b"].p_s, sets2["agent-b"].p_s))
    peer = next(
        f
        for f in res1.runner.fit(frozenset(["agent-a", "agent-c"])).fold_families
        if f.name == "peer_prior"
    )
    assert {a for by in peer.table.counts.values() for a in by} == {"agent-b", "agent-d"}


def test_fast_batch_path_equals_the_streaming_loop(data, baseline):
    ds, cfg, res = baseline
    fam = res.runner.fit(frozenset(["agent-a"])).fold_families[0]
    runs = np.arange(len(ds.trajs))
    fast = res.runner._fold_block(fam, runs)
    slow = Featurizer([fam]).prefix_matrix(
        [ds.trajs[i] for i in runs], [ds.contexts[i] for i in runs]
    )
    assert fast.shape == slow.shape and np.array_equal(fast, slow, equal_nan=True)


# ------------------------------------------------------------ shipped model


def test_shipped_model_streams_like_batch(data, tmp_path):
    trajs, tasks = data
    # the tau2 catalog's setting
    cfg = config(monotone={"peer_rate": 1, "peer_agent_rate": 1, "peer_shrunk": 1})
    ds = make_dataset(cfg.families, trajs=trajs, tasks=tasks)
    out = train_bench("synth", tmp_path / "m", cfg, ds=ds, budget=False)["model"]
    files = {p.name for p in out.iterdir()}
    assert "family_peer_prior.json" in files and not any(
        f.endswith((".pkl", ".pickle")) or "peer_prior.npz" in f for f in files
    )
    table = json.loads((out / "family_peer_prior.json").read_text())["counts"]
    assert {a for by in table.values() for a in by} == set(ds.agents)
    bundle = load_model_dir(out)
    mon = Monitor.load(out, budget=False)
    assert "peer_prior" in mon.featurizer.family_names
    for traj, c in list(zip(ds.trajs, ds.contexts))[::7]:
        X = bundle.featurizer.prefix_matrix([traj], [c], max_t=[len(traj.steps)])
        # the live path: task id comes from the Task
        mon.start(task=tasks[traj.task_id], agent=traj.agent)
        rows, ps = [], []
        for s in traj.steps:
            d = mon.observe(s)
            rows.append(mon.run.last_features.copy())
            ps.append(d.p_success)
        assert np.array_equal(np.asarray(rows), X, equal_nan=True), traj.run_id
        np.testing.assert_allclose(ps, bundle.model.predict_success(X), rtol=0, atol=1e-12)
        # and the shipped peer values leave the run's own agent out
        v = X[0, _cols(bundle.featurizer.names)]
        peers = [u.outcome for u in trajs if u.task_id == traj.task_id and u.agent != traj.agent]
        assert v[0] == np.float32(np.mean(peers))


def test_tau2_catalog_ships_peer_prior_as_measured():
    """The tau2 settings the README numbers were measured with: rates only, constrained to raise P(success)."""
    from earlyeval.evaluation.settings import eval_config

    cfg = eval_config("tau2")
    assert cfg.families == ["behaviour", "peer_prior"]
    assert cfg.peer_params == {"counts": False, "strength": 4.0}
    assert cfg.monotone == {"peer_rate": 1, "peer_agent_rate": 1, "peer_shrunk": 1}
    assert build_family("peer_prior", peer_params=cfg.peer_params).names == NAMES[:3]
    # one training agent per fold: all-missing
    assert "peer_prior" not in eval_config("toolathlon").families

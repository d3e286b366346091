"""Oracle tests of the Monitor on real runs of every ingested format (``pytest -m integration``).

(a) streaming == batch: real runs of each format are ingested with
    ``ingest_catalog`` on a bounded sample (3 files per run); a small model
    with every family the benchmark supports (text included, fitted with the
    evaluation's TokenCache) is trained on them and saved; the Monitor loaded
    from that directory must give, on every prefix of every run, the feature
    row of ``Featurizer.prefix_matrix`` and the probabilities of
    ``OutcomeModel.predict_proba``.  The shipped ``models/swebench`` is checked
    the same way when it exists.  The pass features too: a ``Pass`` handing
    references to the Monitors of runs played in the order training simulates
    (``evaluation.pass_refs``) gives the training rows on every prefix.
(b) replay == offline: ``earlyeval score`` on a real run folder gives the
    metrics of ``metrics.evaluate_policy`` on the same model's batch predictions.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from _monitor_helpers import HEADLINE, LIGHT, offline_policy

import earlyeval.ingest as ingest_mod
from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import models_dir
from earlyeval.evaluation.pass_refs import training_references
from earlyeval.features import Featurizer, RunContext, build_family
from earlyeval.features.context import context_absent_counts
from earlyeval.features.passref import PassFamily
from earlyeval.features.prior import PriorTable
from earlyeval.features.text import TokenCache
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.fitting.metrics import apply_policy
from earlyeval.live.benchpass import Pass, pass_order, run_on_workers
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import ModelBundle, save_model_dir
from earlyeval.model.outcome import split_proba
from earlyeval.tables.prefixes import prefix_table
from earlyeval.tables.tasks import load_tasks
from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_options import ScoreOptions

pytestmark = pytest.mark.integration

FILES_PER_RUN = 3
MAX_PER_RUN = 8  # tau2 files hold many simulations each
TAU2_RUNS = 6
EXPECTED_FORMATS = {
    "mini-swe-agent-v1",
    "openhands-completions",
    "openhands-events",
    "swe-agent-traj",
    "coder-traj",
    "moatless-transitions",
    "moatless-steps",
    "tau2",
    "toolathlon",
    "terminalbench-log",
}


def _require_data():
    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")


def _bounded(bench: str, runs: list[str] | None = None):
    """ingest_catalog on the first FILES_PER_RUN files of each run (labels are read in full, as always)."""
    cat = load_catalog(bench)
    real = ingest_mod.discover
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(
            ingest_mod, "discover", lambda run_dir, spec: real(run_dir, spec)[:FILES_PER_RUN]
        )
        trajs, reports = ingest_mod.ingest_catalog(cat, show_progress=False, runs=runs)
    by_run = Counter()
    kept = []
    for t in trajs:
        if by_run[t.meta["run"]] < MAX_PER_RUN and t.outcome is not None and len(t.steps) >= 2:
            by_run[t.meta["run"]] += 1
            kept.append(t)
    fmt = {r.name: r.format for r in cat.runs}
    return cat, kept, fmt


def _train(trajs, contexts, families, prior_table=None, cache=None):
    fams = [
        build_family(
            f,
            prior_table=prior_table,
            text_params={
                "dims": {
                    b: 8
                    for b in (
                        "prompt",
                        "actions",
                        "action_last",
                        "observations",
                        "observation_last",
                    )
                },
                "min_df": 1,
                "min_agents": 1,
                "cache": cache,
            },
        )
        for f in families
    ]
    fz = Featurizer(fams).fit(trajs, contexts)
    X = fz.prefix_matrix(trajs, contexts)
    pf = prefix_table(trajs, min_steps=2)
    model = OutcomeModel(lgbm_params={**LIGHT, "min_child_samples": 3}, n_jobs=1, val_share=0.4)
    model.fit(
        X,
        pf["y"].to_numpy(),
        sample_weight=pf["weight"].to_numpy(),
        groups=pf["task_id"].to_numpy(),
        feature_names=fz.names,
    )
    # what train_bench records: which training runs lacked a family's inputs (monitor.context_state)
    return ModelBundle(
        fz,
        model,
        {"success": 0.7, "failure": 0.7, "min_halt_step": 1},
        training={
            "benchmarks": [],
            "context_runs": len(trajs),
            "context_absent_runs": context_absent_counts(fz, contexts),
        },
    )


def _check_stream_equals_batch(
    mon: Monitor, fz: Featurizer, model: OutcomeModel, trajs, contexts
) -> int:
    n = 0
    for t, c in zip(trajs, contexts):
        mon.start_context(c, t.run_id)
        rows, ps = [], []
        for s in t.steps:
            d = mon.observe(s)
            assert d.p_success is not None, (t.run_id, d.reason)
            rows.append(mon.run.last_features.copy())
            ps.append(d.p_success)
        X = fz.prefix_matrix([t], [c], max_t=[len(t.steps)])
        rows = np.asarray(rows)
        assert rows.shape == X.shape and np.array_equal(rows, X, equal_nan=True), t.run_id
        bs, bf = split_proba(model.predict_proba(X))
        np.testing.assert_allclose(ps, bs, rtol=0, atol=1e-9, err_msg=t.run_id)
        n += len(t.steps)
    return n


@pytest.fixture(scope="module")
def swebench_sample():
    _require_data()
    cat, trajs, fmt = _bounded("swebench")
    tasks = load_tasks(cat, data_root())
    table = PriorTable.load(data_root() / cat.priors["path"])
    ctxs = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    return {"cat": cat, "trajs": trajs, "fmt": fmt, "tasks": tasks, "table": table, "ctxs": ctxs}


@pytest.fixture(scope="module")
def chat_sample():
    _require_data()
    trajs, fmt = [], {}
    tau2 = load_catalog("tau2")
    for bench, runs in (
        ("tau2", [r.name for r in tau2.runs[:TAU2_RUNS]]),
        ("toolathlon", None),
        ("terminalbench", None),
    ):
        _, ts, f = _bounded(bench, runs)
        trajs += ts
        fmt.update(f)
    return {"trajs": trajs, "fmt": fmt, "ctxs": [RunContext.of(t, None) for t in trajs]}


def test_every_format_is_in_the_sample(swebench_sample, chat_sample):
    seen = Counter(swebench_sample["fmt"][t.meta["run"]] for t in swebench_sample["trajs"])
    seen += Counter(chat_sample["fmt"][t.meta["run"]] for t in chat_sample["trajs"])
    assert EXPECTED_FORMATS <= set(seen), EXPECTED_FORMATS - set(seen)


def test_stream_equals_batch_swebench_all_families(swebench_sample, tmp_path):
    s = swebench_sample
    cache = TokenCache(1500)
    bundle = _train(
        s["trajs"], s["ctxs"], ["behaviour", "text", "gold", "prior"], s["table"], cache
    )
    mon = Monitor.load(save_model_dir(bundle, tmp_path / "m"))
    # the monitor tokenizes; the batch reference used the cache
    assert mon.featurizer.families[1].cache is None
    n = _check_stream_equals_batch(mon, bundle.featurizer, bundle.model, s["trajs"], s["ctxs"])
    assert n > 300


def test_stream_equals_batch_chat_formats_with_text(chat_sample, tmp_path):
    s = chat_sample
    cache = TokenCache(1500)
    bundle = _train(s["trajs"], s["ctxs"], ["behaviour", "text"], cache=cache)
    mon = Monitor.load(save_model_dir(bundle, tmp_path / "m"))
    n = _check_stream_equals_batch(mon, bundle.featurizer, bundle.model, s["trajs"], s["ctxs"])
    assert n > 200


def test_stream_equals_batch_shipped_model(swebench_sample):
    mdir = models_dir("swebench")
    if not (mdir / "manifest.json").exists():
        pytest.skip("no shipped model: run `earlyeval train --bench swebench`")
    mon = Monitor.load(mdir)
    b = mon.bundle
    n = _check_stream_equals_batch(
        mon, b.featurizer, b.model, swebench_sample["trajs"], swebench_sample["ctxs"]
    )
    assert n > 300


def _replay_vs_offline(model_dir: Path, runs: Path, fmt: str, out: Path, tasks=None):
    # as_of="run": each run's prior as of its own catalog date, as the offline (as_of) evaluation computes it
    rep = json.loads(
        score_runs(
            model_dir, runs, ScoreOptions(fmt, out=out, as_of="run"), tasks=tasks, progress=False
        )["score"].read_text()
    )
    mon = Monitor.load(model_dir)
    from earlyeval.workflows.score import read_runs, run_specs

    trajs = [t for t in read_runs(run_specs(runs, fmt))[0] if t.outcome is not None]
    th = mon.thresholds
    rs, off = offline_policy(mon.bundle, trajs, tasks if tasks is not None else {}, th)
    assert rep["policy_consistent"] and rep["n_scored"] == len(trajs)
    blocks = list(rep["agents"].values())
    assert len(blocks) == 1
    for k in HEADLINE:
        assert (blocks[0][k] is None and off[k] is None) or blocks[0][k] == pytest.approx(
            off[k], abs=1e-9
        ), k
    t_halt, _ = apply_policy(rs, th["success"], th["failure"], th["min_halt_step"])
    by = {r["run_id"]: r for r in rep["per_run"]}
    assert [by[r]["halt_t"] or 0 for r in rs.run_ids] == list(t_halt)
    return rep


def test_replay_equals_offline_real_swebench_run(swebench_sample, tmp_path):
    mdir = models_dir("swebench")
    if not (mdir / "manifest.json").exists():
        s = swebench_sample
        mdir = save_model_dir(
            _train(s["trajs"], s["ctxs"], ["behaviour", "gold", "prior"], s["table"]),
            tmp_path / "m",
        )
    spec = swebench_sample["cat"].run("lite__swe-agent__gpt4")
    rep = _replay_vs_offline(
        mdir,
        data_root() / spec.folder,
        spec.format,
        tmp_path / "out",
        tasks=swebench_sample["tasks"],
    )
    assert rep["n_trajectories"] >= 200 and rep["runs"][0]["from_catalog"] == "swebench"


def test_replay_equals_offline_real_tau2_file(chat_sample, tmp_path):
    s = chat_sample
    bundle = _train(s["trajs"], s["ctxs"], ["behaviour", "text"])
    mdir = save_model_dir(bundle, tmp_path / "m")
    spec = load_catalog("tau2").runs[TAU2_RUNS]  # a file the model was not trained on
    rep = _replay_vs_offline(mdir, data_root() / spec.folder / spec.glob, "tau2", tmp_path / "out")
    assert rep["n_scored"] >= 10


# (c) the pass features, train == serve (issue 28 item 2): the sample's runs (8 per agent) as one pass of one agent
PASS_SEED, PASS_WORKERS, PASS_SHARE = 3, 2, 0.5


def test_live_pass_features_equal_the_training_ones_on_real_runs(swebench_sample, tmp_path):
    s = swebench_sample
    trajs = [dataclasses.replace(t, agent="one-pass") for t in s["trajs"]]
    refs = training_references(trajs, seed=PASS_SEED, workers=PASS_WORKERS, audit_share=PASS_SHARE)
    ctxs = [dataclasses.replace(c, pass_reference=r) for c, r in zip(s["ctxs"], refs)]
    assert sum(r is not None for r in refs) >= 10, (
        "the sample gives too few references: the check would be vacuous"
    )
    bundle = _train(trajs, ctxs, ["behaviour", "gold", "prior", "pass"], s["table"])
    # nothing halts: the offline schedule
    bundle.thresholds = {
        "success": 1.0,
        "failure": 1.0,
        "min_halt_step": 1,
    }
    base = Monitor.load(save_model_dir(bundle, tmp_path / "m"))
    cols = [base.loaded.feature_names.index(n) for n in PassFamily().names]
    by_agent = defaultdict(list)
    for i, t in enumerate(trajs):
        by_agent[t.agent].append(i)
    checked = with_ref = 0
    for agent, idx in by_agent.items():
        p = Pass(
            base,
            tmp_path / f"{len(by_agent)}-{checked}.json",
            audit_share=PASS_SHARE,
            seed=PASS_SEED,
        )
        ids = [trajs[i].run_id for i in idx]
        live: dict[int, tuple[np.ndarray, list[float]]] = {}

        def run(j: int, k: int, start: int) -> int:
            i = idx[j]
            m = p.monitor(ids[j])
            # the context without a reference: the pass adds its own
            m.start_context(s["ctxs"][i], ids[j])
            rows, ps = [], []
            for st in trajs[i].steps[
                :-1
            ]:  # as every live loop: the final, submitting turn is never scored
                d = m.observe(st)
                assert not d.halt
                rows.append(m.run.last_features.copy())
                ps.append(d.p_success)
            live[i] = (np.asarray(rows), ps)
            return len(trajs[i].steps)

        def deliver(j: int) -> None:
            p.finish(ids[j], steps=len(trajs[idx[j]].steps))

        run_on_workers(pass_order(ids, PASS_SEED), PASS_WORKERS, run, deliver)
        for i in idx:
            X = bundle.featurizer.prefix_matrix([trajs[i]], [ctxs[i]], max_t=[len(trajs[i].steps)])[
                : len(trajs[i].steps) - 1
            ]
            rows, ps = live[i]
            assert rows.shape == X.shape and np.array_equal(rows, X, equal_nan=True), trajs[
                i
            ].run_id
            np.testing.assert_allclose(
                ps, split_proba(bundle.model.predict_proba(X))[0], rtol=0, atol=1e-9
            )
            checked += 1
            with_ref += not np.isnan(X[:, cols]).all()
    assert checked == len(trajs) and with_ref >= 10

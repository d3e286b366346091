"""Oracle tests of the live budget on real runs (``pytest -m integration``).

(a) The shipped ``models/swebench`` (``earlyeval train --bench swebench``; where it is absent, as in CI,
    a model trained the same way, ``train_bench``, on a bounded sample of the real runs): on every prefix of two real
    runs of every SWE-bench agent (every format), ``Monitor.observe(...).budget`` equals
    ``evaluation.budget_shipped.predict_prefixes`` (the budget package's batch code on ``Dataset`` blocks): the boosters' feature
    rows bit for bit, intervals and probabilities to 1e-9; dimensions whose usage is unknown are None.
(b) Real tau2 runs (unmetered greeting turn, zero counters): the streaming spend (``SpendTracker``)
    equals ``dim_targets`` on every prefix of every run whose usage is known.
"""

from __future__ import annotations

import numpy as np
import pytest
from synth import SMALL_LGBM

from earlyeval.app.stages.train import train_bench
from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import models_dir
from earlyeval.evaluation.budget_shipped import predict_prefixes
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.evaluation.settings import eval_config
from earlyeval.fitting.budget_targets import dim_targets, free_opening_agents
from earlyeval.ingest import ingest_catalog
from earlyeval.live.monitor import Monitor
from earlyeval.model.spend import DIMENSIONS, SpendTracker
from earlyeval.tables.store import bench_dir, read_tasks, read_trajectories
from earlyeval.tables.tasks import load_tasks

pytestmark = pytest.mark.integration


SAMPLE_FILES = (
    30  # per run folder, where nothing is ingested yet (CI): a bounded, evenly spread sample
)


def _ingested(bench: str):
    """(trajectories, tasks): the ingested parquet when it exists, else a bounded ingest of the shared data."""
    p = bench_dir(bench) / "trajectories.parquet"
    if p.exists():
        return read_trajectories(p), read_tasks(bench_dir(bench) / "tasks.parquet")
    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")
    cat = load_catalog(bench)
    trajs, reports = ingest_catalog(cat, data_root(), show_progress=False, max_files=SAMPLE_FILES)
    assert all(not r.skipped for r in reports if bench == "swebench")
    return trajs, load_tasks(cat, data_root())


def _runs(bench: str, per_agent: int, max_steps: int):
    all_trajs, tasks = _ingested(bench)
    trajs = [t for t in all_trajs if t.outcome is not None and 2 <= len(t.steps) <= max_steps]
    by: dict[str, list] = {}
    for t in trajs:
        if len(by.setdefault(t.agent, [])) < per_agent:
            by[t.agent].append(t)
    return [t for ts in by.values() for t in ts], tasks


@pytest.fixture(scope="module")
def swebench_budget_model(tmp_path_factory):
    """The shipped model dir with its budget part, or one trained by ``train_bench`` on a bounded sample."""
    mdir = models_dir("swebench")
    if (mdir / "extra_budget.json").exists():
        return mdir
    trajs, tasks = _ingested("swebench")
    cfg = eval_config(
        "swebench", lgbm_params=SMALL_LGBM, holdout_min_runs=25, n_jobs=2, warm_repeats=1
    )
    ds = load_dataset("swebench", cfg.families, trajs=trajs, tasks=tasks, progress=False)
    out = tmp_path_factory.mktemp("model") / "swebench"
    train_bench("swebench", out, cfg, ds=ds, budget=True)
    assert (out / "extra_budget.json").exists(), (
        "train_bench wrote no budget estimators on the sample"
    )
    return out


def test_shipped_swebench_budget_live_equals_batch(swebench_budget_model):
    mon = Monitor.load(swebench_budget_model, budget=True)
    assert mon.loaded.budget_model is not None, mon.loaded.budget_status
    sample, tasks = _runs("swebench", 2, 60)
    fams = mon.bundle.training["config"]["families"]
    ds = load_dataset("swebench", fams, trajs=sample, tasks=tasks, progress=False)
    X = mon.featurizer.prefix_matrix(ds.trajs, ds.contexts)
    ps = mon.bundle.model.predict_success(X)
    spec = mon.bundle.extra["budget"]
    ref = predict_prefixes(spec, ds, ps, fams)
    prow = ds.prefixes["run"].to_numpy()
    n_cmp, seen_none = 0, set()
    for r, (traj, ctx) in enumerate(zip(ds.trajs, ds.contexts)):
        mon.start_context(ctx, traj.run_id)
        rows = np.flatnonzero(prow == r)
        for k, step in enumerate(traj.steps[:-1]):
            d = mon.observe(step)
            row = rows[k]
            for dim, res in ref.items():
                live = d.budget[dim]
                if np.isnan(res["p_feasible"][row]):
                    if (
                        any(getattr(s, dim) is None for s in traj.steps[: k + 1])
                        if dim != "steps"
                        else False
                    ):
                        assert live is None, (traj.run_id, k, dim)
                        seen_none.add(dim)
                    continue
                assert live is not None, (traj.run_id, k, dim)
                row_live = mon.loaded.budget_model.design_row(
                    mon.run.spend, mon.run.last_features, dim
                )
                assert np.array_equal(row_live, res["X"][row], equal_nan=True), (
                    traj.run_id,
                    k,
                    dim,
                )
                for lv in ("0.8", "0.9"):
                    assert live["remaining"][lv]["low"] == pytest.approx(
                        res[f"lo_{lv}"][row], rel=1e-9, abs=1e-12
                    )
                    assert live["remaining"][lv]["high"] == pytest.approx(
                        res[f"hi_{lv}"][row], rel=1e-9, abs=1e-12
                    )
                    assert live["remaining"][lv]["median"] == pytest.approx(
                        res["median"][row], rel=1e-9, abs=1e-12
                    )
                assert live["spent"] == res["spent"][row]
                assert live["p_within_budget"] == pytest.approx(
                    res["p_within_budget"][row], abs=1e-9
                )
                assert live["p_feasible"] == pytest.approx(res["p_feasible"][row], abs=1e-9)
                n_cmp += 1
    assert n_cmp > 300
    assert {
        "output_tokens",
        "cost_usd",
    } <= seen_none  # agents without token/cost logs: None, never 0


def test_tau2_streaming_spend_equals_batch_targets():
    sample, tasks = _runs("tau2", 3, 200)
    ds = load_dataset("tau2", ["behaviour"], trajs=sample, tasks=tasks, progress=False)
    free = free_opening_agents(ds, BudgetConfig().free_opening_formats)
    assert free, "tau2 runs are of a free-opening format"
    prow = ds.prefixes["run"].to_numpy()
    n = 0
    for d in DIMENSIONS:
        tg = dim_targets(ds, d, free)
        for r, traj in enumerate(ds.trajs):
            if not tg.run_known[r]:
                continue
            st = SpendTracker((d,), free_opening=True)
            rows = np.flatnonzero(prow == r)
            for k, step in enumerate(traj.steps[:-1]):
                st.update(step)
                row = rows[k]
                counted = (
                    d == "steps"
                    or np.any(tg.usage[r][: k + 1] > 0)
                    or not any(getattr(s, d) is not None for s in traj.steps[: k + 1])
                )
                # known iff the batch knows the run, except while a known counter has only said 0 so far
                assert st.known(0) == bool(counted), (traj.run_id, d, k)
                if st.known(0):
                    assert st.spent(0) == tg.spent[row] and st.last(0) == tg.last[row]
                    n += 1
    assert n > 500

"""The pipeline on a LocalCluster of 2 worker processes against the same pipeline in this process, on a bounded
sample of the real SWE-bench runs: ingest, features, train, ``evaluate --no-ablations``; and a worker killed
in the middle of an ingest.

What must hold (docs/scale.md): the same ingest report and trajectories; bitwise-equal features; an equal
``loao.json`` (the folds are tasks running the in-process code: tolerance zero); the shipped model's
thresholds equal and its booster within ``scale.train.TOLERANCE``; a killed worker's chunk is read again
and every part is whole and there once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import threading
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GroupShuffleSplit

pytest.importorskip("distributed")

from distributed import Client, Future, LocalCluster
from synth import SMALL_LGBM

from earlyeval.app.stages.evaluate import evaluate_bench
from earlyeval.app.stages.ingest import ingest_bench
from earlyeval.app.stages.train import train_bench
from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import set_workspace
from earlyeval.evaluation.dataset import Dataset, load_dataset
from earlyeval.evaluation.settings import eval_config
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.ingest import ingest_catalog
from earlyeval.model.modeldir import load_model_dir
from earlyeval.scale.backend import DaskBackend
from earlyeval.scale.ingest import ingest_parts
from earlyeval.scale.train import (
    SAMPLE_TOLERANCE,
    TOLERANCE,
    DaskOutcomeModel,
    booster_gap,
    within_tolerance,
)
from earlyeval.tables.store import part_names, read_trajectories
from earlyeval.workflows.backend import InProcess

pytestmark = pytest.mark.integration

MAX_FILES = (
    36  # per run, as the in-process pipeline test: 6 agents held out alone, 3 in the small group
)
MODES = ("in-process", "cluster")


@pytest.fixture(scope="module")
def cluster():
    with (
        LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0"
        ) as lc,
        Client(lc) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def runs(cluster, tmp_path_factory):
    """Both pipelines, each in its own workspace: {mode: (workspace, dataset, loao report, runner misses)}."""
    root = data_root()
    if not (root / "swebench").exists():
        pytest.skip(f"no shared data at {root}")
    cfg = eval_config("swebench", holdout_min_runs=30, lgbm_params=SMALL_LGBM, warm_repeats=1)
    shipped = eval_config("swebench", holdout_min_runs=30)  # train: the shipped LightGBM settings
    out, probes = {}, {}
    try:
        for mode in MODES:
            ws = tmp_path_factory.mktemp(mode.replace("-", ""))
            set_workspace(ws)
            back = InProcess() if mode == "in-process" else DaskBackend(cluster)
            ingest_bench("swebench", root, progress=False, backend=back, max_files=MAX_FILES)
            ds = back.dataset("swebench", cfg.families, root)
            probe = MatrixProbe(len(ds.prefixes))
            with probe.watching(mode == "cluster"):
                # with the budget estimators
                train_bench("swebench", None, shipped, root, ds=ds, backend=back)
            probe.driver_read = getattr(ds.blocks, "loaded", True)
            probes[mode] = probe
            rep, _ = evaluate_bench("swebench", cfg, root, ablations=[], ds=ds, backend=back)
            misses = [r.misses for r in getattr(back, "fold_runners", [])]
            out[mode] = (ws, ds, rep, misses)
    finally:
        set_workspace(None)
    out["probes"] = probes
    return out


class MatrixProbe:
    """What the driver sends to and gets from the cluster during ``train``: every object it scatters, every
    argument it submits, every result it gathers or reads off a future. A hit is a feature matrix among them
    (a 2-D array of at least 2 columns and 10 % of the prefix rows, or a dataset with its blocks read)."""

    def __init__(self, n_rows: int):
        self.n_rows, self.seen, self.hits, self.driver_read = n_rows, 0, [], None

    def check(self, obj, where: str, depth: int = 0) -> None:
        if depth == 0:
            self.seen += 1
        if depth > 6 or obj is None or isinstance(obj, (str, bytes, int, float)):
            return
        if isinstance(obj, np.ndarray):
            if obj.ndim == 2 and obj.shape[1] >= 2 and obj.shape[0] >= 0.1 * self.n_rows:
                self.hits.append((where, obj.shape))
        elif isinstance(obj, Dataset):
            if getattr(obj.blocks, "loaded", True):
                self.hits.append((where, "a Dataset with its feature blocks"))
        elif isinstance(obj, pd.DataFrame):
            self.check(obj.select_dtypes("number").to_numpy(), where, depth + 1)
        elif isinstance(obj, dict):
            for v in obj.values():
                self.check(v, where, depth + 1)
        elif isinstance(obj, (list, tuple, set, frozenset)):
            for v in obj:
                self.check(v, where, depth + 1)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            for f in dataclasses.fields(obj):
                self.check(getattr(obj, f.name, None), where, depth + 1)

    @contextlib.contextmanager
    def watching(self, on: bool = True):
        if not on:
            yield self
            return
        probe = self
        scatter, submit, gather, result = (
            Client.scatter,
            Client.submit,
            Client.gather,
            Future.result,
        )

        def scatter_(self, data, *a, **k):
            probe.check(data, "scatter")
            return scatter(self, data, *a, **k)

        def submit_(self, fn, *a, **k):
            probe.check((a, k), f"submit {getattr(fn, '__name__', fn)}")
            return submit(self, fn, *a, **k)

        def gather_(self, futures, *a, **k):
            out = gather(self, futures, *a, **k)
            probe.check(out, "gather")
            return out

        def result_(self, *a, **k):
            out = result(self, *a, **k)
            probe.check(out, "result")
            return out

        with pytest.MonkeyPatch.context() as mp:
            for cls, name, fn in (
                (Client, "scatter", scatter_),
                (Client, "submit", submit_),
                (Client, "gather", gather_),
                (Future, "result", result_),
            ):
                mp.setattr(cls, name, fn)
            yield self


def test_the_driver_never_holds_the_prefix_matrix_in_train(runs):
    """``train --scheduler local:2``: no scattered object, submitted argument, gathered or task result is a
    feature matrix (MatrixProbe), and the driver's dataset never read its blocks (the tasks read the parts)."""
    probe = runs["probes"]["cluster"]
    # the inner folds' results, the margins, the predictions, the booster
    assert probe.seen > 20, probe.seen
    assert probe.hits == [], probe.hits[:5]
    assert probe.driver_read is False
    assert (
        runs["cluster"][0] / "models/swebench/extra_budget.json"
    ).is_file()  # the budget fit too, by a task
    # in this process, the matrix is the driver's own
    assert runs["probes"]["in-process"].driver_read is True


def test_the_ingest_is_the_same(runs):
    (wa, *_), (wb, *_) = runs["in-process"], runs["cluster"]
    ja = json.loads((wa / "reports/swebench/ingest.json").read_text())
    jb = json.loads((wb / "reports/swebench/ingest.json").read_text())
    assert ja == jb and ja["totals"]["trajectories"] > 250
    a, b = wa / "data/swebench/trajectories.parquet", wb / "data/swebench/trajectories.parquet"
    assert a.is_file() and b.is_dir() and len(part_names(b)) >= 9
    assert read_trajectories(a) == read_trajectories(b)
    assert (wa / "data/swebench/ingest.done").read_text() == (
        wb / "data/swebench/ingest.done"
    ).read_text()


def test_the_features_are_bitwise_equal(runs):
    da, db = runs["in-process"][1], runs["cluster"][1]
    assert list(da.blocks) == list(db.blocks) and da.block_names == db.block_names
    for k in da.blocks:
        assert da.blocks[k].shape == db.blocks[k].shape
        assert np.array_equal(da.blocks[k].view(np.uint32), db.blocks[k].view(np.uint32)), k
    assert da.prefixes.equals(db.prefixes)
    assert [t.run_id for t in da.trajs] == [
        t.run_id for t in db.trajs
    ] and da.contexts == db.contexts


@pytest.mark.xfail(
    strict=True,
    reason="known bug of the cluster path: its runs travel without their steps' text (scale.features.strip_text), "
    "which the success evidence rule reads, so the cluster's gates differ from in-process (one more success halt "
    "on coder at this sample) and its fidelity checks featurize text-less broken runs; issue 45",
)
def test_the_loao_report_is_equal(runs):
    ra, rb = (dict(runs[m][2]) for m in MODES)
    ra.pop("seconds"), rb.pop("seconds")
    assert json.dumps(ra, sort_keys=True, default=str) == json.dumps(
        rb, sort_keys=True, default=str
    )
    assert ra["pooled"]["auroc_success"] > 0.6 and len(ra["holdout_agents"]) >= 6
    misses = runs["cluster"][3]
    # train, main LOAO, current_pool, no_prior (each with the prior guard's second runner) and prior_only (the guard's
    # fallback itself): every fit planned, run as a task
    assert len(misses) == 9 and not any(misses)


def _held_back(ds):
    """The shipped fit's rows (min_steps 3, in its order) and its task-grouped Platt split's rows of them."""
    pf = ds.prefixes[ds.prefixes["T"] >= 3]
    _, va = next(
        GroupShuffleSplit(n_splits=1, test_size=0.25, random_state=0).split(
            pf, groups=pf["task_id"]
        )
    )
    return pf.index.to_numpy(), pf.index.to_numpy()[va]


def test_the_shipped_model_is_within_the_stated_tolerance(runs):
    """`train` on the cluster: the same thresholds (inner folds are tasks) and a lightgbm.dask booster within
    SAMPLE_TOLERANCE of the in-process one on the held-back rows (the sample's size)."""
    (wa, ds, *_), (wb, *_) = runs["in-process"], runs["cluster"]
    ma, mb = load_model_dir(wa / "models/swebench"), load_model_dir(wb / "models/swebench")
    assert ma.thresholds == mb.thresholds and ma.featurizer.names == mb.featurizer.names
    assert (wa / "models/swebench/booster_success.txt").read_text() != (
        wb / "models/swebench/booster_success.txt"
    ).read_text()
    X = np.hstack([ds.blocks[f] for f in ma.featurizer.family_names])
    _, rows = _held_back(ds)
    gap = booster_gap(
        ma.model.predict_proba(X[rows])[:, 1],
        mb.model.predict_proba(X[rows])[:, 1],
        ds.prefixes["y"].to_numpy()[rows],
        ds.prefixes["weight"].to_numpy()[rows],
    )
    print("shipped booster, cluster vs in-process, held-back rows of the sample:", gap)
    assert within_tolerance(gap, SAMPLE_TOLERANCE), (gap, SAMPLE_TOLERANCE)


def test_the_booster_on_all_the_runs_is_within_the_stated_tolerance(cluster):
    """On every SWE-bench run (the workspace's ingest: CI's `make train` made it), the shipped fit by
    lightgbm.dask against the in-process one: within TOLERANCE on the held-back rows."""
    from earlyeval.tables.store import bench_dir

    if not (bench_dir("swebench") / "ingest.done").exists():
        pytest.skip("no ingested SWE-bench runs in this workspace (`make ingest BENCH=swebench`)")
    ds = load_dataset("swebench", ["behaviour", "gold", "prior"], progress=False)
    if len(ds.trajs) < 2000:
        pytest.skip(f"the workspace's SWE-bench ingest is a sample ({len(ds.trajs)} runs)")
    X = np.hstack([ds.blocks[f] for f in ("behaviour", "gold", "prior")])
    fit, va = _held_back(ds)
    pf = ds.prefixes.loc[fit]
    args = (X[fit], pf["y"].to_numpy())
    kw = dict(sample_weight=pf["weight"].to_numpy(), groups=pf["task_id"].to_numpy())
    local, dist = OutcomeModel().fit(*args, **kw), DaskOutcomeModel(client=cluster).fit(*args, **kw)
    gap = booster_gap(
        local.predict_proba(X[va])[:, 1],
        dist.predict_proba(X[va])[:, 1],
        ds.prefixes["y"].to_numpy()[va],
        ds.prefixes["weight"].to_numpy()[va],
    )
    print("shipped fit, lightgbm.dask vs in-process, held-back rows of every run:", gap)
    assert within_tolerance(gap, TOLERANCE), (gap, TOLERANCE)


def test_a_killed_worker_mid_ingest_loses_nothing(cluster, tmp_path):
    root = data_root()
    if not (root / "swebench").exists():
        pytest.skip(f"no shared data at {root}")
    cat = load_catalog("swebench")
    ref, ref_reports = ingest_catalog(cat, root, show_progress=False, max_files=8)
    dest = tmp_path / "trajectories.parquet"
    out: dict = {}
    th = threading.Thread(
        target=lambda: out.update(
            parts=ingest_parts(cluster, cat, root, dest, chunk_files=1, max_files=8)
        )
    )
    pids = cluster.run(os.getpid)
    victim = sorted(pids)[0]
    th.start()
    deadline = time.time() + 300
    while time.time() < deadline:  # a part written, and the victim busy with a chunk
        staged = list(tmp_path.glob(".trajectories.parquet.*-new-*/part-*.parquet"))
        busy = cluster.processing().get(victim) or []
        if staged and any(str(k).startswith("earlyeval-ingest-") for k in busy):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the ingest never had a part written with the victim busy")
    killed = list(busy)
    os.kill(pids[victim], signal.SIGKILL)
    th.join(600)
    assert not th.is_alive()
    parts = out["parts"]
    assert killed and all(
        str(k).startswith(f"earlyeval-ingest-{parts.staging.name}-") for k in killed
    )
    parts.commit(dest)
    back = read_trajectories(dest)
    assert back == ref  # nothing lost, nothing twice, the same order
    assert [r.to_dict() for r in parts.reports] == [r.to_dict() for r in ref_reports]
    assert len(part_names(dest)) == sum(r.files_read for r in ref_reports) and sorted(
        os.listdir(dest)
    ) == part_names(dest)  # no torn temp file left
    assert cluster.run(os.getpid) != pids  # the nanny replaced the killed worker

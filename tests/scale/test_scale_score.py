"""`earlyeval score --scheduler`: the replays run on the workers and score.json is the in-process one."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("distributed")

from distributed import Client, LocalCluster

from _monitor_helpers import scoring_fixture
from earlyeval.modeling.modeldir import save_model_dir
from earlyeval.scale.backend import Backend
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import score_runs


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("scale_score")
    tasks, bundle, runs = scoring_fixture(n_new=40, min_halt_step=2)  # some runs halt, some do not
    export_runs(runs, base / "atif", fmt="atif")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as lc, Client(lc) as c:
        yield {"model": save_model_dir(bundle, base / "model"), "tasks": tasks, "runs": base / "atif", "base": base,
               "backend": Backend(c)}


def _score(setup, name, cluster, **kw):
    replay_all = None if cluster is None else cluster.replay(setup["model"], kw.get("thresholds"))
    p = score_runs(setup["model"], setup["runs"], "atif", out=setup["base"] / name, tasks=setup["tasks"], progress=False,
                   replay_all=replay_all, **kw)
    rep = json.loads(p["score"].read_text())
    rep.pop("per_run_csv")
    return rep, p["csv"].read_text()


@pytest.mark.parametrize("kw", [{}, {"warm_start": 6, "seed": 3}, {"thresholds": "0.9,0.9"}])
def test_score_on_the_workers_equals_in_process(setup, kw):
    a, csv_a = _score(setup, "a", None, **kw)
    b, csv_b = _score(setup, "b", setup["backend"], **kw)
    assert a == b and csv_a == csv_b
    assert a["n_scored"] == 40 - kw.get("warm_start", 0) or a["n_scored"] == 40
    assert 0 < a["n_halted"] < a["n_trajectories"]

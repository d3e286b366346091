"""`earlyeval score --scheduler`: the replays run on the workers and score.json is the in-process one."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("distributed")

from _monitor_helpers import scoring_fixture
from distributed import Client, LocalCluster
from faults import rehash

from earlyeval.core.errors import ClusterError, ModelDirError, SettingError
from earlyeval.model.modeldir import load_model_dir, save_model_dir
from earlyeval.model.signature import SIGNATURE
from earlyeval.scale.backend import DaskBackend
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_options import ScoreOptions


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    base = tmp_path_factory.mktemp("scale_score")
    tasks, bundle, runs = scoring_fixture(n_new=40, min_halt_step=2)  # some runs halt, some do not
    export_runs(runs, base / "atif", fmt="atif")
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as lc,
        Client(lc) as c,
    ):
        yield {
            "model": save_model_dir(bundle, base / "model"),
            "tasks": tasks,
            "runs": base / "atif",
            "base": base,
            "backend": DaskBackend(c),
        }


def _score(setup, name, cluster, **kw):
    replay_all = None if cluster is None else cluster.replay(setup["model"], kw.get("thresholds"))
    p = score_runs(
        setup["model"],
        setup["runs"],
        ScoreOptions("atif", out=setup["base"] / name, **kw),
        tasks=setup["tasks"],
        progress=False,
        replay_all=replay_all,
    )
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


KEY = "correct horse battery staple, 32b"


def _swapping(replay_all, mdir, edited):
    """``replay_all`` that first puts ``edited`` where ``mdir`` was: after the driver's check, before the workers load."""

    def run(*args, **kw):
        shutil.rmtree(mdir)
        shutil.copytree(edited, mdir)
        return replay_all(*args, **kw)

    return run


@pytest.mark.parametrize("signed", [False, True])
def test_a_model_dir_swapped_after_the_drivers_check_fails_the_verb_on_the_workers(
    setup, tmp_path, monkeypatch, signed
):
    """Issue 29 item 2: the workers load the directory the driver verified (its manifest hash, thresholds and, when
    required, signature), or the verb fails; an edited, re-hashed, unsigned copy never halts runs."""
    mdir = tmp_path / "model"
    if signed:
        monkeypatch.setenv("EARLYEVAL_MODEL_KEY", KEY)
    save_model_dir(load_model_dir(setup["model"], probe_boosters=False), mdir)
    assert (mdir / SIGNATURE).is_file() == signed
    edited = tmp_path / "edited"
    shutil.copytree(mdir, edited)
    th = json.loads((edited / "thresholds.json").read_text())
    th.update(success=0.51, failure=0.51, min_halt_step=1)  # would halt every run at its first step
    (edited / "thresholds.json").write_text(json.dumps(th))
    m = json.loads((edited / "manifest.json").read_text())
    m["thresholds"] = th
    (edited / "manifest.json").write_text(json.dumps(m))
    (edited / SIGNATURE).unlink(missing_ok=True)
    rehash(edited)
    # the hashes alone accept the copy: only the driver's pin refuses it
    load_model_dir(edited, probe_boosters=False)
    replay_all = _swapping(setup["backend"].replay(mdir), mdir, edited)
    with pytest.raises(
        ModelDirError,
        match="signature.json: 'signature.json': missing"
        if signed
        else "'manifest_hash': .* the directory changed during the verb",
    ):
        score_runs(
            mdir,
            setup["runs"],
            ScoreOptions("atif", out=tmp_path / "out", require_signature=signed),
            tasks=setup["tasks"],
            progress=False,
            replay_all=replay_all,
        )
    assert not (tmp_path / "out" / "score.json").exists()


def _losing(client, monkeypatch, lose):
    """``client.submit`` whose n-th future (from 1) is cancelled right away when ``lose(n)``: a chunk lost with its
    worker, as the driver sees it (``FutureCancelledError``)."""
    real, n = client.submit, [0]

    def submit(*args, **kw):
        fut = real(*args, **kw)
        n[0] += 1
        if lose(n[0]):
            client.cancel([fut])
        return fut

    monkeypatch.setattr(client, "submit", submit)
    return n


def test_a_chunk_lost_on_the_cluster_is_submitted_again(setup, monkeypatch):
    """Issue 29 item 4: a lost chunk is retried (inputs scattered anew), and the answer is the in-process one."""
    a, csv_a = _score(setup, "lost-a", None)
    n = _losing(setup["backend"].client, monkeypatch, lambda k: k == 1)
    b, csv_b = _score(setup, "lost-b", setup["backend"])
    assert n[0] == 3  # two chunks, the first one submitted twice
    assert a == b and csv_a == csv_b


def test_a_chunk_lost_every_time_fails_the_verb_with_one_cluster_error(
    setup, monkeypatch, tmp_path
):
    monkeypatch.setenv("EARLYEVAL_TASK_TRIES", "2")
    n = _losing(setup["backend"].client, monkeypatch, lambda k: True)
    with pytest.raises(
        ClusterError,
        match=r"2 of 2 chunks of runs were lost on the cluster 2 times \(FutureCancelledError",
    ):
        score_runs(
            setup["model"],
            setup["runs"],
            ScoreOptions("atif", out=tmp_path / "out"),
            tasks=setup["tasks"],
            progress=False,
            replay_all=setup["backend"].replay(setup["model"]),
        )
    assert n[0] == 4 and not (tmp_path / "out" / "score.json").exists()


def test_a_worker_without_the_signing_key_refuses_to_load(setup, tmp_path, monkeypatch):
    """--require-signature is checked on the worker too: a worker whose environment lacks the key fails the verb
    with one SettingError saying so (a threaded cluster shares this environment: the key goes after the driver's check)."""
    monkeypatch.setenv("EARLYEVAL_MODEL_KEY", KEY)
    mdir = save_model_dir(load_model_dir(setup["model"], probe_boosters=False), tmp_path / "model")
    inner = setup["backend"].replay(mdir)

    def replay_all(*args, **kw):
        monkeypatch.delenv("EARLYEVAL_MODEL_KEY")
        return inner(*args, **kw)

    with pytest.raises(
        SettingError, match="of a worker: 'EARLYEVAL_MODEL_KEY': .*give the workers the key"
    ):
        score_runs(
            mdir,
            setup["runs"],
            ScoreOptions("atif", out=tmp_path / "out", require_signature=True),
            tasks=setup["tasks"],
            progress=False,
            replay_all=replay_all,
        )

"""Issue 15 on the real runs (``pytest -m integration``): no wrong halt without context, every tau2
simulation kept, and ``kill -9`` of a real ingest / train leaves the previous outputs usable."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _monitor_helpers import LIGHT

import earlyeval.ingest as ingest_mod
import earlyeval.workflows.score_read as score_read
from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.features import Featurizer, RunContext, build_family
from earlyeval.features.context import context_absent_counts
from earlyeval.features.prior import PriorTable
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.integrations import EarlyStopper
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import ModelBundle, load_model_dir, save_model_dir
from earlyeval.tables.prefixes import prefix_table
from earlyeval.tables.store import read_tasks, read_trajectories
from earlyeval.tables.tasks import load_tasks
from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_options import ScoreOptions

pytestmark = pytest.mark.integration

TAU2_SIMULATIONS = 2305  # ../shared/data/tau2: 144 result files (SOURCE.md)


def _require_data():
    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")


def _small_model(trajs, tasks, prior, families, th, bench="swebench"):
    fams = [build_family(f, prior_table=prior) for f in families]
    ctxs = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    fz = Featurizer(fams).fit(trajs, ctxs)
    X = fz.prefix_matrix(trajs, ctxs)
    pf = prefix_table(trajs, min_steps=2)
    model = OutcomeModel(lgbm_params=dict(LIGHT), n_jobs=1)
    model.fit(
        X,
        pf["y"].to_numpy(),
        sample_weight=pf["weight"].to_numpy(),
        groups=pf["task_id"].to_numpy(),
        feature_names=fz.names,
    )
    return ModelBundle(
        fz,
        model,
        th,
        training={
            "benchmarks": [bench],
            "context_runs": len(trajs),
            "context_absent_runs": context_absent_counts(fz, ctxs),
        },
    )


def test_readme_loop_without_task_never_halts_a_resolved_swebench_run(tmp_path):
    """The README's hand-written loop (EarlyStopper) on real resolved SWE-bench runs: with the task it
    halts some runs (the model can halt), without it (no start(), task=None) it halts none."""
    _require_data()
    cat = load_catalog("swebench")
    real = ingest_mod.discover
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ingest_mod, "discover", lambda run_dir, spec: real(run_dir, spec)[:40])
        trajs, _ = ingest_mod.ingest_catalog(cat, show_progress=False)
    trajs = [t for t in trajs if t.outcome is not None and len(t.steps) >= 3]
    tasks = load_tasks(cat, data_root())
    prior = PriorTable.load(data_root() / cat.priors["path"])
    bundle = _small_model(
        trajs,
        tasks,
        prior,
        ["behaviour", "gold", "prior"],
        {"success": 0.8, "failure": 0.8, "min_halt_step": 1},
    )
    mdir = save_model_dir(bundle, tmp_path / "m")
    resolved = [t for t in trajs if t.outcome == 1]
    assert len(resolved) >= 30

    def loop(start) -> tuple[int, int]:
        stopper = EarlyStopper(Monitor.load(mdir, tasks=tasks))
        halts = wrong = 0
        for t in resolved:
            start(stopper, t)
            for s in t.steps[:-1]:
                d = stopper.after_step(
                    action=s.action,
                    observation=s.observation,
                    thought=s.thought,
                    error=s.error,
                    input_tokens=s.input_tokens,
                    output_tokens=s.output_tokens,
                )
                if d.halt:
                    halts += 1
                    wrong += d.outcome == "failure"
                    break
        return halts, wrong

    with_task, _ = loop(
        lambda st, t: st.start(task={"task_id": t.task_id, "prompt": t.prompt}, run_id=t.run_id)
    )
    # the model does halt when it has its context: "never halts" below is not vacuous
    assert with_task > 0

    def no_start(st, t):
        from earlyeval.live.runstate import RunState

        st.decisions, st.halted, st.n_steps = [], None, 0
        st.monitor.run = RunState()  # a run never started

    assert loop(no_start) == (0, 0)
    assert loop(lambda st, t: st.start(task=None, run_id=t.run_id)) == (0, 0)


def test_ingesting_and_scoring_the_whole_tau2_folder_keeps_every_simulation(tmp_path, monkeypatch):
    _require_data()
    cat = load_catalog("tau2")
    trajs, reports = ingest_mod.ingest_catalog(cat, show_progress=False)
    assert len(trajs) == TAU2_SIMULATIONS and len({t.run_id for t in trajs}) == TAU2_SIMULATIONS
    assert not [s for r in reports for s in r.skipped if s["field"] == "run_id"]
    # a small behaviour-only model: only the count of scored runs matters here
    bundle = _small_model(
        trajs[::10],
        {},
        None,
        ["behaviour"],
        {"success": 0.99, "failure": 0.99, "min_halt_step": 1},
        bench="tau2",
    )
    mdir = save_model_dir(bundle, tmp_path / "m")
    folder = data_root() / "tau2"
    rep = json.loads(
        score_runs(mdir, folder, ScoreOptions("tau2", out=tmp_path / "a"), progress=False)[
            "score"
        ].read_text()
    )
    assert rep["n_trajectories"] == TAU2_SIMULATIONS and len(rep["runs"]) == len(cat.runs)
    # the same folder read as an unknown one (no catalog entry): the file + record run ids keep every simulation
    monkeypatch.setattr(score_read, "_catalog_specs", lambda *a, **k: [])
    rep2 = json.loads(
        score_runs(mdir, folder, ScoreOptions("tau2", out=tmp_path / "b"), progress=False)[
            "score"
        ].read_text()
    )
    assert rep2["n_trajectories"] == TAU2_SIMULATIONS and len(rep2["runs"]) == 1
    assert not [s for s in rep2["skipped"] if s["field"] == "run_id"]
    assert len({r["run_id"] for r in rep2["per_run"]}) == TAU2_SIMULATIONS


# Run the real CLI in a child that SIGKILLs itself just before its k-th commit (os.replace / os.rename /
# the renameat2 exchange) onto a watched output: the kill lands inside the write stage every time, at every
# commit in turn, instead of at a moment guessed from a timing (which missed the write stage on CI).
_KILL_AT_COMMIT = """
import os, signal, sys, runpy
import earlyeval.core.atomic as atomic
watched, k = set(sys.argv[1].split(",")), int(sys.argv[2])
seen = [0]
def guard(dest):
    if os.path.basename(os.fspath(dest)) in watched:
        if seen[0] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        seen[0] += 1
def wrap(fn, i):
    def inner(*a, **kw):
        guard(a[i])
        return fn(*a, **kw)
    return inner
os.replace, os.rename = wrap(os.replace, 1), wrap(os.rename, 1)
atomic._exchange = wrap(atomic._exchange, 1)
sys.argv = ["earlyeval", *sys.argv[3:]]
runpy.run_module("earlyeval.app.cli", run_name="__main__")
"""


def _env(ws: Path) -> dict[str, str]:
    return {
        **os.environ,
        "EARLYEVAL_HOME": str(ws),
        "EARLYEVAL_DATA": str(data_root()),
        "EARLYEVAL_BOOSTER_PROBE": "0",
    }


def _run(args: list[str], ws: Path) -> None:
    p = subprocess.run(
        [sys.executable, "-m", "earlyeval.app.cli", *args],
        cwd=ws,
        env=_env(ws),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=900,
    )
    assert p.returncode == 0, (args, p.stderr[-2000:])


def _killed_at_commit(args: list[str], ws: Path, watched: set[str], k: int) -> int:
    p = subprocess.run(
        [sys.executable, "-c", _KILL_AT_COMMIT, ",".join(sorted(watched)), str(k), *args],
        cwd=ws,
        env=_env(ws),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=900,
    )
    return p.returncode


INGEST_OUTPUTS = {"trajectories.parquet", "tasks.parquet", "ingest.json", "ingest.done"}


@pytest.mark.parametrize("bench", ["toolathlon"])
def test_kill_9_during_ingest_and_train_leaves_the_previous_outputs_usable(tmp_path, bench):
    """A real `earlyeval ingest` / `earlyeval train` killed with SIGKILL just before each commit of its
    outputs in turn: the previous parquet files, report and model directory still read whole, and the ingest
    marker is absent after every kill (so `make` re-ingests) and present after a complete ingest."""
    _require_data()
    ws = tmp_path / "ws"
    ws.mkdir()
    _run(["ingest", "--bench", bench], ws)
    data = ws / "data" / bench
    n_prev = len(read_trajectories(data / "trajectories.parquet"))
    assert (data / "ingest.done").exists() and n_prev > 0
    for k in range(
        len(INGEST_OUTPUTS)
    ):  # one commit per output: trajectories, tasks, report, marker
        assert (
            _killed_at_commit(["ingest", "--bench", bench], ws, INGEST_OUTPUTS, k)
            == -signal.SIGKILL
        ), k
        assert len(read_trajectories(data / "trajectories.parquet")) == n_prev
        read_tasks(data / "tasks.parquet")
        json.loads((ws / "reports" / bench / "ingest.json").read_text())
        # killed inside the write stage: marked undone
        assert not (data / "ingest.done").exists(), k
    # past the last commit nothing is killed: the count of commits above is the whole write stage
    assert (
        _killed_at_commit(["ingest", "--bench", bench], ws, INGEST_OUTPUTS, len(INGEST_OUTPUTS))
        == 0
    )
    assert (data / "ingest.done").exists()

    _run(["train", "--bench", bench, "--no-budget"], ws)
    mdir = ws / "models" / bench
    h = json.loads((mdir / "manifest.json").read_text())["content_hash"]
    assert (
        _killed_at_commit(["train", "--bench", bench, "--no-budget"], ws, {bench}, 0)
        == -signal.SIGKILL
    )
    b = load_model_dir(mdir, probe_boosters=False)
    assert b.manifest["content_hash"] == h  # the previous model, whole
    assert not [q for q in mdir.parent.iterdir() if q.name != bench and not q.name.startswith(".")]
    # one swap
    assert _killed_at_commit(["train", "--bench", bench, "--no-budget"], ws, {bench}, 1) == 0
    # deterministic refit
    assert load_model_dir(mdir, probe_boosters=False).manifest["content_hash"] == h


def test_o1_counters_equal_the_on_formulas_on_real_runs():
    """max_edits_same_file and gold_idents_jaccard, now kept as running counters, equal the O(n)
    expressions they replaced, bit for bit, at every step of real SWE-bench runs (bounded sample)."""
    _require_data()
    from earlyeval.features.behaviour import BehaviourFamily
    from earlyeval.features.gold import GoldFamily

    cat = load_catalog("swebench")
    real = ingest_mod.discover
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ingest_mod, "discover", lambda run_dir, spec: real(run_dir, spec)[:15])
        trajs, _ = ingest_mod.ingest_catalog(cat, show_progress=False)
    tasks = load_tasks(cat, data_root())
    beh, gold = BehaviourFamily(), GoldFamily()
    j, k = beh.names.index("max_edits_same_file"), gold.names.index("gold_idents_jaccard")
    n = bad = 0
    for t in trajs:
        ctx = RunContext.of(t, tasks.get(t.task_id))
        sb, sg = beh.start(ctx), gold.start(ctx)
        for s in t.steps:
            beh.update(sb, s)
            gold.update(sg, s)
            ref_b = float(max(sb.files_edited.values())) if sb.files_edited else 0.0
            g = sg.gold
            ref_g = (
                len(sg.edit_idents) / len(g.added_idents | sg.edit_idents_all)
                if g is not None and (g.added_idents or sg.edit_idents_all)
                else float("nan")
            )
            bad += beh.values(sb)[j].tobytes() != np.float64(ref_b).tobytes()
            bad += gold.values(sg)[k].tobytes() != np.float64(ref_g).tobytes()
            n += 1
    assert n > 1000 and bad == 0

"""`earlyeval score` cannot mislead (issue 22): overlap by content, runs dated by their own files, output
folders that never collide, a known --labels format, --data-root, a model of another benchmark refused,
--format auto.  Each check is exercised through score_runs / the CLI, with its exit code."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from pathlib import Path

import _paths
import numpy as np
import pytest
from _monitor_helpers import make_runs, make_tasks, quantile_thresholds, train_bundle
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.app.cli_support import LABEL_FORMATS
from earlyeval.config import workspace
from earlyeval.core.errors import ScoreRefusedError
from earlyeval.core.trajectory import Action, Trajectory, make_step
from earlyeval.features import RunContext
from earlyeval.features.prior import PriorTable
from earlyeval.ingest import FORMATS
from earlyeval.ingest.common import day_of, first_day
from earlyeval.ingest.labels import READERS
from earlyeval.model.modeldir import save_model_dir
from earlyeval.model.overlap import content_record, fingerprint, native_models, training_overlap
from earlyeval.report.score_table import score_table
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import read_runs, run_specs, score_runs
from earlyeval.workflows.score_checks import (
    check_destination,
    date_runs,
    detect_format,
    label_spec,
    output_dir,
)
from earlyeval.workflows.score_options import ScoreOptions

FIXTURES = _paths.FIXTURES
# every fixture folder and the format it is in (tests/fixtures/<format>/, plus export-atif: a mini-swe-agent run)
FIXTURE_FORMATS = {
    "atif": "atif",
    "coder-traj": "coder-traj",
    "moatless-steps": "moatless-steps",
    "moatless-transitions": "moatless-transitions",
    "openhands-completions": "openhands-completions",
    "openhands-events": "openhands-events",
    "swe-agent-traj": "swe-agent-traj",
    "tau2": "tau2",
    "toolathlon": "toolathlon",
    "export-atif": "mini-swe-agent-v1",
    "moatless-nodes": "moatless-nodes",
    "openhands-conversation": "openhands-conversation",
    "swe-agent-traj-v1": "swe-agent-traj",
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    """A tiny model whose prior counts five submissions dated 2024-01-01 .. 2024-05-01, trained on `train`
    (its content recorded as `earlyeval train` records it), and ATIF exports of training and new runs."""
    base = tmp_path_factory.mktemp("checks")
    tasks = make_tasks(12)
    train = make_runs(80, seed=0)
    bundle, _, _ = train_bundle(train, tasks, families=("behaviour", "gold", "prior"))
    prior = next(f for f in bundle.featurizer.families if f.name == "prior")
    prior.table = PriorTable(
        {
            n: {**s, "date": f"2024-{j + 1:02d}-01"}
            for j, (n, s) in enumerate(sorted(prior.table.submissions.items()))
        },
        prior.table.resolved_by,
    )
    new = make_runs(36, seed=11, agents=("agent-a",))
    bundle.thresholds = quantile_thresholds(bundle, new, tasks, min_halt_step=1)
    bundle.training = {**bundle.training, "content": content_record(train, {})}
    model = save_model_dir(bundle, base / "model")
    export_runs(new, base / "new", fmt="atif")
    export_runs(train[:20], base / "train-copy", fmt="atif")
    return {
        "model": model,
        "bundle": bundle,
        "tasks": tasks,
        "base": base,
        "new": base / "new",
        "train": train,
    }


def _score(env, runs, out, **kw):
    tasks = kw.pop("tasks", env["tasks"])
    paths = score_runs(
        env["model"],
        runs,
        ScoreOptions(kw.pop("fmt", "atif"), out=env["base"] / out, **kw),
        tasks=tasks,
        progress=False,
    )
    return json.loads(paths["score"].read_text())


def _cli(env, monkeypatch, *args):
    from earlyeval.workflows import score as score_mod

    # patched once, however often called
    real = getattr(score_mod.score_runs, "real", score_mod.score_runs)

    def patched(*a, **k):
        return real(*a, **k, tasks=env["tasks"], progress=False)

    patched.real = real
    monkeypatch.setattr(score_mod, "score_runs", patched)
    try:
        return CliRunner().invoke(
            app, ["--workspace", str(env["base"] / "ws"), "score", "-m", str(env["model"]), *args]
        )
    finally:
        workspace.set_workspace(None)  # --workspace sets it for the process: not for the next test


def _one_line_exit_2(r, *needles):
    assert r.exit_code == 2, r.output
    assert (
        r.stderr.count("\n") == 1 and r.stderr.startswith("error: ") and "Traceback" not in r.output
    ), r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


# ------------------------------------------------------------ overlap by content


def test_fingerprint_is_the_content_not_the_name_nor_the_storage(env):
    t = env["train"][0]
    renamed = dataclasses.replace(
        t, run_id="elsewhere/x", agent="someone", meta={"source_file": "/other/place.json.gz"}
    )
    assert fingerprint(renamed) == fingerprint(t)
    edited = dataclasses.replace(
        t, steps=[*t.steps[:-1], dataclasses.replace(t.steps[-1], observation="changed")]
    )
    assert fingerprint(edited) != fingerprint(t)
    assert fingerprint(dataclasses.replace(t, task_id="another-task")) != fingerprint(t)
    rec = content_record(env["train"], {})
    assert list(rec["runs"]) == sorted(rec["runs"]) and len(rec["runs"]) == len(env["train"])
    # deterministic: sorted, order-free
    assert content_record(list(reversed(env["train"])), {}) == rec


def test_the_content_record_leaves_content_hash_alone(env, tmp_path):
    """The fingerprints live in the manifest's training section: the files, hence content_hash, are the
    same with and without them; manifest_hash covers them; the same data gives the same manifest."""
    with_c = json.loads((env["model"] / "manifest.json").read_text())
    bare = dataclasses.replace(
        env["bundle"], training={k: v for k, v in env["bundle"].training.items() if k != "content"}
    )
    without = json.loads((save_model_dir(bare, tmp_path / "bare") / "manifest.json").read_text())
    assert (
        with_c["content_hash"] == without["content_hash"]
        and with_c["manifest_hash"] != without["manifest_hash"]
    )
    again = json.loads(
        (save_model_dir(env["bundle"], tmp_path / "again") / "manifest.json").read_text()
    )
    assert again == with_c


def test_a_copied_training_folder_is_flagged_gzipped_or_not(env, tmp_path):
    copy = tmp_path / "renamed-folder"
    shutil.copytree(env["base"] / "train-copy", copy)
    for k, f in enumerate(sorted(copy.rglob("trajectory.json"))):
        if k % 2:  # half the copies gzipped: the fingerprint is of what is read, not of the bytes
            f.with_name("trajectory.json.gz").write_bytes(gzip.compress(f.read_bytes()))
            f.unlink()
    rep = _score(env, copy, "copied")
    ov = rep["training_overlap"]
    (hit,) = ov["agents"].values()
    assert ov["overlap"] and ov["content_checked"] and "content" in hit["by"]
    # names would not have caught it
    assert hit["runs_in_training"] == hit["runs"] == 20 and hit["run_ids_in_training"] == 0
    assert set(hit["training_agents"]) == {"agent-a", "agent-b"}
    assert "20/20 runs are training runs" in score_table(rep) and "in-sample" in score_table(rep)
    fresh = _score(env, env["new"], "fresh")["training_overlap"]
    assert fresh["content_checked"] and not fresh["overlap"]


def test_scaffold_x_model_read_from_the_files():
    def run(
        model, agent="a"
    ):  # another run (other steps) of whatever agent, its files naming ``model``
        return Trajectory(
            "r/1",
            agent,
            "b",
            "t",
            [make_step(0, [Action("bash", f"ls {agent}")])],
            1,
            {"native_model": model},
        )

    assert native_models(run("google/gemini-3-pro-preview")) == ["gemini3propreview"]
    assert native_models(
        Trajectory("r", "a", "b", "t", [], 1, {"llm_models": ["x/GPT-5-mini", "gpt-5-mini"]})
    ) == ["gpt5mini"]
    rec = content_record(
        [
            dataclasses.replace(
                run("tensorblock/gpt-5-mini", "live-agent"),
                meta={"native_model": "tensorblock/gpt-5-mini", "run": "live"},
            )
        ],
        {"live": "mini-swe-agent-v1"},
    )
    assert rec["native"] == {
        "live-agent": {"formats": ["mini-swe-agent-v1"], "models": ["gpt5mini"]}
    }

    class B:
        training = {"content": rec}

    ov = training_overlap(B(), [run("openai/gpt-5-mini", "my-folder")], "mini-swe-agent-v1")
    assert ov["agents"]["my-folder"]["by"] == ["scaffold x model in the files"]
    assert ov["agents"]["my-folder"]["training_agents"] == ["live-agent"]
    # another scaffold
    assert not training_overlap(B(), [run("openai/gpt-5-mini", "my-folder")], "swe-agent-traj")[
        "overlap"
    ]


# ------------------------------------------------------------ dates


def test_day_of_reads_the_timestamps_native_files_carry():
    # unix seconds
    assert day_of(1763510516) == "2025-11-19" and day_of("1733344751.6975832") == "2024-12-04"
    assert (
        day_of("2025-12-13T14:51:20.091079") == "2025-12-13"
        and day_of("2024-06-09T23:30:00-05:00") == "2024-06-09"
    )
    assert day_of("20240616_moatless_temp_0_2_gpt-4o") == "2024-06-16"  # an evaluation's name
    for bad in (None, True, "", "yesterday", 10**13, "99999999_x", float("nan"), 12):
        assert day_of(bad) is None, bad
    assert first_day([None, "2025-01-02", 1735603200]) == "2024-12-31"


def _dated_copy(src: Path, dst: Path, day: str | None) -> Path:
    shutil.copytree(src, dst)
    for f in dst.rglob("trajectory.json"):
        d = json.loads(f.read_text())
        for st in d["steps"]:
            st["timestamp"] = f"{day}T10:00:00Z"
        f.write_text(json.dumps(d))
    return dst


def _offline_ps(env, runs, as_of):
    b = env["bundle"]
    trajs, _, _ = read_runs(run_specs(runs, "atif"))
    ctxs = [RunContext.of(t, env["tasks"].get(t.task_id), as_of=as_of) for t in trajs]
    ps, k, out = b.model.predict_success(b.featurizer.prefix_matrix(trajs, ctxs)), 0, {}
    for t in trajs:
        n = max(len(t.steps) - 1, 0)
        out[t.run_id] = ps[k : k + n]
        k += n
    return out


def test_without_as_of_each_run_is_scored_as_of_its_own_date(env, tmp_path):
    runs = _dated_copy(env["new"], tmp_path / "dated", "2024-03-15")
    rep = _score(env, runs, "dated")
    d = rep["as_of_detail"]
    assert rep["as_of"] == "each run's own date" and d["runs_dated_by"] == {
        "catalog": 0,
        "files": 36,
        "none": 0,
    }
    assert d["dates"] == {"first": "2024-03-15", "last": "2024-03-15"} and d["warning"] is None
    want, today = _offline_ps(env, runs, "2024-03-15"), _offline_ps(env, runs, "")
    for r in rep["per_run"]:
        np.testing.assert_allclose(r["p_success"], want[r["run_id"]], atol=1e-12, rtol=0)
    # positive control: today's pool would have given other probabilities
    assert any(not np.allclose(want[k], today[k]) for k in want)
    assert "36 by their files, 2024-03-15 .. 2024-03-15" in score_table(rep)


def test_undated_runs_warn_and_name_the_shift_risk(env, caplog):
    rep = _score(env, env["new"], "undated")
    w = rep["as_of_detail"]["warning"]
    assert rep["as_of_detail"]["runs_dated_by"]["none"] == 36
    assert (
        "36 of 36 runs carry no date" in w
        and "--as-of YYYY-MM-DD" in w
        and "recorded resolve rate can be far off" in w
    )
    assert any("carry no date" in r.getMessage() for r in caplog.records)
    assert "warning: undated runs: 36 of 36 runs carry no date" in score_table(rep)
    # an explicit cutoff, or an explicit today's pool, is the user's choice: no warning
    assert _score(env, env["new"], "given", as_of="2024-03-15")["as_of_detail"]["warning"] is None
    rep_all = _score(env, env["new"], "all", as_of="all")
    assert rep_all["as_of"] == "all submissions" and rep_all["as_of_detail"]["warning"] is None


def test_a_model_without_public_history_needs_no_date():
    trajs = make_runs(4, seed=1)
    cut, d = date_runs(trajs, None, ["behaviour", "text"], "atif")
    assert cut is None and d["runs_dated_by"]["none"] == 4 and d["warning"] is None


# ------------------------------------------------------------ output folders


def test_similar_folder_names_do_not_collide(env, monkeypatch):
    ws = env["base"] / "ws"
    a, b = env["base"] / "sweagent-v1.2__gpt4", env["base"] / "sweagent-v1.3__gpt4o"
    shutil.copytree(env["new"], a)
    shutil.copytree(env["new"], b)
    for runs in (a, b):
        r = _cli(env, monkeypatch, "--runs", str(runs), "-f", "atif")
        assert r.exit_code == 0, r.output
    for runs in (a, b):
        rep = json.loads((ws / "reports" / "score" / runs.name / "score.json").read_text())
        assert rep["runs_path"] == str(runs.resolve())
    assert not (ws / "reports" / "score" / "sweagent-v1").exists()
    assert output_dir(Path("x/runs.v2.json.gz"), None, Path("/r")) == Path("/r/runs.v2.json.gz")


def test_another_scoring_is_not_overwritten_without_force(env, monkeypatch, tmp_path):
    out = tmp_path / "out"
    r = _cli(env, monkeypatch, "--runs", str(env["new"]), "-f", "atif", "--out", str(out))
    assert r.exit_code == 0, r.output
    before = (out / "score.json").read_bytes()
    other = tmp_path / "other-runs"
    shutil.copytree(env["new"], other)
    r = _cli(env, monkeypatch, "--runs", str(other), "-f", "atif", "--out", str(out))
    _one_line_exit_2(r, "holds a scoring of", str(env["new"].resolve()), "--force")
    assert (out / "score.json").read_bytes() == before
    # the same runs again: fine
    r = _cli(env, monkeypatch, "--runs", str(env["new"]), "-f", "atif", "--out", str(out))
    assert r.exit_code == 0, r.output
    r = _cli(env, monkeypatch, "--runs", str(other), "-f", "atif", "--out", str(out), "--force")
    assert r.exit_code == 0 and json.loads((out / "score.json").read_text())["runs_path"] == str(
        other.resolve()
    )
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "score.json").write_text("my own notes")
    with pytest.raises(ScoreRefusedError, match="not a scoring"):
        check_destination(tmp_path / "foreign", env["new"], "atif", force=False)


# ------------------------------------------------------------ labels, data root


def test_unknown_label_format_exits_2_naming_the_known_ones(env, monkeypatch):
    r = _cli(env, monkeypatch, "--runs", str(env["new"]), "-f", "atif", "--labels", "sbcli:*.json")
    _one_line_exit_2(r, "unknown label format 'sbcli'", *READERS)
    with pytest.raises(ValueError, match="FORMAT:GLOB"):
        label_spec("sb-cli")
    assert LABEL_FORMATS == ", ".join(READERS)  # the --help list is the readers' table


def test_a_missing_data_root_exits_2(env, monkeypatch, tmp_path):
    r = _cli(
        env,
        monkeypatch,
        "--runs",
        str(env["new"]),
        "-f",
        "atif",
        "--data-root",
        str(tmp_path / "nope"),
    )
    _one_line_exit_2(r, "--data-root", "no such folder")


def test_data_root_finds_the_catalog_labels(env, tmp_path, monkeypatch):
    """A catalog run under another data root: without --data-root its labels vanish (and score says why),
    with it they are read."""
    from earlyeval.config.catalog import data_root, load_catalog

    spec = load_catalog("swebench").run(
        "verified__live-swe-agent__mini-v1.14.2__gpt-5-mini__mas-evaluation"
    )
    src = data_root() / spec.folder
    if not src.exists():
        pytest.skip(f"real data absent: {src}")
    root = tmp_path / "elsewhere"
    shutil.copytree(src, root / spec.folder)
    runs = root / spec.folder
    monkeypatch.setenv("EARLYEVAL_DATA", str(tmp_path / "nowhere"))
    blind = _score(env, runs, "blind", fmt="mini-swe-agent-v1", tasks={}, cross_bench=True)
    assert blind["n_trajectories"] == 15 and blind["n_labelled"] == 0
    assert f"give --data-root {root}" in blind["catalog_hint"]
    seen = _score(
        env, runs, "seen", fmt="mini-swe-agent-v1", tasks={}, cross_bench=True, data_root=root
    )
    assert (
        seen["n_labelled"] == 15
        and seen["runs"][0]["from_catalog"] == "swebench"
        and seen["catalog_hint"] is None
    )
    r = _cli(
        env,
        monkeypatch,
        "--runs",
        str(runs),
        "--data-root",
        str(root),
        "--cross-bench",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("15 runs (15 labelled)")


# ------------------------------------------------------------ another benchmark


def _fixture_tasks(env):
    """The env's tasks and the swe-agent-traj fixture's own tasks: the table of the runs' benchmark."""
    from earlyeval.core.trajectory import Task

    runs = read_runs(run_specs(FIXTURES / "swe-agent-traj", "swe-agent-traj"))[0]
    return {**env["tasks"], **{t.task_id: Task(t.task_id) for t in runs}}


def _other_tasks(env):
    """A task table of another benchmark: the fixture's tasks under ids no fixture run has."""
    return {
        f"other-{k}": dataclasses.replace(t, task_id=f"other-{k}") for k, t in env["tasks"].items()
    }


def test_a_model_of_another_benchmark_is_refused(env, tmp_path, monkeypatch):
    """The runs' tasks are not the model's benchmark's: refused (or, with --cross-bench, recorded)."""
    from earlyeval.tables.store import write_tasks

    fake = dataclasses.replace(
        env["bundle"], training={**env["bundle"].training, "benchmarks": ["tau2"]}
    )
    mdir = save_model_dir(fake, tmp_path / "tau2-model")
    runs = FIXTURES / "swe-agent-traj"
    other = _other_tasks(env)
    with pytest.raises(
        ScoreRefusedError,
        match="trained on tau2, the runs are of another benchmark .*--cross-bench",
    ):
        score_runs(
            mdir,
            runs,
            ScoreOptions("swe-agent-traj", out=tmp_path / "o"),
            progress=False,
            tasks=other,
        )
    assert not (tmp_path / "o").exists()
    rep = json.loads(
        score_runs(
            mdir,
            runs,
            ScoreOptions("swe-agent-traj", out=tmp_path / "o", cross_bench=True),
            progress=False,
            tasks=other,
        )["score"].read_text()
    )
    assert rep["bench_check"]["match"] is False and "transfer" in rep["bench_check"]["warning"]
    assert "warning: cross-bench" in score_table(rep)
    table = tmp_path / "tau2-tasks.parquet"
    write_tasks(other.values(), table)
    r = CliRunner().invoke(
        app,
        [
            "score",
            "-m",
            str(mdir),
            "--runs",
            str(runs),
            "-f",
            "swe-agent-traj",
            "--tasks",
            str(table),
            "--out",
            str(tmp_path / "o2"),
        ],
    )
    _one_line_exit_2(r, "trained on tau2", "task ids are tasks of tau2")
    # the model's own benchmark: no refusal, recorded as a match
    swe = dataclasses.replace(
        env["bundle"], training={**env["bundle"].training, "benchmarks": ["swebench"]}
    )
    rep = json.loads(
        score_runs(
            save_model_dir(swe, tmp_path / "swe-model"),
            runs,
            ScoreOptions("swe-agent-traj", out=tmp_path / "o3"),
            progress=False,
            tasks=_fixture_tasks(env),
        )["score"].read_text()
    )
    assert rep["bench_check"]["match"] is True


@pytest.mark.parametrize("bench", ["mybench", "tau2"])
def test_held_out_runs_of_a_format_a_shipped_catalog_uses_are_the_models_benchmark(
    env, tmp_path, bench, monkeypatch
):
    """Issue 42: a private benchmark's held-out runs in swe-agent-traj (a format of the shipped swebench
    catalog) are not "swebench": their tasks are the model's, so they are scored, no --cross-bench."""
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    (ws / "data" / "mybench.toml").write_text('bench = "mybench"\nfamilies = ["behaviour"]\n')
    monkeypatch.setenv("EARLYEVAL_HOME", str(ws))
    own = dataclasses.replace(
        env["bundle"], training={**env["bundle"].training, "benchmarks": [bench]}
    )
    rep = json.loads(
        score_runs(
            save_model_dir(own, tmp_path / "model"),
            FIXTURES / "swe-agent-traj",
            ScoreOptions("swe-agent-traj", out=tmp_path / "o"),
            progress=False,
            tasks=_fixture_tasks(env),
        )["score"].read_text()
    )
    assert rep["bench_check"]["match"] is True and rep["bench_check"]["runs"] == [bench]
    assert "task ids are tasks of" in rep["bench_check"]["evidence"]
    assert "warning" not in rep["bench_check"]


def test_the_format_alone_never_decides_the_benchmark(env):
    """No catalog entry and no task table: not checked (said), whatever catalogs use the format."""
    # (tau2: a known catalog; swe-agent-traj is a format of swebench only, which once decided "swebench")
    from earlyeval.workflows.score_checks import bench_check

    own = dataclasses.replace(
        env["bundle"], training={**env["bundle"].training, "benchmarks": ["tau2"]}
    )
    specs = run_specs(FIXTURES / "swe-agent-traj", "swe-agent-traj")
    runs = read_runs(specs)[0]
    assert runs
    out = bench_check(own, specs, runs, "swe-agent-traj", {})
    assert out["match"] is None and "not checked" in out["evidence"]


# ------------------------------------------------------------ --format auto


@pytest.mark.parametrize("folder,fmt", sorted(FIXTURE_FORMATS.items()))
def test_format_auto_reads_each_fixture_as_its_format(folder, fmt):
    assert detect_format(FIXTURES / folder, []) == fmt


def test_every_format_has_a_fixture_for_auto():
    assert set(FIXTURE_FORMATS.values()) >= set(FORMATS.known()) - {
        "terminalbench-log",
        "inspect-eval",
    }
    # terminalbench-log: its real logs (integration); inspect-eval: logs inspect_ai writes in tests/ingest/test_ingest_inspect_eval.py


def test_format_auto_unknown_exits_2_and_a_mixed_folder_is_scored_per_format(
    env, tmp_path, monkeypatch
):
    mixed = tmp_path / "mixed"
    shutil.copytree(FIXTURES / "export-atif", mixed / "a")
    for name in ("b.json", "c.json"):
        shutil.copy(FIXTURES / "tau2" / "shop_2025.json", mixed / name)
    with pytest.raises(
        ScoreRefusedError, match="several formats .mini-swe-agent-v1: 1 file.*tau2: 2 file"
    ):
        detect_format(mixed, [])
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "readme.txt").write_text("not a run")
    (notes / "data.json").write_text('{"hello": 1}')
    r = _cli(env, monkeypatch, "--runs", str(notes), "--out", str(tmp_path / "o"))
    _one_line_exit_2(r, "--format auto: no known format reads", "give --format FMT")
    r = _cli(env, monkeypatch, "--runs", str(mixed), "--out", str(tmp_path / "o"))
    assert r.exit_code == 0, r.output
    rep = json.loads((tmp_path / "o" / "score.json").read_text())
    assert rep["format"] == "mixed" and set(rep["formats"]) == {"mini-swe-agent-v1", "tau2"}
    assert (
        rep["formats"]["mini-swe-agent-v1"] == 1
        and sum(rep["formats"].values()) == rep["n_trajectories"]
    )
    rep_dir = tmp_path / "o2"
    # --format omitted: auto
    r = _cli(env, monkeypatch, "--runs", str(env["new"]), "--out", str(rep_dir))
    assert r.exit_code == 0, r.output
    rep = json.loads((rep_dir / "score.json").read_text())
    assert (
        rep["format"] == "atif"
        and rep["format_detected"] is True
        and "format: atif (--format auto)" in r.stdout
    )


# ------------------------------------------------------------ --labels with a catalog entry's options


def test_labels_take_a_catalog_label_entrys_options():
    """Issue 42: ``--labels FORMAT:GLOB,KEY=VALUE`` carries the options a catalog label entry takes (CodeR's
    results.json needs trailing_commas); an unknown or mistyped option is refused naming it."""
    spec = label_spec("harness-lists:results.json*,trailing_commas=true")
    assert (spec.format, spec.path, spec.options) == (
        "harness-lists",
        "results.json*",
        {"trailing_commas": True},
    )
    sub = label_spec("resolved-submissions:r.json,submission=20240617_moatless_gpt4o")
    assert sub.options == {"submission": "20240617_moatless_gpt4o"}
    with pytest.raises(ValueError, match="trailing_comas: unknown key"):
        label_spec("harness-lists:results.json*,trailing_comas=true")
    with pytest.raises(ValueError, match="trailing_commas.*true or false"):
        label_spec("harness-lists:results.json*,trailing_commas=yes")
    with pytest.raises(ValueError, match="no KEY=VALUE"):
        label_spec("harness-lists:results.json*,trailing_commas")


def test_a_label_file_that_needs_trailing_commas_says_so(tmp_path, caplog):
    """Unreadable label files: the reason is in the warning a user sees without -v, with the option it needs."""
    import logging

    from earlyeval.ingest import plan_run

    run = tmp_path / "runs"
    run.mkdir()
    (run / "results.json").write_text('{"resolved": ["a", "b",], "applied": ["a",],}')
    spec = run_specs(run, "swe-agent-traj", labels="harness-lists:results.json")[0]
    with caplog.at_level(logging.WARNING, logger="earlyeval.ingest"):
        plan = plan_run(spec, Path("/"))
    assert not plan.label_sets
    warned = [r.getMessage() for r in caplog.records if "no label file" in r.getMessage()]
    assert warned and "trailing_commas = true" in warned[0] and "results.json" in warned[0]
    ok = run_specs(run, "swe-agent-traj", labels="harness-lists:results.json,trailing_commas=true")
    assert plan_run(ok[0], Path("/")).label_sets[0].resolved == {"a", "b"}

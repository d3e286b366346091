"""The ``inspect-eval`` reader on real ``.eval`` logs, written here by inspect_ai with ``mockllm/model``
(a correct and an incorrect sample), and on malformed copies of them (not a zip, no samples, a sample
that is not JSON, a bad score): each bad file or sample is a skip naming file and field, the rest ingests."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from _inspect_helpers import (  # noqa: E402
    FAILING,
    NEVER,
    call,
    offline_token_count,
    react_task,
    run_eval,
    submit,
    tiny_model,
)
from typer.testing import CliRunner  # noqa: E402

from earlyeval.app.cli import app  # noqa: E402
from earlyeval.config.catalog import LabelSpec, RunSpec  # noqa: E402
from earlyeval.core.errors import IngestError  # noqa: E402
from earlyeval.ingest import ingest_run, inspect_eval  # noqa: E402
from earlyeval.steps.inspect_eval import usage_by_message  # noqa: E402


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    offline_token_count(mp)
    base = tmp_path_factory.mktemp("inspect-logs")
    try:
        good, s_good = run_eval(react_task("demo-1"), FAILING, base / "run")
        bad, s_bad = run_eval(react_task("demo-2"), [call("ls"), submit("41")], base / "run")
    finally:
        mp.undo()
    return {
        "dir": base / "run",
        "good": Path(good.location),
        "task": good.eval.task,
        "bad": Path(bad.location),
        "s_good": s_good,
        "s_bad": s_bad,
        "base": base,
    }


def _spec(folder: Path, **options) -> RunSpec:
    return RunSpec(
        name="run",
        folder=str(folder),
        agent="agent",
        scaffold="agent",
        model="",
        format="inspect-eval",
        glob="*.eval",
        labels=[LabelSpec("inline", "", options=dict(options))],
    )


def _parse(path: Path, **options):
    return list(inspect_eval.parse(path, _spec(path.parent, **options), "inspect"))


def test_a_sample_is_a_run_with_the_message_history_as_steps(logs):
    [t] = _parse(logs["good"])
    assert t.task_id == "demo-1" and t.run_id.endswith("/demo-1/epoch-1") and t.outcome == 1
    assert (
        t.prompt == "Make x 42."
        and t.meta["model"] == "mockllm/model"
        and t.meta["inspect_task"] == logs["task"]
    )
    assert t.meta["date"] == str(logs["s_good"].started_at)[:10] and t.meta["date"][4] == "-"
    # ls, cat, pytest, react's submit answer
    assert [s.kind for s in t.steps] == [
        "search",
        "view",
        "test",
        "other",
    ]
    assert [s.action for s in t.steps[:3]] == ["shell ls", "shell cat mod.py", "shell pytest"]
    assert (
        t.steps[2].observation == "1 failed, 2 passed" and t.steps[2].thought == "I will run pytest"
    )
    assert [s.error for s in t.steps[:3]] == [False, False, False] and t.steps[3].error is None
    # usage: the ModelEvent that produced each assistant message (mockllm counts words here)
    usage = usage_by_message(logs["s_good"].events)
    asst = [m for m in logs["s_good"].messages if m.role == "assistant"]
    assert [s.input_tokens for s in t.steps] == [usage[m.id].input_tokens for m in asst]
    # mockllm reports no cost: unknown
    assert all(s.output_tokens and s.cost_usd is None for s in t.steps)


def test_labels_from_the_sample_score_and_the_options_that_change_them(logs):
    [t] = _parse(logs["bad"])
    assert t.outcome == 0 and logs["s_bad"].scores["match"].value == "I"
    [t] = _parse(logs["bad"], success_values=["I"], failure_values=["C"])
    assert t.outcome == 1
    # a sample's error is yielded: the file's other samples go on
    [e] = _parse(logs["bad"], inspect_scorer="accuracy")
    assert isinstance(e, IngestError) and e.field == "samples/demo-2_epoch_1.scores"
    assert "no score from scorer 'accuracy'" in e.reason


def _rewrite(src: Path, dst: Path, fn) -> Path:
    """A copy of an .eval archive with some members changed (fn returns bytes) or dropped (None)."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            data = fn(info.filename, z.read(info.filename))
            if data is not None:
                out.writestr(info, data)
    return dst


def _score(value):
    def fn(name, data):
        if not name.startswith("samples/"):
            return data
        d = json.loads(data)
        d["scores"]["match"]["value"] = value
        return json.dumps(d).encode()

    return fn


def test_numeric_scores_use_success_min_reward(logs, tmp_path):
    p = _rewrite(logs["good"], tmp_path / "num.eval", _score(0.5))
    assert [t.outcome for t in _parse(p)] == [0]
    assert [t.outcome for t in _parse(p, success_min_reward=0.5)] == [1]


def test_malformed_logs_are_skips_naming_file_and_field_and_the_batch_goes_on(logs, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "a-good.eval").write_bytes(logs["good"].read_bytes())
    (run / "not-a-zip.eval").write_text("this is not an inspect log")
    _rewrite(
        logs["good"],
        run / "no-samples.eval",
        lambda n, d: None if n.startswith("samples/") or "summar" in n else d,
    )
    _rewrite(
        logs["good"],
        run / "sample-not-json.eval",
        lambda n, d: b"{ not json" if n.startswith("samples/") else d,
    )
    _rewrite(logs["good"], run / "bad-score.eval", _score({"accuracy": 1}))
    _rewrite(logs["good"], run / "unknown-score.eval", _score("X"))
    trajs, rep = ingest_run(_spec(run), "inspect", Path("/"))
    assert [t.task_id for t in trajs] == ["demo-1"] and trajs[0].outcome == 1
    skipped = {Path(s["file"]).name: (s["field"], s["reason"]) for s in rep.skipped}
    assert (
        skipped["not-a-zip.eval"][0] == "header"
        and "not a readable inspect log" in skipped["not-a-zip.eval"][1]
    )
    assert skipped["no-samples.eval"][0] == "samples"
    assert skipped["sample-not-json.eval"][0] == "samples/demo-1_epoch_1"
    assert skipped["bad-score.eval"] == (
        "samples/demo-1_epoch_1.scores.match.value",
        "expected a str, bool or number score, got dict",
    )
    assert (
        skipped["unknown-score.eval"][0] == "samples/demo-1_epoch_1.scores.match.value"
        and "'X'" in skipped["unknown-score.eval"][1]
    )
    assert len(rep.skipped) == 5


def test_earlyeval_score_on_a_folder_of_eval_logs(logs, tmp_path):
    model = tiny_model(tmp_path / "model", NEVER)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        app,
        [
            "score",
            "--model",
            str(model),
            "--runs",
            str(logs["dir"]),
            "--format",
            "inspect-eval",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "score.json").read_text())
    assert rep["n_trajectories"] == 2 and rep["n_labelled"] == 2
    assert sorted(r["task_id"] for r in rep["per_run"]) == ["demo-1", "demo-2"]
    assert all(r["p_success"] for r in rep["per_run"])


def test_format_auto_reads_a_folder_of_eval_logs_as_inspect_eval(logs):
    """`score --format auto` on inspect_ai's own logs (no static fixture: the logs are written here)."""
    from earlyeval.workflows.score_checks import detect_format

    assert detect_format(logs["dir"], []) == "inspect-eval"


def test_a_zip_bomb_sample_member_is_refused_naming_it(logs, tmp_path, monkeypatch):
    """Issue 29: a small ``.eval`` whose sample member inflates past the input limit is refused before inspect
    reads it, naming the file and the member (main read it whole: 1.2 MB ran out of memory)."""
    monkeypatch.setenv("EARLYEVAL_MAX_INPUT_BYTES", str(1 << 20))
    bomb = tmp_path / "bomb.eval"
    with (
        zipfile.ZipFile(logs["good"]) as src,
        zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("samples/"):
                # still valid JSON, 2 MB once inflated, a few KB stored
                data = data.rstrip() + b" " * (2 << 20)
            dst.writestr(info.filename, data)
    assert bomb.stat().st_size < (256 << 10)
    with pytest.raises(IngestError) as e:
        _parse(bomb)
    assert (
        e.value.file == str(bomb)
        and e.value.field.startswith("samples/")
        and "EARLYEVAL_MAX_INPUT_BYTES" in e.value.reason
    )

"""The ``openhands-conversation`` reader (OpenHands SDK V1 persistence: ``base_state.json`` + ``events/``) on
``fixtures/openhands-conversation/`` -- written by openhands-sdk 1.58.2 (``TestLLM`` whose responses carry
usage, recorded by the SDK's own telemetry; see that folder's README) -- and on malformed copies of it.
The reader is plain JSON: these tests run without the SDK (the real-SDK parity test is in
``tests/integrations/test_adapter_openhands.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import _paths
import pytest
from _monitor_helpers import ALWAYS_FAIL, constant_model
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.config.catalog import RunSpec
from earlyeval.ingest import ingest_run
from earlyeval.ingest import openhands_conversation as oc

FIX = _paths.FIXTURES / "openhands-conversation"
TASK = "django__django-11099"
[CONV] = [p.parent for p in FIX.glob("*/*/base_state.json")]


def _spec(folder: Path) -> RunSpec:
    return RunSpec(
        name="oh",
        folder=str(folder),
        agent="oh",
        scaffold="oh",
        model="",
        format="openhands-conversation",
        glob=oc.DEFAULT_GLOB,
        labels=[],
    )


def _read(root: Path):
    trajs, rep = ingest_run(_spec(root), "swebench", Path("/"))
    return trajs, rep


def test_one_conversation_is_one_run_with_one_step_per_llm_response():
    [t], rep = _read(FIX)
    assert rep.skipped == [] and t.task_id == TASK and t.run_id == f"oh/{TASK}"
    assert t.prompt == "The value printed by repro.py is wrong: it must be 42."
    assert (
        t.meta["model"] == "gpt-4o"
        and t.meta["execution_status"] == "finished"
        and t.meta["date"] == "2026-12-01"
    )
    assert [s.kind for s in t.steps] == ["search", "test", "other", "edit", "submit"]
    s0, s1, s2, s3, s4 = t.steps
    # two tool calls, one response
    assert s0.action == "terminal ls\nterminal cat repro.py" and len(s0.actions) == 2
    assert s0.thought == "Look at the repository first." and s0.error is False
    assert s1.error is True and s1.observation == "value is 41, expected 42"  # exit code 1
    # agent error
    assert s2.actions[0].tool == "grep_tool" and s2.error is True and "not found" in s2.observation
    # the run's last finish: the final step, never replayed
    assert s4.action == "finish Changed 41 to 42."
    # usage: the SDK's per-call token records, matched by llm_response_id (prompt 1000 * n, completion 40 + n)
    assert [s.input_tokens for s in t.steps] == [1000, 2000, 3000, 4000, 5000]
    assert [s.output_tokens for s in t.steps] == [41, 42, 43, 44, 45] and all(
        s.cached_tokens == 0 for s in t.steps
    )
    # every call cost something: costs pair with responses
    assert all(s.cost_usd and s.cost_usd > 0 for s in t.steps)
    assert sum(s.cost_usd for s in t.steps) == pytest.approx(
        json.loads((CONV / "base_state.json").read_text())["stats"]["usage_to_metrics"]["test-llm"][
            "accumulated_cost"
        ]
    )


def _copy(tmp_path: Path, name: str = "run") -> tuple[Path, Path]:
    root = tmp_path / name
    shutil.copytree(FIX, root)
    [conv] = [p.parent for p in root.glob("*/*/base_state.json")]
    return root, conv


def _edit_state(conv: Path, fn) -> None:
    p = conv / "base_state.json"
    d = json.loads(p.read_text())
    fn(d)
    p.write_text(json.dumps(d))


def test_task_id_from_tags_and_usage_unknown_without_records(tmp_path):
    root, conv = _copy(tmp_path)
    _edit_state(
        conv,
        lambda d: (
            d.update(tags={"instance_id": "astropy__astropy-1"}),
            d["stats"].update(usage_to_metrics={}),
        ),
    )
    [t], _ = _read(root)
    assert t.task_id == "astropy__astropy-1"
    assert all(
        s.input_tokens is None and s.output_tokens is None and s.cost_usd is None for s in t.steps
    )


def test_cost_unknown_when_costs_do_not_pair_with_responses(tmp_path):
    root, conv = _copy(tmp_path)
    # one call had no cost
    _edit_state(conv, lambda d: d["stats"]["usage_to_metrics"]["test-llm"]["costs"].pop())
    [t], _ = _read(root)
    assert all(s.cost_usd is None for s in t.steps) and [s.input_tokens for s in t.steps][:2] == [
        1000,
        2000,
    ]


def test_malformed_conversations_are_skips_naming_file_and_field_and_the_batch_goes_on(tmp_path):
    root = tmp_path / "batch"
    root.mkdir()
    shutil.copytree(FIX / TASK, root / "good")
    bad = {}
    for name in (
        "no-events",
        "event-not-json",
        "event-without-kind",
        "state-not-json",
        "bad-stats",
        "no-steps",
    ):
        shutil.copytree(FIX / TASK, root / name)
        [bad[name]] = [p.parent for p in (root / name).glob("*/base_state.json")]
    shutil.rmtree(bad["no-events"] / "events")
    ev = sorted((bad["event-not-json"] / "events").glob("event-*.json"))
    ev[3].write_text("{ not json")
    d = json.loads(
        sorted((bad["event-without-kind"] / "events").glob("event-*.json"))[2].read_text()
    )
    d.pop("kind")
    sorted((bad["event-without-kind"] / "events").glob("event-*.json"))[2].write_text(json.dumps(d))
    (bad["state-not-json"] / "base_state.json").write_text("{ truncated")
    _edit_state(bad["bad-stats"], lambda d: d["stats"].update(usage_to_metrics=[1, 2]))
    for p in sorted((bad["no-steps"] / "events").glob("event-*.json"))[2:]:
        p.unlink()  # the system prompt and the user's message only
    trajs, rep = _read(root)
    assert [t.task_id for t in trajs] == ["good"] and len(trajs[0].steps) == 5
    got = {
        next(n for n in bad if f"/{n}/" in s["file"]): (Path(s["file"]).name, s["field"])
        for s in rep.skipped
    }
    assert got["no-events"] == ("events", "events")
    assert got["event-not-json"] == (ev[3].name, "<json>")
    assert got["event-without-kind"][1] == "kind" and got["event-without-kind"][0].startswith(
        "event-00002-"
    )
    assert got["state-not-json"] == ("base_state.json", "<json>")
    assert got["bad-stats"] == ("base_state.json", "stats.usage_to_metrics")
    assert got["no-steps"] == ("events", "<events>")
    assert len(rep.skipped) == 6 and all(s["reason"] for s in rep.skipped)


def test_earlyeval_score_on_a_folder_of_conversations(tmp_path):
    root, conv = _copy(tmp_path, "convs")
    shutil.copytree(conv.parent, root / "django__django-11133")
    (root / "final_report.json").write_text(json.dumps({"resolved": [TASK]}))
    # halts every run at step 2 predicting failure
    model = constant_model(tmp_path / "model", 0.2, ALWAYS_FAIL)
    out = tmp_path / "out"
    r = CliRunner().invoke(
        app,
        [
            "score",
            "--model",
            str(model),
            "--runs",
            str(root),
            "--format",
            "openhands-conversation",
            "--labels",
            "resolved-list:final_report.json",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "score.json").read_text())
    assert rep["n_trajectories"] == 2 and rep["n_labelled"] == 2
    by = {x["task_id"]: x for x in rep["per_run"]}
    assert (
        set(by) == {TASK, "django__django-11133"}
        and by[TASK]["outcome"] == 1
        and by["django__django-11133"]["outcome"] == 0
    )
    # failure threshold 0: halt at step 2
    assert all(x["halted"] and x["halt_step_index"] == 1 for x in rep["per_run"])


def test_a_damaged_event_log_is_refused_by_name_and_the_batch_goes_on(tmp_path):
    """Issue 29: a missing, misnamed, gzipped or duplicated event file made the steps shift and the last one go,
    without a word.  Each is now the conversation's skip, naming the file or the events folder; the good one is read."""
    import gzip

    root = tmp_path / "batch"
    root.mkdir()
    shutil.copytree(FIX / TASK, root / "good")
    conv = {}
    for name in ("missing", "misnamed", "gzipped", "duplicated", "late-start"):
        shutil.copytree(FIX / TASK, root / name)
        [conv[name]] = [p.parent for p in (root / name).glob("*/base_state.json")]
    ev = {n: sorted((c / "events").glob("event-*.json")) for n, c in conv.items()}
    ev["missing"][5].unlink()
    ev["misnamed"][6].rename(ev["misnamed"][6].with_name("evt" + ev["misnamed"][6].name[5:]))
    g = ev["gzipped"][4]
    g.with_name(g.name + ".gz").write_bytes(gzip.compress(g.read_bytes()))
    g.unlink()
    d = ev["duplicated"][3]
    d.with_name(d.name[:12] + "ffffffff-0000-0000-0000-000000000000.json").write_bytes(
        d.read_bytes()
    )
    ev["late-start"][0].unlink()
    trajs, rep = _read(root)
    assert [t.task_id for t in trajs] == ["good"] and len(trajs[0].steps) == 5
    got = {
        next(n for n in conv if f"/{n}/" in s["file"]): (Path(s["file"]).name, s["reason"])
        for s in rep.skipped
    }
    assert set(got) == set(conv) and all(s["field"] == "events" for s in rep.skipped)
    assert (
        got["missing"] == ("events", got["missing"][1])
        and "event 5 is missing" in got["missing"][1]
    )
    assert "event 6 is missing" in got["misnamed"][1]
    assert got["gzipped"][0].endswith(".json.gz") and "not an event file name" in got["gzipped"][1]
    assert "two event files of index 3" in got["duplicated"][1]
    assert "event 0 is missing" in got["late-start"][1]

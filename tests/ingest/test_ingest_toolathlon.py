"""Toolathlon ingestor on hand-written fixtures (tests/fixtures/toolathlon)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import _paths
import pytest

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.ingest import toolathlon

FIXTURES = _paths.FIXTURES / "toolathlon"
SPEC = RunSpec(
    name="fx-toolathlon",
    folder="toolathlon/trajs",
    agent="toolathlon-agent__fake-model",
    scaffold="toolathlon-agent",
    model="fake-model",
    format="toolathlon",
    glob="fake-model_*.json*",
    labels=[LabelSpec(format="inline", path="")],
)


def one(name: str):
    (t,) = list(toolathlon.parse(FIXTURES / "trajs" / name, SPEC, "toolathlon"))
    return t


def test_normal_run_steps_and_label():
    t = one("fake-model_sales-report.json")
    assert t.task_id == "sales-report" and t.outcome == 1
    assert t.run_id == "fx-toolathlon/sales-report"
    assert t.prompt.startswith("Read /workspace/sales.csv")
    assert len(t.steps) == 5
    s0 = t.steps[0]
    assert [a.tool for a in s0.actions] == ["filesystem-list_directory", "filesystem-read_file"]
    assert (
        s0.action
        == 'filesystem-list_directory {"path": "/workspace"}\nfilesystem-read_file {"path": "/workspace/sales.csv"}'
    )
    assert s0.thought == "I'll look at the workspace first."
    # MCP text unwrapped, in order
    assert s0.observation == "[FILE] sales.csv\nday,amount\n1,10\n2,32"
    assert s0.kind == "view" and s0.error is None
    assert t.steps[1].error is True  # the MCP result says "error": true
    assert t.steps[2].kind == "edit"
    assert t.steps[3].kind == "submit"
    last = t.steps[4]
    assert (
        last.actions == []
        and last.action == "Wrote 42 to /workspace/total.txt."
        and last.observation == ""
    )


def test_no_token_counts():
    t = one("fake-model_sales-report.json")
    assert all(
        s.input_tokens is None and s.output_tokens is None and s.cost_usd is None for s in t.steps
    )


def test_failure_log_never_reaches_the_trajectory():
    t = one("fake-model_sales-report.json")
    assert "CHECKER-LOG" not in json.dumps(t.to_dict())
    assert "failure" not in t.meta


def test_context_reset_images_and_return_codes():
    t = one("fake-model_chart-export.json")
    assert t.outcome == 0
    shot, run, final = t.steps
    assert shot.observation.startswith("Took the screenshot\n[image]")
    assert "[Context reset]" in shot.observation  # the notice answers the step before it
    assert run.error is True and "Return code: 1" in run.observation
    assert final.action == "I could not save the chart."


def test_pass_null_is_unlabelled():
    t = one("fake-model_turn-limit.json")
    assert t.outcome is None and t.meta["graded"] is False
    assert [s.kind for s in t.steps] == ["view", "view"]


@pytest.mark.parametrize(
    "name, field, reason",
    [
        ("fake-model_no-label.json", "pass", "missing"),
        ("fake-model_wrong-types.json", "pass", "expected true, false or null"),
        (
            "fake-model_bad-call.json",
            "messages[1].tool_calls[0].function.name",
            "missing or not a string",
        ),
        ("fake-model_empty.json", "messages", "empty dialogue"),
        ("fake-model_truncated.json", "<json>", "invalid JSON"),
    ],
)
def test_malformed_files_name_file_and_field(name, field, reason):
    with pytest.raises(IngestError) as e:
        list(toolathlon.parse(FIXTURES / "trajs" / name, SPEC, "toolathlon"))
    assert e.value.field == field and reason in e.value.reason
    assert e.value.file.endswith(name)


def test_messages_of_the_wrong_type(tmp_path):
    p = tmp_path / "fake-model_x.json"
    p.write_text('{"pass": true, "messages": {"role": "user"}}')
    with pytest.raises(IngestError) as e:
        list(toolathlon.parse(p, SPEC, "toolathlon"))
    assert e.value.field == "messages" and "expected list" in e.value.reason


def test_ingest_run_counts_and_skips(ingest_workspace):
    ws = ingest_workspace(FIXTURES / "trajs", SPEC, "toolathlon")
    trajs, rep = ws.ingest()
    assert sorted(t.task_id for t in trajs) == ["chart-export", "sales-report", "turn-limit"]
    assert (rep.resolved, rep.unresolved, rep.unlabelled) == (1, 1, 1)
    assert sorted(Path(s["file"]).name for s in rep.skipped) == [
        "fake-model_bad-call.json",
        "fake-model_empty.json",
        "fake-model_no-label.json",
        "fake-model_truncated.json",
        "fake-model_wrong-types.json",
    ]
    assert all(s["field"] and s["reason"] for s in rep.skipped)
    # the other model's file is not part of this run
    assert all("other-model" not in t.meta["source_file"] for t in trajs)


def test_task_id_without_catalog_model():
    spec = replace(SPEC, model="")
    assert toolathlon.task_id_of(Path("other-model_sales-report.json.gz"), spec) == "sales-report"

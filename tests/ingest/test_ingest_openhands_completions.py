"""OpenHands ``llm_completions`` ingestor on hand-written fixtures (tests/fixtures/openhands-completions)."""

from __future__ import annotations

from pathlib import Path

import _paths

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.trajectory import classify_action
from earlyeval.ingest import discover

FIXTURES = _paths.FIXTURES / "openhands-completions"
SPEC = RunSpec(
    name="fx-openhands",
    folder="runs/fx-openhands",
    agent="openhands__fake-model",
    scaffold="openhands",
    model="fake-model",
    format="openhands-completions",
    glob="llm_completions/*/*.json*",
    labels=[LabelSpec(format="openhands-md", path="output.swebench_eval.md")],
)


# gzipped in the workspace, as in the shared data
GZ = ("llm_completions/django__django-2/fake-model-1700000200.0.json",)


def test_discover_keeps_the_last_call_per_instance(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    run = ws.run
    paths = discover(run, SPEC)
    assert [p.parent.name for p in paths] == [
        "astropy__astropy-1",
        "bad__empty-5",
        "bad__truncated-3",
        "bad__wrongtype-4",
        "django__django-2",
    ]
    assert paths[0].name == "fake-model-1700000100.5.json"  # not the earlier 1700000050.0 call


def test_assistant_turns_with_their_tool_results(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    a = {t.task_id: t for t in trajs}["astropy__astropy-1"]
    # 5 assistant messages in `messages` + the final response's message
    assert len(a.steps) == 6
    assert [s.kind for s in a.steps] == ["search", "view", "other", "edit", "view", "submit"]
    assert a.steps[0].actions[0].text == "ls /workspace/repo" and a.steps[0].error is False
    view = a.steps[1].actions[0]
    assert view.tool == "str_replace_editor" and view.text.startswith(
        "view /workspace/repo/pkg/shapes.py"
    )
    assert "view_range: [1, 20]" in view.text
    # a turn without tool call: no action, its text is the thought; the auto "Please continue" is not an observation
    assert a.steps[2].actions == [] and a.steps[2].thought.startswith("The check on line 8")
    assert a.steps[2].observation == "" and a.meta["auto_continue_prompts"] == 1
    # two tool calls in one message stay one step; both results are its observation
    multi = a.steps[3]
    assert [x.tool for x in multi.actions] == ["str_replace_editor", "execute_bash"]
    assert multi.actions[0].text.startswith("str_replace /workspace/repo/pkg/shapes.py")
    assert [x.kind for x in multi.actions] == ["edit", "test"]
    assert "has been edited" in multi.observation and "1 failed" in multi.observation
    assert multi.error is True  # exit code 1
    assert a.steps[4].error is True  # editor ERROR
    assert a.steps[5].actions[0].tool == "finish" and a.steps[5].observation == ""
    assert a.steps[5].thought == "Zero widths are accepted now."
    # usage: only the last call's, in meta; every step None
    assert all(
        s.input_tokens is None and s.output_tokens is None and s.cost_usd is None for s in a.steps
    )
    assert a.meta["last_call_cost"] == 0.0123
    assert a.meta["last_call_usage"] == {
        "input_tokens": 9000,
        "output_tokens": 120,
        "cached_tokens": 8000,
    }
    assert a.meta["earlier_call_files"] == 1
    assert a.prompt.endswith("make_widths rejects zero widths.")
    assert a.outcome == 1


def test_gzipped_file_unanswered_last_call_and_unlisted_label(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    d = {t.task_id: t for t in trajs}["django__django-2"]
    assert [s.kind for s in d.steps] == ["search", "edit"]
    assert d.steps[1].observation == "" and d.steps[1].error is None
    assert classify_action("str_replace_editor", d.steps[1].actions[0].text) == "edit"
    assert d.outcome == 0
    assert rep.not_in_label_list == 1 and rep.not_in_label_list_ids == ["django__django-2"]


def test_malformed_files_are_reported_and_the_rest_ingests(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    assert sorted(t.task_id for t in trajs) == ["astropy__astropy-1", "django__django-2"]
    skipped = {Path(s["file"]).parent.name: s for s in rep.skipped}
    assert set(skipped) == {"bad__truncated-3", "bad__wrongtype-4", "bad__empty-5"}
    assert skipped["bad__truncated-3"]["field"] == "<json>"
    assert skipped["bad__wrongtype-4"]["field"] == "messages"
    assert "expected list, got str" in skipped["bad__wrongtype-4"]["reason"]
    assert skipped["bad__empty-5"]["field"] == "messages"
    assert "no assistant message" in skipped["bad__empty-5"]["reason"]

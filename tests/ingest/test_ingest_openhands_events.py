"""OpenHands event-stream ingestor on hand-written fixtures (tests/fixtures/openhands-events)."""

from __future__ import annotations

from pathlib import Path

import _paths

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.ingest import discover

FIXTURES = _paths.FIXTURES / "openhands-events"
SPEC = RunSpec(
    name="fx-openhands-events",
    folder="runs/fx-openhands-events",
    agent="openhands-gui__fake-model",
    scaffold="openhands",
    model="fake-model",
    format="openhands-events",
    glob="logs/*/**/*.json*",  # deliberately wide: discover must still drop metadata.json
    labels=[LabelSpec(format="sb-cli", path="reports/*.json*")],
)


# gzipped in the workspace, as in the shared data
GZ = (
    "logs/issue_2/django__django-2.json",
    "logs/issue_1/0a1b2c3d4e5f60718293a4b5c6d7e8f9/metadata.json",
)


def test_discover_returns_only_event_files(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    run = ws.run
    names = [p.name for p in discover(run, SPEC)]
    assert names == [
        "astropy__astropy-1.json",
        "django__django-2.json.gz",
        "bad__truncated-3.json",
        "bad__wrongtype-4.json",
        "bad__empty-5.json",
    ]


def test_agent_actions_with_their_observations(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    a = {t.task_id: t for t in trajs}["astropy__astropy-1"]
    assert len(a.steps) == 7
    assert [s.kind for s in a.steps] == [
        "search",
        "view",
        "other",
        "other",
        "edit",
        "test",
        "submit",
    ]
    grep = a.steps[0]
    assert (
        grep.actions[0].tool == "execute_bash"
        and grep.actions[0].text == "grep -rn make_widths pkg"
    )
    assert (
        grep.thought == "Find the function."
        and grep.observation == "pkg/shapes.py:3:def make_widths(ws):"
    )
    assert (grep.input_tokens, grep.output_tokens, grep.cached_tokens) == (5000, 40, 4096)
    assert grep.error is False and grep.cost_usd is None
    # two tool calls of one model response: one step, usage counted once
    two = a.steps[1]
    assert [x.tool for x in two.actions] == ["str_replace_editor", "execute_bash"]
    assert two.actions[0].text == "view /workspace/pkg/shapes.py"
    assert (two.input_tokens, two.output_tokens, two.cached_tokens) == (5400, 60, None)
    assert "def make_widths" in two.observation and "rejects zero widths" in two.observation
    # an agent message: no action, text as thought; the user's reply is its observation
    msg = a.steps[2]
    assert (
        msg.actions == []
        and msg.thought == "Plan: relax the check, then test."
        and msg.observation == "[user] Go ahead."
    )
    assert msg.input_tokens is None
    # a refused tool call (error observation without cause) is a failed turn
    assert (
        a.steps[3].actions == []
        and a.steps[3].error is True
        and "Missing required" in a.steps[3].observation
    )
    # edit rendered from the event args when the response lacks the call
    assert a.steps[4].actions[0].text.startswith("str_replace /workspace/pkg/shapes.py")
    assert a.steps[5].error is True  # exit code 1
    assert a.steps[6].actions[0].tool == "finish" and a.steps[6].error is None
    assert (
        a.meta["instance_cost"] == 0.0055
        and a.meta["condensations"] == 1
        and a.meta["user_messages"] == 1
    )
    assert a.meta["llm_models"] == ["fake-model-2025"]
    assert a.prompt == "Fix the issue in problem_statement.txt."
    assert a.outcome == 1


def test_gzipped_stream_without_model_responses_and_unlisted_label(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    d = {t.task_id: t for t in trajs}["django__django-2"]
    assert [s.kind for s in d.steps] == ["search", "other"]
    assert d.steps[0].error is True and "Stop button" in d.steps[0].observation
    assert all(s.input_tokens is None and s.output_tokens is None for s in d.steps)
    assert d.outcome == 0
    # only in the report's incomplete_ids: not a label
    assert rep.not_in_label_list == 1 and rep.not_in_label_list_ids == ["django__django-2"]


def test_malformed_files_are_reported_and_the_rest_ingests(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    assert sorted(t.task_id for t in trajs) == ["astropy__astropy-1", "django__django-2"]
    skipped = {Path(s["file"]).name: s for s in rep.skipped}
    assert set(skipped) == {"bad__truncated-3.json", "bad__wrongtype-4.json", "bad__empty-5.json"}
    assert skipped["bad__truncated-3.json"]["field"] == "<json>"
    assert skipped["bad__wrongtype-4.json"]["field"] == "<root>"
    assert "expected a list of events, got dict" in skipped["bad__wrongtype-4.json"]["reason"]
    assert skipped["bad__empty-5.json"]["field"] == "<events>"

"""Moatless ``steps`` (June 2024 SearchLoop/CodeLoop) ingestor on hand-written fixtures (tests/fixtures/moatless-steps)."""

from __future__ import annotations

from pathlib import Path

import _paths

from earlyeval.config.catalog import LabelSpec, RunSpec

FIXTURES = _paths.FIXTURES / "moatless-steps"
SPEC = RunSpec(
    name="fx-moatless-steps",
    folder="runs/fx-moatless-steps",
    agent="moatless-steps__fake-model",
    scaffold="moatless-tools",
    model="fake-model",
    format="moatless-steps",
    glob="trajs/*.json*",
    labels=[LabelSpec(format="harness-lists", path="result.json*")],
)


# gzipped in the workspace, as in the shared data
GZ = (
    "trajs/django__django-2.json",
    "result.json",
)


def test_one_step_per_completion_with_all_its_actions(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    a = {t.task_id: t for t in trajs}["astropy__astropy-1"]
    assert len(a.steps) == 6
    assert [[x.tool for x in s.actions] for s in a.steps] == [
        ["search", "search"],
        ["identify"],
        ["request_for_change"],
        ["reject_change"],
        ["search_replace"],
        ["finish"],
    ]
    assert [s.kind for s in a.steps] == ["search", "view", "edit", "other", "edit", "submit"]
    assert (
        "No classes found" in a.steps[0].observation and "Found 1 hits." in a.steps[0].observation
    )
    assert a.steps[1].thought == "make_widths holds the check."  # input.reasoning
    assert a.steps[5].thought == "The change is in place."  # step-level thought
    assert "reasoning" not in a.steps[1].action
    assert [s.cost_usd for s in a.steps] == [0.006, 0.005, 0.004, 0.003, 0.008, 0.002]
    assert all(s.input_tokens is None and s.output_tokens is None for s in a.steps)
    assert all(s.error is False for s in a.steps)
    assert a.meta["total_cost"] == 0.028
    assert a.prompt == "make_widths rejects zero widths."
    assert a.outcome == 0  # listed, not resolved


def test_step_error_and_unlisted_label(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    d = {t.task_id: t for t in trajs}["django__django-2"]
    assert len(d.steps) == 2
    last = d.steps[1]
    assert last.actions == [] and last.kind == "other" and last.error is True
    assert last.observation.startswith("error: Failed to parse arguments")
    assert d.meta["error"] == "ValueError: parse failed"
    assert d.outcome == 0
    assert rep.not_in_label_list == 1 and rep.not_in_label_list_ids == ["django__django-2"]


def test_malformed_files_are_reported_and_the_rest_ingests(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    assert sorted(t.task_id for t in trajs) == ["astropy__astropy-1", "django__django-2"]
    skipped = {Path(s["file"]).name: s for s in rep.skipped}
    assert set(skipped) == {
        "bad__truncated-3.json",
        "bad__wrongtype-4.json",
        "bad__empty-5.json",
        "bad__noname-6.json",
    }
    assert skipped["bad__truncated-3.json"]["field"] == "<json>"
    assert skipped["bad__wrongtype-4.json"]["field"] == "steps"
    assert "expected list, got dict" in skipped["bad__wrongtype-4.json"]["reason"]
    assert skipped["bad__empty-5.json"]["field"] == "steps"
    assert skipped["bad__noname-6.json"]["field"] == "steps[0].actions[0].name"

"""Moatless ``transitions`` (AgenticLoop) ingestor on hand-written fixtures (tests/fixtures/moatless-transitions)."""

from __future__ import annotations

from pathlib import Path

import _paths

from earlyeval.config.catalog import LabelSpec, RunSpec

FIXTURES = _paths.FIXTURES / "moatless-transitions"
SPEC = RunSpec(
    name="fx-moatless",
    folder="runs/fx-moatless",
    agent="moatless__fake-model",
    scaffold="moatless-tools",
    model="fake-model",
    format="moatless-transitions",
    glob="trajs/*.json*",
    labels=[LabelSpec(format="harness-lists", path="result.json*")],
)


GZ = ("trajs/django__django-2.json",)  # gzipped in the workspace, as in the shared data


def test_one_step_per_llm_call(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    a = {t.task_id: t for t in trajs}["astropy__astropy-1"]
    # 2 SearchCode calls (one refused) + Identify + Decide + Plan + Edit + Plan; Finished holds none
    assert [s.actions[0].tool for s in a.steps] == [
        "search_code",
        "search_code",
        "identify",
        "decide_relevance",
        "request_for_change",
        "apply_change",
        "finish",
    ]
    assert [s.kind for s in a.steps] == [
        "search",
        "search",
        "view",
        "other",
        "edit",
        "edit",
        "submit",
    ]
    first = a.steps[0]
    assert (
        first.error is True and first.observation == "It's not possible to search for test files."
    )
    assert first.thought == "Search the tests first."
    assert "file_pattern: **/tests/**" in first.action
    assert a.steps[1].error is False and "make_widths" in a.steps[1].observation
    # tokens only where the action records them; cost per call
    assert (a.steps[1].input_tokens, a.steps[1].output_tokens) == (1200, 80)
    assert a.steps[2].input_tokens is None and a.steps[2].output_tokens is None
    assert [s.cost_usd for s in a.steps] == [0.004, 0.005, 0.003, 0.002, 0.006, 0.007, 0.004]
    assert a.steps[3].thought == "Enough context."  # scratch_pad is the thought
    assert a.meta["total_cost"] == 0.031
    assert a.prompt == "make_widths rejects zero widths."
    assert a.outcome == 1


def test_rejected_edit_and_rejected_run_gzipped_unlisted(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    d = {t.task_id: t for t in trajs}["django__django-2"]
    assert [s.actions[0].tool for s in d.steps] == [
        "search_code",
        "request_for_change",
        "reject_change",
        "reject",
    ]
    assert [s.kind for s in d.steps] == ["search", "edit", "other", "submit"]
    assert all(s.input_tokens is not None for s in d.steps)
    assert d.meta["status"] == "rejected"
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
        "bad__actiontype-6.json",
    }
    assert skipped["bad__truncated-3.json"]["field"] == "<json>"
    assert skipped["bad__wrongtype-4.json"]["field"] == "transitions"
    assert "expected list, got str" in skipped["bad__wrongtype-4.json"]["reason"]
    assert skipped["bad__empty-5.json"]["field"] == "transitions"
    assert "no agent steps" in skipped["bad__empty-5.json"]["reason"]
    assert skipped["bad__actiontype-6.json"]["field"] == "transitions[0].actions[0].action"

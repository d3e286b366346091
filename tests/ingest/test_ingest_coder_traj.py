"""CodeR ``.traj`` ingestor on hand-written fixtures (tests/fixtures/coder-traj)."""

from __future__ import annotations

from pathlib import Path

import _paths

from earlyeval.config.catalog import LabelSpec, RunSpec

FIXTURES = _paths.FIXTURES / "coder-traj"
SPEC = RunSpec(
    name="fx-coder",
    folder="runs/fx-coder",
    agent="coder__fake-model",
    scaffold="coder",
    model="fake-model",
    format="coder-traj",
    glob="trajs/*.traj*",
    labels=[
        LabelSpec(format="harness-lists", path="results.json*", options={"trailing_commas": True})
    ],
)


# gzipped in the workspace, as in the shared data
GZ = (
    "trajs/django__django-2.traj",
    "results.json",
)


def test_sub_agent_steps_in_order_with_roles(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    t = {x.task_id: x for x in trajs}
    a = t["astropy__astropy-1"]
    # every assistant turn of every sub-agent, demonstrations excluded
    assert len(a.steps) == 7
    assert [s.kind for s in a.steps] == [
        "other",
        "edit",
        "test",
        "other",
        "edit",
        "other",
        "submit",
    ]
    assert [s.actions[0].tool for s in a.steps] == [
        "plan",
        "create",
        "bash",
        "succeed",
        "edit",
        "succeed",
        "submit",
    ]
    assert a.meta["step_roles"] == [
        "Manager",
        "Reproducer",
        "Reproducer",
        "Reproducer",
        "Programmer",
        "Programmer",
        "Manager",
    ]
    assert a.meta["role_sequence"] == ["Manager", "Reproducer", "Programmer", "Manager"]
    assert a.steps[2].thought == "Run it."
    assert "ValueError" in a.steps[2].observation
    # the plan's answer (the conclusions report) arrives after the sub-agents ran:
    # it is the observation of the last sub-agent turn, not of the plan step
    assert a.steps[0].observation == ""
    assert "conclusions obtained by colleague named Programmer" in a.steps[5].observation
    assert all(
        s.input_tokens is None and s.output_tokens is None and s.cost_usd is None for s in a.steps
    )
    assert a.meta["instance_cost"] == 0.9
    assert a.prompt.startswith("ISSUE:")
    assert a.outcome == 1


def test_run_ending_inside_a_sub_agent_and_unlisted_label(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    d = {x.task_id: x for x in trajs}["django__django-2"]
    assert [s.kind for s in d.steps] == ["other", "search", "submit"]
    assert d.steps[0].observation == "" and "diff --git" in d.steps[2].observation
    # results.json (gzipped, trailing commas) does not list this id: unresolved, reported
    assert d.outcome == 0
    assert rep.not_in_label_list == 1 and rep.not_in_label_list_ids == ["django__django-2"]
    assert rep.resolved == 1 and rep.trajectories == 2


def test_malformed_files_are_reported_and_the_rest_ingests(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    assert len(trajs) == 2
    skipped = {Path(s["file"]).name: s for s in rep.skipped}
    assert set(skipped) == {
        "bad__truncated-3.traj",
        "bad__wrongtype-4.traj",
        "bad__empty-5.traj",
        "bad__misaligned-6.traj",
    }
    assert skipped["bad__truncated-3.traj"]["field"] == "<json>"
    assert skipped["bad__wrongtype-4.traj"]["field"] == "trajectory"
    assert "expected list, got str" in skipped["bad__wrongtype-4.traj"]["reason"]
    assert skipped["bad__empty-5.traj"]["field"] == "trajectory"
    assert skipped["bad__misaligned-6.traj"]["field"] == "history"
    assert "1 assistant turns but trajectory has 2" in skipped["bad__misaligned-6.traj"]["reason"]


def test_other_json_errors_in_the_label_file_are_not_swallowed(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=())
    run = ws.run
    (run / "results.json").write_text('{"resolved": ["astropy__astropy-1",], "applied": [}')
    trajs, rep = ws.ingest()
    assert all(t.outcome is None for t in trajs)
    assert any(s["field"] == "<json>" and "results.json" in s["file"] for s in rep.skipped)

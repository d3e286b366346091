"""SWE-agent 0.x ``.traj`` ingestor on hand-written fixtures (tests/fixtures/swe-agent-traj)."""

from __future__ import annotations

import _paths
from pathlib import Path

import pytest

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.ingest.swe_agent import parse

FIXTURES = _paths.FIXTURES / "swe-agent-traj"
SPEC = RunSpec(
    name="fx-swe-agent",
    folder="runs/fx-swe-agent",
    agent="swe-agent__fake-model",
    scaffold="swe-agent",
    model="fake-model",
    format="swe-agent-traj",
    glob="*.traj*",
    labels=[LabelSpec(format="resolved-list", path="final_report.json*")],
)


GZ = ("django__django-2.traj",)  # gzipped in the workspace, as in the shared data


def by_task(trajs):
    return {t.task_id: t for t in trajs}


def test_normal_trajectory_and_labels(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    t = by_task(trajs)
    assert set(t) == {"astropy__astropy-1", "django__django-2"}
    a = t["astropy__astropy-1"]
    assert [s.kind for s in a.steps] == ["edit", "test", "search", "submit"]
    assert a.steps[0].action == "create repro.py"
    assert a.steps[0].thought == "Let me first reproduce the problem."
    assert "ValueError" in a.steps[1].observation
    assert all(s.input_tokens is None and s.output_tokens is None and s.cost_usd is None for s in a.steps)
    assert all(s.error is None for s in a.steps)
    assert a.prompt.startswith("ISSUE:")  # first non-demo user message
    assert a.meta["instance_cost"] == 0.42 and a.meta["tokens_sent"] == 31000 and a.meta["api_calls"] == 5
    assert a.outcome == 1
    # gzipped file: same reader; an edit mentioning pytest stays an edit; exit_cost ends the run
    d = t["django__django-2"]
    assert [s.kind for s in d.steps] == ["view", "edit", "submit"]
    assert d.steps[1].actions[0].tool == "edit"
    assert d.meta["exit_status"] is None  # missing in the file: unknown, not invented
    assert d.outcome == 0
    assert rep.trajectories == 2 and rep.resolved == 1 and rep.unresolved == 1
    # a bare resolved list decides every id: nothing is "missing" from it
    assert rep.not_in_label_list == 0


def test_malformed_files_are_reported_and_the_rest_ingests(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    trajs, rep = ws.ingest()
    assert len(trajs) == 2
    skipped = {Path(s["file"]).name: s for s in rep.skipped}
    assert set(skipped) == {"bad__truncated-3.traj", "bad__wrongtype-4.traj", "bad__empty-5.traj", "bad__stepfield-6.traj"}
    assert skipped["bad__truncated-3.traj"]["field"] == "<json>"
    assert "invalid JSON" in skipped["bad__truncated-3.traj"]["reason"]
    assert skipped["bad__wrongtype-4.traj"]["field"] == "trajectory"
    assert "expected list, got str" in skipped["bad__wrongtype-4.traj"]["reason"]
    assert skipped["bad__empty-5.traj"]["field"] == "trajectory"
    assert "empty" in skipped["bad__empty-5.traj"]["reason"]
    assert skipped["bad__stepfield-6.traj"]["field"] == "trajectory[1].action"
    assert rep.files_read == 6


def test_missing_label_file_leaves_trajectories_unlabelled(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ, drop=("final_report.json",))
    trajs, rep = ws.ingest()
    assert len(trajs) == 2 and all(t.outcome is None for t in trajs)
    assert rep.unlabelled == 2
    assert any(s["field"] == "labels.path" and "final_report" in s["file"] for s in rep.skipped)


def test_truncated_gzip_names_the_file(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    run = ws.run
    gz = run / "django__django-2.traj.gz"
    gz.write_bytes(gz.read_bytes()[:40])
    with pytest.raises(IngestError) as e:
        list(parse(gz, SPEC, "swebench"))
    assert e.value.file == str(gz) and e.value.field == "<file>"

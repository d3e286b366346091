"""SWE-agent 0.x ``.traj`` ingestor on hand-written fixtures (tests/fixtures/swe-agent-traj)."""

from __future__ import annotations

from pathlib import Path

import _paths
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
    assert all(
        s.input_tokens is None and s.output_tokens is None and s.cost_usd is None for s in a.steps
    )
    assert all(s.error is None for s in a.steps)
    assert a.prompt.startswith("ISSUE:")  # first non-demo user message
    assert (
        a.meta["instance_cost"] == 0.42
        and a.meta["tokens_sent"] == 31000
        and a.meta["api_calls"] == 5
    )
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
    assert set(skipped) == {
        "bad__truncated-3.traj",
        "bad__wrongtype-4.traj",
        "bad__empty-5.traj",
        "bad__stepfield-6.traj",
    }
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


# --------------------------------------------------------------------------- SWE-agent 1.x (tests/fixtures/swe-agent-traj-v1)

# a folder of its own: `score` reads a folder recursively
V1 = _paths.FIXTURES / "swe-agent-traj-v1"
SPEC_V1 = RunSpec(
    name="fx-swe-agent-v1",
    folder="runs/fx-swe-agent-v1",
    agent="swe-agent-1.1__fake-model",
    scaffold="swe-agent",
    model="fake-model",
    format="swe-agent-traj",
    glob="*.traj*",
    labels=[LabelSpec(format="sb-cli", path="results.json*")],
)


def test_v1_tool_calls_from_history(ingest_workspace):
    trajs, rep = ingest_workspace(V1, SPEC_V1, "swebench", gz=("sympy__sympy-1.traj",)).ingest()
    s = by_task(trajs)["sympy__sympy-1"]
    # the refused turn (no tool call, re-asked) is in `trajectory` only: not a step
    assert [st.kind for st in s.steps] == ["view", "test", "edit", "submit", "edit", "submit"]
    assert s.meta["requeried_turns"] == 1 and s.meta["swe_agent_version"] == "1.1.0"
    # the tool call rendered by core/render, not SWE-agent's command line
    assert (
        s.steps[0].action
        == "str_replace_editor view /testbed/sympy/core/numbers.py\nview_range: [1, 40]"
    )
    assert s.steps[1].action == "python -m pytest sympy/core/tests/test_numbers.py -q"
    assert (
        s.steps[2]
        .actions[0]
        .text.startswith("str_replace /testbed/sympy/core/numbers.py\nold_str: return a")
    )
    assert s.steps[3].action == "submit {}"
    # observations: the tool's own output (the trajectory entry), without the OBSERVATION: template
    assert s.steps[0].observation == "     1\timport math"
    assert s.steps[1].observation == "1 failed, 20 passed in 1.2s"
    assert s.steps[4].observation == ""  # the no-output template is the template's, not the tool's
    # the review gate: the run went on
    assert s.steps[3].observation.startswith("Thank you for your work")
    assert all(st.thought == "" for st in s.steps)
    assert all(
        st.input_tokens is None
        and st.output_tokens is None
        and st.cost_usd is None
        and st.error is None
        for st in s.steps
    )
    assert (
        s.meta["instance_cost"] == 0.03
        and s.meta["tokens_sent"] == 50000
        and s.meta["api_calls"] == 7
    )
    assert s.prompt.startswith("<uploaded_files>")
    assert s.outcome == 1


def test_v1_forced_exit_is_a_submit_step_and_harness_errors_are_unresolved(ingest_workspace):
    trajs, rep = ingest_workspace(V1, SPEC_V1, "swebench").ingest()
    f = by_task(trajs)["pallets__flask-2"]
    assert [st.kind for st in f.steps] == ["search", "submit"]
    assert f.steps[-1].actions[0].tool == "exit_format"  # as SWE-agent 0.x logs its forced exits
    assert f.steps[-1].observation == "Exited (autosubmitted)"
    assert f.meta["requeried_turns"] == 3 and f.meta["exit_status"] == "submitted (exit_format)"
    # the harness could not evaluate it: unresolved (SWE-bench's convention), listed apart
    assert f.outcome == 0 and f.meta["harness_error"] is True
    assert rep.harness_error_ids == ["pallets__flask-2"] and rep.not_in_label_list == 0
    assert "harness_error" not in by_task(trajs)["sympy__sympy-1"].meta


def test_v1_without_function_calling_reads_commands_with_the_1x_tools(ingest_workspace):
    trajs, _ = ingest_workspace(V1, SPEC_V1, "swebench").ingest()
    a = by_task(trajs)["astropy__astropy-5"]
    assert [(x.tool, x.text) for st in a.steps for x in st.actions] == [
        ("str_replace_editor", "view /testbed/a.py"),
        ("submit", ""),
    ]
    assert [st.kind for st in a.steps] == ["view", "submit"] and a.steps[0].thought == "Look first."
    assert "requeried_turns" not in a.meta


def test_v1_malformed_files_are_reported_and_the_rest_ingests(ingest_workspace):
    trajs, rep = ingest_workspace(V1, SPEC_V1, "swebench").ingest()
    assert set(by_task(trajs)) == {"sympy__sympy-1", "pallets__flask-2", "astropy__astropy-5"}
    skipped = {Path(s["file"]).name: s for s in rep.skipped}
    assert set(skipped) == {"bad__unpaired-3.traj", "bad__toolname-4.traj"}
    assert skipped["bad__unpaired-3.traj"]["field"] == "history[2].action"
    assert "no trajectory entry" in skipped["bad__unpaired-3.traj"]["reason"]
    assert skipped["bad__toolname-4.traj"]["field"] == "history[2].tool_calls[0].function.name"

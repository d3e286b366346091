"""Moatless Tools 0.0.4 node-tree ingestor on hand-written fixtures (tests/fixtures/moatless-nodes)."""

from __future__ import annotations

from pathlib import Path

import _paths
import pytest

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.features import Featurizer, RunContext, build_family, signals
from earlyeval.ingest import format_module
from earlyeval.ingest.moatless_nodes import parse
from earlyeval.steps.moatless_nodes import tool_name

FIXTURES = _paths.FIXTURES / "moatless-nodes"
SUBMISSION = "fx_moatless_0_4_submission"
SPEC = RunSpec(
    name="fx-moatless-nodes",
    folder="runs/fx-moatless-nodes",
    agent="moatless-0.0.4__fake-model",
    scaffold="moatless-tools",
    model="fake-model",
    format="moatless-nodes",
    glob="*/trajectory.json*",
    labels=[
        LabelSpec(
            format="resolved-submissions",
            path="labels/resolved_submissions.json*",
            options={"submission": SUBMISSION},
        )
    ],
)
GZ = ("django__django-2/trajectory.json",)  # gzipped in the workspace, as in the shared data
BAD = {
    "bad__truncated-3",
    "bad__missingparent-4",
    "bad__cycle-5",
    "bad__wrongtype-6",
    "bad__usagetype-7",
    "bad__noaction-8",
}


def by_task(trajs):
    return {t.task_id: t for t in trajs}


def test_format_is_registered():
    assert format_module("moatless-nodes").parse is parse


def test_path_to_the_last_node_is_the_run(ingest_workspace):
    trajs, rep = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ).ingest()
    a = by_task(trajs)["astropy__astropy-1"]
    # nodes 1-2 branch off the root and are abandoned: the run is 0 -> 3 -> 4 -> 5 -> 6 -> 7
    assert [s.actions[0].tool for s in a.steps] == [
        "find_function",
        "view_code",
        "str_replace_editor",
        "str_replace_editor",
        "finish",
    ]
    assert [s.kind for s in a.steps] == ["search", "view", "edit", "edit", "submit"]
    assert a.meta["abandoned_nodes"] == 2 and a.meta["tree_nodes"] == 7
    assert a.meta["abandoned_cost_usd"] == pytest.approx(0.02 + 0.03 + 0.005)
    assert a.meta["tree_cost_usd"] == pytest.approx(
        0.055 + 0.01 + 0.02 + 0.004 + 0.03 + 0.02 + 0.01
    )
    assert a.meta["terminal"] is True and a.meta["evaluation_name"] == "fx_moatless_0_4"
    assert a.prompt.startswith("<task>\nUnit.decompose()")
    assert a.steps[0].thought == "Restart: find the method."
    assert a.steps[1].observation.startswith("Here's the contents")
    # the tool call through core/render: the editor form, other tools as JSON
    assert (
        a.steps[2].actions[0].text
        == "str_replace astropy/units/core.py\nold_str:     return self\nnew_str:     return unit"
    )
    assert a.steps[0].actions[0].text == '{"function_name": "decompose", "class_name": "Unit"}'
    assert a.outcome == 1


def test_per_step_usage_sums_the_node_completions(ingest_workspace):
    trajs, _ = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ).ingest()
    a = by_task(trajs)["astropy__astropy-1"]
    # build_action (0.01, 100 out, 1000 + 0 in) + execute_action (0.02, 50 out, 3000 + 500 in)
    s0 = a.steps[0]
    assert (s0.input_tokens, s0.output_tokens, s0.cached_tokens) == (4500, 150, 500)
    assert s0.cost_usd == pytest.approx(0.03)
    # Moatless counts cache reads apart from prompt_tokens: the whole prompt is their sum
    s1 = a.steps[1]
    assert (s1.input_tokens, s1.cached_tokens) == (4500, 4000)
    d = by_task(trajs)["django__django-2"]
    listing = next(s for s in d.steps if s.actions[0].tool == "list_files")
    assert (
        listing.output_tokens is None
        and listing.input_tokens == 900
        and listing.cost_usd == pytest.approx(0.002)
    )


def test_scaffold_test_runs_are_test_actions_the_behaviour_family_reads(ingest_workspace):
    trajs, _ = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ).ingest()
    a = by_task(trajs)["astropy__astropy-1"]
    fail, ok = a.steps[2], a.steps[3]
    assert [(x.tool, x.kind) for x in fail.actions] == [
        ("str_replace_editor", "edit"),
        ("run_tests", "test"),
    ]
    assert (
        fail.actions[1].text
        == "astropy/units/tests/test_units.py astropy/units/tests/test_format.py"
    )
    assert fail.kind == "edit"  # the step is still the agent's edit
    # the scaffold's summary line: errors count as failures
    assert signals.parse_test_summary(fail.observation) == signals.TestSummary(10, 2, 12)
    assert signals.parse_test_summary(ok.observation) == signals.TestSummary(12, 0, 12)
    assert not a.steps[1].actions[1:]  # a view runs no tests
    fz = Featurizer([build_family("behaviour")])
    st = fz.start(RunContext())
    seen = []
    for s in a.steps:
        fz.update(st, s)
        seen.append(dict(zip(fz.names, fz.values(st))))
    assert seen[2]["last_test_passed"] == 0 and seen[2]["test_after_edit_passed"] == 0
    assert seen[3]["last_test_passed"] == 1 and seen[3]["ever_passed_after_edit"] == 1


def test_errors_duplicates_unknown_tools_and_unexecuted_nodes(ingest_workspace):
    trajs, _ = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ).ingest()
    d = by_task(trajs)["django__django-2"]
    # node 5 (the last) was expanded but never run: not a step; the path ends at node 4
    assert [s.actions[0].tool for s in d.steps] == [
        "str_replace_editor",
        "str_replace_editor",
        "list_files",
        "str_replace_editor",
    ]
    assert [s.kind for s in d.steps] == ["view", "edit", "view", "view"]
    # expect_correction; no observation: unknown
    assert [s.error for s in d.steps] == [
        False,
        True,
        False,
        None,
    ]
    assert d.steps[3].observation == "" and d.meta["duplicate_steps"] == 1
    assert d.meta["terminal"] is None and d.meta["abandoned_nodes"] == 0
    assert d.outcome == 0
    assert tool_name("moatless.actions.list_files.ListFilesArgs") == "list_files"
    assert tool_name("moatless.actions.edit.EditActionArguments") == "str_replace_editor"


def test_labels_and_missing_label(ingest_workspace):
    trajs, rep = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ).ingest()
    t = by_task(trajs)
    assert (
        t["astropy__astropy-1"].outcome,
        t["django__django-2"].outcome,
        t["flask__flask-9"].outcome,
    ) == (1, 0, 0)
    assert rep.resolved == 1 and rep.unresolved == 2
    assert (
        rep.not_in_label_list_ids == ["flask__flask-9"]
        and t["flask__flask-9"].meta["not_in_label_list"]
    )
    assert t["flask__flask-9"].steps[-1].kind == "submit"  # Reject ends the task


def test_malformed_files_are_reported_and_the_rest_ingests(ingest_workspace):
    trajs, rep = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ).ingest()
    assert set(by_task(trajs)) == {"astropy__astropy-1", "django__django-2", "flask__flask-9"}
    skipped = {Path(s["file"]).parent.name: s for s in rep.skipped}
    assert set(skipped) == BAD
    assert skipped["bad__truncated-3"]["field"] == "<json>"
    assert skipped["bad__missingparent-4"]["field"] == "nodes[2].parent_id"
    assert "parent 7 is not in nodes" in skipped["bad__missingparent-4"]["reason"]
    assert (
        skipped["bad__cycle-5"]["field"] == "nodes[1].parent_id"
        and "cycle" in skipped["bad__cycle-5"]["reason"]
    )
    assert skipped["bad__wrongtype-6"]["field"] == "nodes"
    assert "expected list, got dict" in skipped["bad__wrongtype-6"]["reason"]
    assert (
        skipped["bad__usagetype-7"]["field"]
        == "nodes[1].completions.build_action.usage.prompt_tokens"
    )
    assert (
        skipped["bad__noaction-8"]["field"] == "nodes"
        and "no node on the path" in skipped["bad__noaction-8"]["reason"]
    )
    assert all(s["file"].endswith("trajectory.json") for s in rep.skipped)
    assert rep.files_read == 9


def test_missing_label_file_leaves_trajectories_unlabelled(ingest_workspace):
    trajs, rep = ingest_workspace(
        FIXTURES, SPEC, "swebench", gz=GZ, drop=("labels/resolved_submissions.json",)
    ).ingest()
    assert len(trajs) == 3 and all(t.outcome is None for t in trajs)
    assert rep.unlabelled == 3
    assert any(
        s["field"] == "labels.path" and "resolved_submissions" in s["file"] for s in rep.skipped
    )


def test_truncated_gzip_names_the_file(ingest_workspace):
    ws = ingest_workspace(FIXTURES, SPEC, "swebench", gz=GZ)
    gz = ws.run / "django__django-2" / "trajectory.json.gz"
    gz.write_bytes(gz.read_bytes()[:40])
    with pytest.raises(IngestError) as e:
        list(parse(gz, SPEC, "swebench"))
    assert e.value.file == str(gz) and e.value.field == "<file>"


def _labels(tmp_path, content: str, **options):
    from earlyeval.ingest.labels import read_labels

    (tmp_path / "labels").mkdir(exist_ok=True)
    (tmp_path / "labels" / "resolved_submissions.json").write_text(content)
    return read_labels(
        tmp_path,
        LabelSpec(
            format="resolved-submissions", path="labels/resolved_submissions.json*", options=options
        ),
    )


def test_resolved_submissions_label_format(tmp_path):
    src = (FIXTURES / "labels" / "resolved_submissions.json").read_text()
    ls = _labels(tmp_path, src, submission=SUBMISSION)
    assert ls.resolved == {"astropy__astropy-1", "sympy__sympy-3"}
    assert ls.listed == {"astropy__astropy-1", "django__django-2", "sympy__sympy-3", "bad__cycle-5"}
    assert ls.outcome("django__django-2") == (0, True) and ls.outcome("flask__flask-9") == (
        0,
        False,
    )
    # another submission of the same file: its own resolved set
    assert _labels(tmp_path, src, submission="20240617_moatless_gpt4o").resolved == {
        "astropy__astropy-1",
        "django__django-2",
    }


@pytest.mark.parametrize(
    "content, options, field",
    [
        ('{"a__a-1": {"resolved_submissions": ["x"]}}', {}, "labels.submission"),
        (
            '{"a__a-1": {"resolved_submissions": ["x"]}}',
            {"submission": "y"},
            "labels.submission",
        ),  # a name no instance lists
        (
            '{"a__a-1": {"resolved_submissions": "x"}}',
            {"submission": "x"},
            "a__a-1.resolved_submissions",
        ),
        ('{"a__a-1": ["x"]}', {"submission": "x"}, "a__a-1.resolved_submissions"),
        ('["a__a-1"]', {"submission": "x"}, "<root>"),
        ('{"a__a-1": {"resolved_submissions": ["x"', {"submission": "x"}, "<json>"),
    ],
)
def test_resolved_submissions_errors_name_file_and_field(tmp_path, content, options, field):
    with pytest.raises(IngestError) as e:
        _labels(tmp_path, content, **options)
    assert e.value.field == field and "resolved_submissions.json" in e.value.file

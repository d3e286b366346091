"""ATIF ingestor on a hand-made Harbor job folder (tests/fixtures/atif/job)."""

from __future__ import annotations

import copy
import gzip
import json
from dataclasses import replace
from pathlib import Path

import _paths
import pytest

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.ingest import atif as atif_ingest

FIXTURES = _paths.FIXTURES / "atif"
SPEC = RunSpec(
    name="fx-atif",
    folder="atif/job",
    agent="toy-agent__fake-llm-7b",
    scaffold="toy-agent",
    model="fake-llm-7b",
    format="atif",
    labels=[LabelSpec(format="inline", path="")],
)
JOB = FIXTURES / "job"


def trial(name: str, spec: RunSpec = SPEC):
    (t,) = list(atif_ingest.parse(JOB / name, spec, "harbor"))
    return t


@pytest.fixture
def job(ingest_workspace) -> Path:
    return ingest_workspace(JOB, SPEC, "harbor").run


def test_discover_returns_trial_folders():
    found = atif_ingest.discover(JOB, SPEC)
    assert [p.name for p in found] == sorted(p.name for p in JOB.iterdir())
    assert atif_ingest.discover(JOB / "graded__p6q7r8", SPEC) == [JOB / "graded__p6q7r8"]


def test_steps_tokens_and_reward_from_result_json():
    t = trial("refund-request__a1b2c3")
    assert t.task_id == "refund-request" and t.outcome == 1
    assert t.run_id == "fx-atif/refund-request__a1b2c3"
    # the system prompt is not a step
    assert t.prompt == "Please refund order 55, it arrived broken."
    assert len(t.steps) == 4
    s0, s1, s2, s3 = t.steps
    assert s0.action == 'get_order {"order_id": 55}' and s0.kind == "view"
    assert s0.thought.startswith("I need the order before anything else.")
    assert s0.observation == "order 55: paid, 19.90 EUR, delivered"
    assert (s0.input_tokens, s0.output_tokens, s0.cached_tokens, s0.cost_usd) == (
        500,
        20,
        400,
        0.001,
    )
    # a shell tool's lone command argument is the command line
    assert (
        s1.action == "grep -n refund policy.md"
        and s1.actions[0].tool == "bash"
        and s1.kind == "search"
    )
    # llm_call_count = 2: metrics already aggregate both calls; cached unknown stays None
    assert (s1.input_tokens, s1.output_tokens, s1.cached_tokens) == (1300, 45, None)
    # multimodal result: text kept, image noted; the user's reply joins the observation
    assert (
        s1.observation
        == "12: refunds are allowed within 30 days\n[image]\nYes, go ahead with the refund."
    )
    # llm_call_count = 0: deterministic dispatch, no LLM call
    assert (s2.input_tokens, s2.output_tokens, s2.cost_usd) == (0, 0, 0.0)
    assert s2.observation == "refund issued: 19.90 EUR\n[subagent trajectory: payments-sub]"
    # a turn without tool call did its message
    assert s3.actions == [] and s3.action == "Your refund of 19.90 EUR is on its way."
    assert (s3.input_tokens, s3.cost_usd) == (1500, None)
    m = t.meta
    assert m["non_text_parts"] == 1 and m["subagent_trajectories"] == 1 and m["subagent_refs"] == 1
    assert m["llm_calls"] == 3 and m["final_metrics"]["total_steps"] == 4
    assert m["reward_source"].endswith("result.json") and m["atif_model"] == "fake-llm-7b"


def test_subagent_steps_are_not_inlined():
    t = trial("refund-request__a1b2c3")
    assert all("charge_back" not in s.action for s in t.steps)


def test_reward_txt_and_old_schema_version():
    t = trial("policy-lookup__d4e5f6")
    assert t.meta["schema_version"] == "ATIF-v1.2"
    assert t.outcome == 0 and t.meta["reward_source"].endswith("reward.txt")
    assert t.task_id == "policy-lookup"  # no result.json: from the trial folder name
    assert [s.index for s in t.steps] == [0, 1]


def test_reward_json_continuation_copied_context_and_v16_subagent_ref():
    t = trial("continued-run__g7h8i9")
    assert t.outcome == 1 and t.meta["reward_source"].endswith("reward.json")
    assert t.meta["copied_context_steps"] == 2
    assert len(t.meta["segments"]) == 2
    # copied context skipped; the continuation's own steps follow the first segment's
    assert [s.action for s in t.steps] == [
        "pytest -q",
        'delegate {"task": "review calc.py"}',
        "sed -i 's/a + b + 1/a + b/' calc.py",
        "pytest -q",
    ]
    assert [s.index for s in t.steps] == [0, 1, 2, 3]
    assert [s.kind for s in t.steps] == ["test", "other", "edit", "test"]
    assert "Summary so far" not in "".join(s.action + s.thought + s.observation for s in t.steps)
    # the v1.6 session_id-only ref was upgraded, not rejected
    assert "[subagent trajectory: sess-reviewer-1]" in t.steps[1].observation
    assert t.prompt == "Fix the failing unit test in calc.py."


def test_no_reward_anywhere_is_unlabelled():
    t = trial("crashed-verifier__j0k1l2")
    assert t.outcome is None and t.meta["reward"] is None


def test_graded_reward_uses_the_threshold_rule():
    assert trial("graded__p6q7r8").outcome == 0
    spec = replace(
        SPEC, labels=[LabelSpec(format="inline", path="", options={"success_min_reward": 0.5})]
    )
    assert trial("graded__p6q7r8", spec).outcome == 1


def test_invalid_document_names_the_field_and_the_batch_goes_on(ingest_workspace):
    trajs, rep = ingest_workspace(JOB, SPEC, "harbor").ingest()
    assert rep.files_read == 6 and rep.trajectories == len(trajs) == 5
    assert (rep.resolved, rep.unresolved, rep.unlabelled) == (2, 2, 1)
    (skip,) = rep.skipped
    assert skip["file"].endswith("broken-doc__m3n4o5/agent/trajectory.json")
    assert skip["field"] == "steps[1].tool_calls[0].function_name"
    assert "ATIF validation failed" in skip["reason"]


def _doc(job: Path, name: str = "graded__p6q7r8") -> tuple[Path, dict]:
    p = job / name / "agent" / "trajectory.json"
    return p, json.loads(p.read_text())


def test_model_validator_errors_name_the_step(job):
    p, d = _doc(job)
    d["steps"][1]["step_id"] = 5
    p.write_text(json.dumps(d))
    with pytest.raises(IngestError) as e:
        list(atif_ingest.parse(job / "graded__p6q7r8", SPEC, "harbor"))
    assert e.value.field == "steps[1].step_id" and "not sequential" in e.value.reason


def test_agent_only_field_on_a_user_step(job):
    p, d = _doc(job)
    d["steps"][0]["metrics"] = {"prompt_tokens": 1}
    p.write_text(json.dumps(d))
    with pytest.raises(IngestError) as e:
        list(atif_ingest.parse(job / "graded__p6q7r8", SPEC, "harbor"))
    assert e.value.field == "steps[0]" and "only valid on `source='agent'`" in e.value.reason


@pytest.mark.parametrize(
    "version, ok",
    [
        ("ATIF-v1.0", True),
        ("ATIF-v1.8", True),
        ("1.4", True),
        ("ATIF-v1.9", False),
        ("ATIF-v2.0", False),
        (None, False),
    ],
)
def test_schema_versions(job, version, ok):
    p, d = _doc(job)
    d["schema_version"] = version
    p.write_text(json.dumps(d))
    if ok:
        assert trial_in(job, "graded__p6q7r8").meta["schema_version"] == version
    else:
        with pytest.raises(IngestError) as e:
            trial_in(job, "graded__p6q7r8")
        assert e.value.field == "schema_version"


def trial_in(job: Path, name: str, spec: RunSpec = SPEC):
    (t,) = list(atif_ingest.parse(job / name, spec, "harbor"))
    return t


def test_truncated_and_gzipped_documents(job):
    p, d = _doc(job)
    gz = p.with_name("trajectory.json.gz")
    gz.write_bytes(gzip.compress(json.dumps(d).encode()))
    p.unlink()
    assert trial_in(job, "graded__p6q7r8").steps[0].kind == "edit"
    assert job / "graded__p6q7r8" in atif_ingest.discover(job, SPEC)
    gz.write_bytes(gzip.compress(json.dumps(d).encode())[:40])
    with pytest.raises(IngestError) as e:
        trial_in(job, "graded__p6q7r8")
    assert e.value.field == "<file>"
    p.write_text(json.dumps(d)[:50])
    gz.unlink()
    with pytest.raises(IngestError) as e:
        trial_in(job, "graded__p6q7r8")
    assert e.value.field == "<json>"


def test_missing_continuation_is_an_error(job):
    (job / "continued-run__g7h8i9" / "agent" / "trajectory.cont-1.json").unlink()
    with pytest.raises(IngestError) as e:
        trial_in(job, "continued-run__g7h8i9")
    assert e.value.field == "continued_trajectory_ref" and "truncated" in e.value.reason


def test_several_rewards_need_a_key(job):
    res = job / "refund-request__a1b2c3" / "result.json"
    d = json.loads(res.read_text())
    d["verifier_result"]["rewards"] = {"correctness": 1.0, "style": 0.2}
    res.write_text(json.dumps(d))
    with pytest.raises(IngestError) as e:
        trial_in(job, "refund-request__a1b2c3")
    assert e.value.field == "verifier_result.rewards" and "reward_key" in e.value.reason
    spec = replace(SPEC, options={"reward_key": "style"})
    assert trial_in(job, "refund-request__a1b2c3", spec).outcome == 0


def test_bad_reward_txt(job):
    (job / "policy-lookup__d4e5f6" / "verifier" / "reward.txt").write_text("passed\n")
    with pytest.raises(IngestError) as e:
        trial_in(job, "policy-lookup__d4e5f6")
    assert e.value.field == "<text>" and e.value.file.endswith("reward.txt")


def test_result_json_wins_over_reward_files(job):
    (job / "refund-request__a1b2c3" / "verifier").mkdir()
    (job / "refund-request__a1b2c3" / "verifier" / "reward.txt").write_text("0.0")
    assert trial_in(job, "refund-request__a1b2c3").outcome == 1


def test_upgrade_leaves_the_source_document_untouched():
    raw = {
        "schema_version": "ATIF-v1.6",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {
                "step_id": 1,
                "source": "agent",
                "message": "m",
                "observation": {
                    "results": [{"content": "x", "subagent_trajectory_ref": {"session_id": "s-1"}}]
                },
            }
        ],
    }
    before = copy.deepcopy(raw)
    doc = atif_ingest.validate_document(raw, "mem.json")
    assert raw == before
    assert doc.steps[0].observation.results[0].subagent_trajectory_ref[0].trajectory_id == "s-1"
    raw["schema_version"] = "ATIF-v1.7"  # the same ref is invalid from v1.7 on
    with pytest.raises(IngestError) as e:
        atif_ingest.validate_document(raw, "mem.json")
    assert e.value.field.startswith("steps[0].observation.results[0].subagent_trajectory_ref")


def test_a_run_dated_in_the_future_is_refused_naming_the_field(ingest_workspace):
    """Issue 29: dates in run files are validated as dates: steps stamped in 2099 (main took 2099-05-01 as
    the run's date, after every submission of the task prior) are this file's one error; the batch goes on."""
    ws = ingest_workspace(JOB, SPEC, "harbor")
    p = ws.run / "graded__p6q7r8" / "agent" / "trajectory.json"
    doc = json.loads(p.read_text())
    for st in doc["steps"]:
        st["timestamp"] = "2099-05-01T10:00:00Z"
    p.write_text(json.dumps(doc))
    trajs, rep = ws.ingest()
    assert len(trajs) == 4 and len(rep.skipped) == 2
    (skip,) = [s for s in rep.skipped if "graded__p6q7r8" in s["file"]]
    assert (
        skip["field"] == "meta.run_date"
        and "2099-05-01" in skip["reason"]
        and "not a possible run date" in skip["reason"]
    )

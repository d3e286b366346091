"""ATIF export: ingest -> export ATIF -> ingest gives the same steps, tokens and labels.

Round trips run on every shared format's hand-written fixtures: tau2, Toolathlon,
ATIF itself, mini-swe-agent, and the SWE-bench formats whose ingestor and
fixture test exist (``pytest.importorskip``: they are written concurrently).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import _paths
import atif
import pytest

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.trajectory import Action, Step, Trajectory, make_step
from earlyeval.ingest import ingest_run
from earlyeval.workflows.export import export_runs, to_atif, trial_name, write_atif

FX = _paths.FIXTURES
ATIF_SPEC = RunSpec(
    name="reingest",
    folder="exported",
    agent="re",
    scaffold="re",
    model="re",
    format="atif",
    labels=[LabelSpec(format="inline", path="")],
)

# format -> (ingestor module, fixture test module or None, fixture dir, spec)
OWN = {
    "tau2": (
        FX / "tau2",
        RunSpec(
            name="fx-tau2",
            folder="run",
            agent="a",
            scaffold="s",
            model="m",
            format="tau2",
            glob="**/*.json*",
            labels=[LabelSpec(format="inline", path="")],
        ),
    ),
    "toolathlon": (
        FX / "toolathlon" / "trajs",
        RunSpec(
            name="fx-tl",
            folder="run",
            agent="a",
            scaffold="s",
            model="fake-model",
            format="toolathlon",
            glob="fake-model_*.json*",
            labels=[LabelSpec(format="inline", path="")],
        ),
    ),
    "atif": (
        FX / "atif" / "job",
        RunSpec(
            name="fx-atif",
            folder="run",
            agent="a",
            scaffold="s",
            model="m",
            format="atif",
            labels=[LabelSpec(format="inline", path="")],
        ),
    ),
    "mini-swe-agent-v1": (
        FX / "export-atif" / "mini-swe-agent",
        RunSpec(
            name="fx-mini",
            folder="run",
            agent="mini-swe-agent__fake",
            scaffold="mini-swe-agent",
            model="fake",
            format="mini-swe-agent-v1",
            glob="trajs/*/*.traj.json*",
            labels=[LabelSpec(format="sb-cli", path="reports/*.json")],
        ),
    ),
}
# SWE-bench formats written by others: (ingestor module, their fixture test module)
OTHERS = {
    "coder-traj": ("earlyeval.ingest.coder", "test_ingest_coder_traj"),
    "swe-agent-traj": ("earlyeval.ingest.swe_agent", "test_ingest_swe_agent_traj"),
    "moatless-steps": ("earlyeval.ingest.moatless", "test_ingest_moatless_steps"),
    "moatless-transitions": ("earlyeval.ingest.moatless", "test_ingest_moatless_transitions"),
    "openhands-completions": (
        "earlyeval.ingest.openhands_completions",
        "test_ingest_openhands_completions",
    ),
    "openhands-events": ("earlyeval.ingest.openhands_events", "test_ingest_openhands_events"),
}


def _fixture_test(name: str):
    """The ingest test module ``tests/ingest/<name>.py`` (its FIXTURES and SPEC), by path: whichever file is run."""
    if name in sys.modules:
        return sys.modules[name]
    path = _paths.TESTS / "ingest" / f"{name}.py"
    if not path.exists():
        pytest.skip(f"{path} does not exist")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def ingest_fixture(fmt: str, tmp_path: Path) -> list[Trajectory]:
    if fmt in OWN:
        src, spec = OWN[fmt]
        shutil.copytree(src, tmp_path / "src" / spec.folder)
        trajs, _ = ingest_run(spec, "fx", tmp_path / "src")
        return trajs
    mod, test_mod = OTHERS[fmt]
    pytest.importorskip(mod)
    tm = _fixture_test(test_mod)
    fixtures, spec = getattr(tm, "FIXTURES", None), getattr(tm, "SPEC", None)
    if fixtures is None or spec is None or not Path(fixtures).exists():
        pytest.skip(f"{test_mod} has no FIXTURES/SPEC to reuse")
    shutil.copytree(fixtures, tmp_path / "src" / spec.folder)
    trajs, _ = ingest_run(spec, "fx", tmp_path / "src")
    if not trajs:
        pytest.skip(f"no {fmt} fixture trajectory ingests yet")
    return trajs


def reingest(trajs: list[Trajectory], tmp_path: Path) -> dict[str, Trajectory]:
    out = tmp_path / "out" / ATIF_SPEC.folder
    dirs = export_runs(trajs, out)
    assert len(dirs) == len(trajs)
    back, rep = ingest_run(ATIF_SPEC, "fx", tmp_path / "out")
    assert not rep.skipped, rep.skipped
    return {t.run_id.split("/", 1)[1]: t for t in back}


def assert_same(a: Trajectory, b: Trajectory) -> None:
    assert b.task_id == a.task_id
    assert b.outcome == a.outcome
    assert b.prompt == a.prompt
    assert [s.to_dict() for s in b.steps] == [s.to_dict() for s in a.steps]


@pytest.mark.parametrize("fmt", [*OWN, *OTHERS])
def test_round_trip(fmt, tmp_path):
    trajs = ingest_fixture(fmt, tmp_path)
    assert trajs
    back = reingest(trajs, tmp_path)
    for t in trajs:
        assert_same(t, back[trial_name(t)])


def test_round_trip_keeps_unknowns_and_labels(tmp_path):
    trajs = ingest_fixture("tau2", tmp_path)
    back = reingest(trajs, tmp_path)
    pairs = [(t, back[trial_name(t)]) for t in trajs]
    assert any(s.input_tokens is None for t, _ in pairs for s in t.steps)
    assert {t.outcome for t, _ in pairs} == {0, 1}
    for t, b in pairs:
        for x, y in zip(t.steps, b.steps):
            assert (y.input_tokens, y.output_tokens, y.cached_tokens, y.cost_usd) == (
                x.input_tokens,
                x.output_tokens,
                x.cached_tokens,
                x.cost_usd,
            )
            assert y.error is x.error


def test_unlabelled_run_has_no_verifier_result(tmp_path):
    (t,) = [t for t in ingest_fixture("toolathlon", tmp_path) if t.outcome is None]
    d = write_atif(t, tmp_path / "one")
    res = json.loads((d / "result.json").read_text())
    assert res["verifier_result"] is None and res["task_name"] == "turn-limit"
    assert (d / "agent" / "trajectory.json").is_file()


def test_exported_document_is_standard_atif(tmp_path):
    t = next(t for t in ingest_fixture("tau2", tmp_path) if t.run_id.endswith("/7/trial0/sim0"))
    doc = to_atif(t)
    atif.Trajectory.model_validate(doc)
    assert doc["schema_version"] == "ATIF-v1.8"
    assert doc["steps"][0] == {"step_id": 1, "source": "user", "message": t.prompt}
    greet, lookup = doc["steps"][1], doc["steps"][2]
    assert "metrics" not in greet  # unknown usage is left out, not written as 0
    assert lookup["tool_calls"][0]["arguments"] == {"order_id": "B-17"}
    assert "extra" not in lookup["tool_calls"][0]  # plain JSON arguments need no private field
    assert lookup["metrics"] == {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "cached_tokens": 1024,
        "cost_usd": 0.0012,
    }
    assert (
        lookup["observation"]["results"][0]["source_call_id"]
        == lookup["tool_calls"][0]["tool_call_id"]
    )
    assert lookup["extra"] == {"earlyeval": {"error": False}}
    # greeting unknown -> no total
    assert "final_metrics" in doc and "total_prompt_tokens" not in doc["final_metrics"]


def test_action_text_that_arguments_cannot_reproduce(tmp_path):
    s = make_step(
        0,
        [Action(tool="custom_tool", text="not json at all"), Action(tool="bash", text="ls -la")],
        thought="t",
    )
    t = Trajectory(
        run_id="r/1", agent="a", bench="b", task_id="x", steps=[s], outcome=1, prompt="p"
    )
    doc = to_atif(t)
    tc0, tc1 = doc["steps"][1]["tool_calls"]
    assert tc0["extra"] == {"earlyeval": {"text": "not json at all"}}
    assert tc1["arguments"] == {"command": "ls -la"} and "extra" not in tc1
    back = reingest([t], tmp_path)
    assert_same(t, back[trial_name(t)])


def test_explicit_kinds_and_indices_survive(tmp_path):
    s = Step(index=3, action="do it", kind="edit", thought="", observation="ok", actions=[])
    a = make_step(4, [Action(tool="lookup", text="{}", kind="edit")])
    t = Trajectory(run_id="r/2", agent="a", bench="b", task_id="y", steps=[s, a], outcome=0)
    back = reingest([t], tmp_path)
    assert_same(t, back[trial_name(t)])


def test_export_runs_errors(tmp_path):
    t = Trajectory(
        run_id="r/1",
        agent="a",
        bench="b",
        task_id="x",
        steps=[make_step(0, [], final_answer="hi")],
        outcome=1,
    )
    with pytest.raises(EarlyEvalError, match="unknown export format"):
        export_runs([t], tmp_path, fmt="parquet")
    with pytest.raises(EarlyEvalError, match="duplicate run_id"):
        export_runs([t, replace(t)], tmp_path)

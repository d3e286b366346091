"""Ingest the real SWE-bench runs under the data root (../shared/data or $EARLYEVAL_DATA).

Run with ``pytest -m integration``.  Per-format tests read a bounded sample (at
most 5 files); the last test ingests the whole catalog and checks the counts
stated in the data README.
"""

from __future__ import annotations

import pytest

from earlyeval.config.catalog import RunSpec, data_root, load_catalog
from earlyeval.core.errors import IngestError
from earlyeval.core.trajectory import KINDS, Trajectory
from earlyeval.ingest import discover, ingest_catalog, parse_files

pytestmark = pytest.mark.integration

SAMPLE = 5
CATALOG = load_catalog("swebench")

# run folder -> format, for the formats written here (one run per format, + the second moatless layout)
RUNS = {
    "swe-agent-traj": "lite__swe-agent__gpt4",
    "coder-traj": "lite__coder__gpt4",
    "moatless-transitions": "lite__moatless__claude-3.5-sonnet",
    "moatless-steps": "lite__moatless-steps__gpt-4o__20240609",
    "moatless-nodes": "lite__moatless-v0.0.4-nodes__claude-3.5-sonnet-20241022",
    "openhands-completions": "verified__openhands-codeact-v0.15__claude-3.5-sonnet-20241022",
    "openhands-events": "verified__openhands-v1-conversation-events__mas-evaluation",
}

# trajectories, resolved (data README), not_in_label_list (data README / SOURCE.md)
EXPECTED = {
    "verified__mini-swe-agent-v1.15.0__gemini-3-pro-preview-20251118": (500, 371, 0),
    "verified__live-swe-agent__mini-v1.14.2__gpt-5-mini__mas-evaluation": (15, 9, 0),
    "verified__openhands-codeact-v0.15__claude-3.5-sonnet-20241022": (50, 26, 0),
    "verified__openhands-v1-conversation-events__mas-evaluation": (15, 3, 0),
    "lite__swe-agent__gpt4": (275, 28, 0),
    "lite__coder__gpt4": (261, 80, 4),
    "lite__moatless__gpt-4o-2024-05-13": (300, 74, 1),
    "lite__moatless__claude-3.5-sonnet": (291, 80, 0),
    "lite__moatless-steps__gpt-4o__20240609": (300, 70, 0),
    "lite__moatless-v0.0.4-nodes__claude-3.5-sonnet-20241022": (271, 110, 0),
    "verified__swe-agent-v1.1.0__gpt-5-mini__mas-evaluation": (13, 6, 0),
}


def _spec(run: str) -> RunSpec:
    spec = CATALOG.run(run)
    if not (data_root() / spec.folder).exists():
        pytest.skip(f"real data absent: {data_root() / spec.folder}")
    return spec


@pytest.mark.parametrize("fmt", sorted(RUNS))
def test_sample_of_real_run(fmt):
    spec = _spec(RUNS[fmt])
    assert spec.format == fmt
    paths = discover(data_root() / spec.folder, spec)[:SAMPLE]
    assert paths
    items = list(parse_files(paths, spec, CATALOG.bench))
    errors = [i for i in items if isinstance(i, IngestError)]
    assert not errors, errors
    trajs = [i for i in items if isinstance(i, Trajectory)]
    assert len(trajs) == len(paths)
    for t in trajs:
        assert t.steps and t.prompt and t.task_id and "__" in t.task_id
        assert [s.index for s in t.steps] == list(range(len(t.steps)))
        assert all(s.kind in KINDS for s in t.steps)
        assert any(s.kind in ("edit", "search", "view", "test") for s in t.steps)
        assert any(s.observation for s in t.steps)
        for s in t.steps:  # unknown is None, never a made-up 0
            for v in (s.input_tokens, s.output_tokens):
                assert v is None or (isinstance(v, int) and v > 0)
            assert s.cost_usd is None or s.cost_usd >= 0
    if fmt in ("moatless-transitions", "moatless-steps", "moatless-nodes"):
        assert all(s.cost_usd is not None for t in trajs for s in t.steps)
    if (
        fmt == "moatless-nodes"
    ):  # tokens per step too (SOURCE.md: completions.*.usage on every node)
        assert all(s.input_tokens and s.output_tokens for t in trajs for s in t.steps)
    if fmt in ("swe-agent-traj", "coder-traj", "openhands-completions"):
        assert all(s.input_tokens is None and s.cost_usd is None for t in trajs for s in t.steps)
    if fmt == "openhands-events":
        assert any(s.input_tokens for t in trajs for s in t.steps)
    if fmt == "coder-traj":
        assert all(
            len(t.meta["step_roles"]) == len(t.steps) and t.meta["step_roles"][0] == "Manager"
            for t in trajs
        )


def test_sample_of_real_swe_agent_1x_tool_call_run():
    spec = _spec("verified__swe-agent-v1.1.0__gpt-5-mini__mas-evaluation")
    paths = discover(data_root() / spec.folder, spec)[:SAMPLE]
    items = list(parse_files(paths, spec, CATALOG.bench))
    assert not [i for i in items if isinstance(i, IngestError)]
    trajs = [i for i in items if isinstance(i, Trajectory)]
    assert len(trajs) == len(paths) == SAMPLE
    for t in trajs:
        assert t.meta["swe_agent_version"] == "1.1.0" and t.prompt
        # instance totals only
        assert all(s.input_tokens is None and s.cost_usd is None for s in t.steps)
        assert t.meta["instance_cost"] > 0
        tools = {a.tool for s in t.steps for a in s.actions}
        assert "str_replace_editor" in tools and tools <= {
            "str_replace_editor",
            "bash",
            "submit",
            "exit_format",
        }
        assert not any(s.observation.startswith("OBSERVATION:") for s in t.steps)
        assert t.steps[-1].kind == "submit"


def test_full_swebench_catalog_counts():
    root = data_root()
    if not (root / "swebench" / "runs").exists():
        pytest.skip(f"real data absent: {root / 'swebench' / 'runs'}")
    trajs, reports = ingest_catalog(CATALOG, show_progress=False)
    got = {r.run: (r.trajectories, r.resolved, r.not_in_label_list) for r in reports}
    assert {run: got.get(run) for run in EXPECTED} == EXPECTED
    for r in reports:
        if r.run not in EXPECTED:
            continue
        assert not r.skipped, (r.run, r.skipped[:3])
        assert r.unlabelled == 0
    coder = next(r for r in reports if r.run == "lite__coder__gpt4")
    assert sorted(coder.not_in_label_list_ids) == [
        "django__django-14752",
        "django__django-14787",
        "scikit-learn__scikit-learn-13241",
        "sympy__sympy-21847",
    ]
    moatless = next(r for r in reports if r.run == "lite__moatless__gpt-4o-2024-05-13")
    assert moatless.not_in_label_list_ids == ["sympy__sympy-20322"]
    sa1 = next(
        r for r in reports if r.run == "verified__swe-agent-v1.1.0__gpt-5-mini__mas-evaluation"
    )
    # counted unresolved
    assert sorted(sa1.harness_error_ids) == [
        "django__django-11099",
        "sympy__sympy-13480",
    ]
    m4 = [
        t
        for t in trajs
        if t.meta["run"] == "lite__moatless-v0.0.4-nodes__claude-3.5-sonnet-20241022"
    ]
    assert sum(t.meta["abandoned_nodes"] > 0 for t in m4) == 13  # SOURCE.md: 13 runs branch
    # SOURCE.md: $60.99 over all nodes
    assert sum(t.meta["tree_cost_usd"] for t in m4) == pytest.approx(60.99, abs=0.01)
    assert sum(t.run_id.split("/")[0] in EXPECTED for t in trajs) == sum(
        v[0] for v in EXPECTED.values()
    )

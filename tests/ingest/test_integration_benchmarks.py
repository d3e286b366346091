"""tau2, Toolathlon and Terminal-Bench ingest on the real runs (../shared/data or $EARLYEVAL_DATA).

Run with ``pytest -m integration``.  The sample tests read a bounded set of
files and round-trip them through ATIF; the count tests ingest the whole
catalogs and compare with the tables in the data's SOURCE.md files.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from earlyeval.config.catalog import LabelSpec, RunSpec, data_root, load_catalog
from earlyeval.core.errors import IngestError
from earlyeval.core.trajectory import KINDS, Trajectory
from earlyeval.ingest import ingest_catalog, ingest_run, parse_files
from earlyeval.workflows.export import export_runs, trial_name

pytestmark = pytest.mark.integration

ROOT = data_root()
needs_data = pytest.mark.skipif(not (ROOT / "tau2").is_dir(), reason=f"no data root at {ROOT}")

# one file per layout / usage variant: 2025 single file, 2026 results.json, solo mode,
# custom agent without usage, no usage at all (ToolOrchestra), cost always 0, OpenRouter billed cost
TAU2_SAMPLE = [
    "gpt-4.1_airline_default_gpt-4.1_1trials.json.gz",
    "yoheinakajima__20260601-033543-612139__results.json.gz",
    "gpt-4.1-2025-04-14_telecom_no-user_gpt-4.1-2025-04-14_4trials_5tasks.json.gz",
    "hd_retail_n5.json.gz",
    "toolorchestra_airline_gpt-5_1trial.json.gz",
    "salud_mendoza_rag_throttled_full.json.gz",
    "Linyxus__20260525_144020_telecom-workflow_llm_agent_deepseek-v4-flash_user_simulator_gpt-5.4__results.json.gz",
]
TOOLATHLON_SAMPLE = 8


def source_table(path: Path) -> dict[str, tuple[int, int]]:
    """file -> (#sims, #success) from the per-file table of tau2/SOURCE.md."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 13 and cells[0].endswith(".json.gz"):
            out[cells[0]] = (int(cells[7]), int(cells[9]))
    return out


def assert_sane(t: Trajectory) -> None:
    assert t.steps and t.outcome in (0, 1, None)
    assert [s.index for s in t.steps] == list(range(len(t.steps)))
    for s in t.steps:
        assert s.kind in KINDS
        for v in (s.input_tokens, s.output_tokens, s.cached_tokens):
            assert v is None or (isinstance(v, int) and v >= 0)
        assert s.cost_usd is None or s.cost_usd >= 0


def round_trip(trajs: list[Trajectory], tmp_path: Path) -> None:
    out = tmp_path / "exported"
    export_runs(trajs, out / "run")
    spec = RunSpec(
        name="back",
        folder="run",
        agent="x",
        scaffold="x",
        model="x",
        format="atif",
        labels=[LabelSpec(format="inline", path="")],
    )
    back, rep = ingest_run(spec, "x", out)
    assert not rep.skipped
    by = {t.run_id.split("/", 1)[1]: t for t in back}
    for t in trajs:
        b = by[trial_name(t)]
        assert (b.outcome, b.prompt, b.task_id) == (t.outcome, t.prompt, t.task_id)
        assert [s.to_dict() for s in b.steps] == [s.to_dict() for s in t.steps]


@needs_data
def test_tau2_sample_and_round_trip(tmp_path):
    cat = load_catalog("tau2")
    table = source_table(ROOT / "tau2" / "SOURCE.md")
    trajs: list[Trajectory] = []
    for name in TAU2_SAMPLE:
        (spec,) = [r for r in cat.runs if r.glob == name]
        items = list(parse_files([ROOT / "tau2" / name], spec, "tau2"))
        errs = [i for i in items if isinstance(i, IngestError)]
        got = [i for i in items if not isinstance(i, IngestError)]
        assert not errs, errs[:3]
        assert (len(got), sum(t.outcome == 1 for t in got)) == table[name], name
        for t in got:
            assert_sane(t)
        trajs += got[:25]
    by_file = {Path(t.meta["source_file"]).name: t for t in trajs}
    # usage: unknown stays None
    assert all(
        s.input_tokens is None for s in by_file["toolorchestra_airline_gpt-5_1trial.json.gz"].steps
    )
    assert all(s.input_tokens is None for s in by_file["hd_retail_n5.json.gz"].steps)
    assert all(
        s.cost_usd is None for s in by_file["salud_mendoza_rag_throttled_full.json.gz"].steps
    )
    lin = by_file[
        "Linyxus__20260525_144020_telecom-workflow_llm_agent_deepseek-v4-flash_user_simulator_gpt-5.4__results.json.gz"
    ]
    assert lin.meta["cost_source"] == "raw-billed-cost" and any(s.cost_usd for s in lin.steps)
    solo = by_file["gpt-4.1-2025-04-14_telecom_no-user_gpt-4.1-2025-04-14_4trials_5tasks.json.gz"]
    assert solo.prompt and solo.steps[0].actions  # the ticket; no greeting in solo mode
    round_trip(trajs, tmp_path)


@needs_data
def test_toolathlon_sample_and_round_trip(tmp_path):
    cat = load_catalog("toolathlon")
    trajs: list[Trajectory] = []
    for spec in cat.runs:
        files = sorted((ROOT / spec.folder).glob(spec.glob))[:TOOLATHLON_SAMPLE]
        items = list(parse_files(files, spec, "toolathlon"))
        assert not [i for i in items if isinstance(i, IngestError)]
        for t in items:
            assert_sane(t)
            assert all(s.input_tokens is None and s.cost_usd is None for s in t.steps)
            assert t.prompt
        trajs += items
    round_trip(trajs, tmp_path)


@needs_data
def test_tau2_full_counts_match_source_table():
    cat = load_catalog("tau2")
    table = source_table(ROOT / "tau2" / "SOURCE.md")
    assert len(table) == 144 == len(cat.runs)
    trajs, reports = ingest_catalog(cat, show_progress=False)
    for rep in reports:
        (spec,) = [r for r in cat.runs if r.name == rep.run]
        assert rep.skipped == [], (rep.run, rep.skipped[:3])
        assert (rep.trajectories, rep.resolved) == table[spec.glob], spec.glob
    assert len(trajs) == 2305 and sum(t.outcome == 1 for t in trajs) == 1485
    assert len({t.run_id for t in trajs}) == 2305
    assert sum(t.outcome is None for t in trajs) == 0


@needs_data
def test_toolathlon_full_counts():
    trajs, reports = ingest_catalog(load_catalog("toolathlon"), show_progress=False)
    got = {
        r.run: (r.trajectories, r.resolved, r.unresolved, r.unlabelled, len(r.skipped))
        for r in reports
    }
    assert got == {
        "toolathlon__claude-4.5-sonnet": (108, 46, 62, 0, 0),
        "toolathlon__deepseek-v3.2-exp": (107, 20, 86, 1, 0),
    }
    (null,) = [t for t in trajs if t.outcome is None]
    assert null.task_id == "language-school"


@needs_data
def test_terminalbench_counts():
    if not (ROOT / "terminalbench").is_dir():
        pytest.skip("no terminalbench data")
    trajs, reports = ingest_catalog(load_catalog("terminalbench"), show_progress=False)
    assert sum(r.files_read for r in reports) == 333
    skipped = [s for r in reports for s in r.skipped]
    # logs with >= 1 step
    assert len(trajs) + sum("results.json" in s["field"] for s in skipped) == 171
    assert sum("no agent step" in s["reason"] for s in skipped) == 162
    assert (
        sum(t.outcome == 1 for t in trajs),
        sum(t.outcome == 0 for t in trajs),
        sum(t.outcome is None for t in trajs),
    ) == (51, 84, 35)
    for t in trajs:
        assert_sane(t)
        assert not re.search(r"\x1b\[", "".join(s.observation + s.action for s in t.steps))

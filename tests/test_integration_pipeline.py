"""The whole pipeline on a bounded sample of the real SWE-bench runs: ingest -> features -> LOAO -> report."""

from __future__ import annotations

import pytest

from earlyeval.catalog import data_root, load_catalog
from earlyeval.dataset import load_dataset
from earlyeval.evaluate import EvalConfig, loao_report, run_loao
from earlyeval.ingest import ingest_catalog
from earlyeval.tasks import load_tasks
from synth import SMALL_LGBM

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sample():
    root = data_root()
    if not (root / "swebench").exists():
        pytest.skip(f"no shared data at {root}")
    cat = load_catalog("swebench")
    trajs, reports = ingest_catalog(cat, root, show_progress=False, max_files=36)
    return trajs, load_tasks(cat, root), reports


def test_loao_report_on_real_sample(sample):
    trajs, tasks, reports = sample
    assert all(not r.skipped for r in reports)
    families = ["behaviour", "gold", "prior"]
    ds = load_dataset("swebench", families, trajs=trajs, tasks=tasks, progress=False)
    cfg = EvalConfig(families=families, min_steps=3, holdout_min_runs=30, lgbm_params=SMALL_LGBM, warm_repeats=1, n_jobs=2)
    res = run_loao(ds, cfg)
    rep = loao_report(ds, cfg, res)
    # max_files=36 per run: every run with at least 30 files is held out on its own, the OpenHands
    # CodeAct run (50 files) included; live-swe-agent and OpenHands-GUI (15 each) are small
    large = {"mini-swe-agent-1.15__gemini-3-pro", "swe-agent-0.x__gpt-4", "coder__gpt-4", "moatless-0617__gpt-4o",
             "moatless-0623__claude-3.5-sonnet", "moatless-0609__gpt-4o", "openhands-codeact-0.15__claude-3.5-sonnet"}
    assert set(rep["holdout_agents"]) == large
    assert set(rep["small_agents"]) == set(ds.agents) - large
    for a, b in rep["agents"].items():
        for key in ("auroc_success", "auroc_failure", "halted_fraction", "outcome_accuracy", "success_recall", "failure_recall",
                    "economic_consistency", "steps_saved", "resolve_rate_shift_pp", "thresholds", "oracle", "baselines"):
            assert key in b, (a, key)
        assert a not in b["threshold_selection"]["selected_on"]
    # the gemini run has per-step usage, the SWE-agent run does not: tokens saved is a number, resp. null
    assert rep["agents"]["mini-swe-agent-1.15__gemini-3-pro"]["input_tokens_saved"] is not None
    assert rep["agents"]["swe-agent-0.x__gpt-4"]["input_tokens_saved"] is None
    assert "moatless-tools" in rep["leave_one_scaffold_out"]
    assert rep["pooled"]["auroc_success"] > 0.6  # the task prior alone ranks far better than chance

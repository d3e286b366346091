"""The whole pipeline on a bounded sample of the real SWE-bench runs: ingest -> features -> LOAO -> report."""

from __future__ import annotations

import pytest
from _loao_expect import assert_agent_block_values
from synth import SMALL_LGBM

from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.dataset import load_dataset
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.holdout_groups import scaffold_of
from earlyeval.evaluation.loao_report import loao_report
from earlyeval.evaluation.loso import run_loso
from earlyeval.ingest import ingest_catalog
from earlyeval.tables.tasks import load_tasks

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
    cfg = EvalConfig(
        families=families,
        min_steps=3,
        holdout_min_runs=30,
        lgbm_params=SMALL_LGBM,
        warm_repeats=1,
        n_jobs=2,
    )
    res = run_loao(ds, cfg)
    res.loso = run_loso(ds, cfg, res.runner, res.holdout)
    rep = loao_report(ds, cfg, res)
    # max_files=36 per run: every run with at least 30 files is held out on its own, except those the catalog
    # flags small (Dataset.holdout_units, the one held-out rule): the OpenHands CodeAct run (50 files, flagged)
    # joins live-swe-agent, OpenHands-GUI (15 each) and SWE-agent 1.1 (13) in the small group
    large = {
        "mini-swe-agent-1.15__gemini-3-pro",
        "swe-agent-0.x__gpt-4",
        "coder__gpt-4",
        "moatless-0617__gpt-4o",
        "moatless-0623__claude-3.5-sonnet",
        "moatless-0609__gpt-4o",
        "moatless-0.0.4__claude-3.5-sonnet-20241022",
    }
    assert set(rep["holdout_agents"]) == large
    assert set(rep["small_agents"]) == set(ds.agents) - large
    for a, b in rep["agents"].items():
        for key in (
            "auroc_success",
            "auroc_failure",
            "halted_fraction",
            "outcome_accuracy",
            "success_recall",
            "failure_recall",
            "economic_consistency",
            "steps_saved",
            "resolve_rate_shift_pp",
            "thresholds",
            "oracle",
            "baselines",
        ):
            assert key in b, (a, key)
        assert a not in b["threshold_selection"]["selected_on"]
        # and the values: each equals the plain re-computation from the fold's predictions (tests/_loao_expect.py)
        assert_agent_block_values(
            b, res.sets[a], res.thresholds[a], res.oracle_thresholds[a], cfg.min_halt_step
        )
    # the gemini run has per-step usage, the SWE-agent run does not: tokens saved is a number, resp. null
    assert rep["agents"]["mini-swe-agent-1.15__gemini-3-pro"]["input_tokens_saved"] is not None
    assert rep["agents"]["swe-agent-0.x__gpt-4"]["input_tokens_saved"] is None
    assert "moatless-tools" in rep["leave_one_scaffold_out"]
    # leave-one-scaffold-out holds out every scaffold with a large agent, its thresholds chosen on the others
    for sc, blk in rep["leave_one_scaffold_out"].items():
        assert sc not in blk["thresholds"]["selected_on"]
        assert set(blk["agents"]) == {a for a in ds.agents if scaffold_of(ds)[a] == sc}
    assert rep["pooled"]["auroc_success"] > 0.6  # the task prior alone ranks far better than chance


def test_real_prior_rows_are_dated_and_steps_saved_splits(sample):
    """On the real runs: every run's prior counts exactly the submissions dated before its catalog date, minus its
    own scaffold x model (brute force over the table); the current-pool block counts more; saved = skip + in-run."""
    from earlyeval.features.prior import default_match_patterns

    trajs, tasks, _ = sample
    ds = load_dataset("swebench", ["prior"], trajs=trajs, tasks=tasks, progress=False)
    dates = {r.agent: r.date for r in load_catalog("swebench").runs}
    table = ds.prior_table
    names = ds.block_names["prior"]
    j_rate, j_n = names.index("prior_solve_rate"), names.index("prior_n_submissions")
    first = ds.prefixes.groupby("run").head(1)
    checked = 0
    for k, row in first.iterrows():
        i, ctx = int(row["run"]), ds.contexts[int(row["run"])]
        assert ctx.as_of == dates[ds.trajs[i].agent] != ""
        pats = list(ctx.prior_match) or default_match_patterns(ctx.scaffold, ctx.model)
        own = table.excluded(list(ctx.exclude_submissions), pats)
        split = ctx.split or str(ctx.task.meta.get("split", ""))
        pool = [
            n
            for n, s in table.submissions.items()
            if s["split"] == split and n not in own and s["date"] and s["date"] < ctx.as_of
        ]
        assert ds.blocks["prior"][k, j_n] == len(pool)
        if ctx.task.task_id in table.resolved_by and pool:
            solved = set(table.resolved_by[ctx.task.task_id])
            assert ds.blocks["prior"][k, j_rate] == pytest.approx(
                sum(n in solved for n in pool) / len(pool), abs=1e-6
            )
        assert ds.blocks["prior@current_pool"][k, j_n] >= len(pool)
        checked += 1
    assert checked > 200
    cfg = EvalConfig(
        families=["behaviour", "gold", "prior"],
        min_steps=3,
        holdout_min_runs=30,
        lgbm_params=SMALL_LGBM,
        warm_repeats=1,
        n_jobs=2,
    )
    ds2 = load_dataset("swebench", cfg.families, trajs=trajs, tasks=tasks, progress=False)
    rep = loao_report(ds2, cfg, run_loao(ds2, cfg, with_small=False), light=True)
    for b in list(rep["agents"].values()) + [rep["pooled"]]:
        assert b["steps_saved"] == pytest.approx(
            b["steps_saved_task_skip"] + b["steps_saved_in_run"], abs=1e-12
        )

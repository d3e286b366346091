"""In ``earlyeval score``: a halt at step 1 is a task skip (only under a model trained with task skips on), and
score.json, per_run.csv and the printed summary say so ("task prior"); a halt later in the run says "outcome
rule". The success halts here rest on the test-only evidence rule "any action" (tests/_monitor_helpers.py)."""

from __future__ import annotations

import csv
import json

from _monitor_helpers import constant_model, make_runs, make_tasks

from earlyeval.model.policy import OUTCOME_RULE, TASK_PRIOR
from earlyeval.report.score_table import score_table
from earlyeval.workflows.export import export_runs
from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_csv import CSV_COLUMNS
from earlyeval.workflows.score_options import ScoreOptions


def _score(tmp_path, min_halt_step: int, task_skips: bool = False):
    model = constant_model(
        tmp_path / f"m{min_halt_step}",
        0.8,
        {
            "success": 0.6,
            "failure": 2.0,
            "min_halt_step": min_halt_step,
            "task_skips": task_skips,
            "success_evidence": "test-any-action",
        },
    )
    runs = make_runs(10, seed=3, agents=("agent-a",))
    export_runs(runs, tmp_path / "atif", fmt="atif")
    paths = score_runs(
        model,
        tmp_path / "atif",
        ScoreOptions("atif", out=tmp_path / f"out{min_halt_step}", force=True),
        tasks=make_tasks(12),
        progress=False,
    )
    with open(paths["csv"]) as f:
        return json.loads(paths["score"].read_text()), list(csv.DictReader(f))


def test_a_step_1_halt_is_a_task_prior_halt_in_score_json_per_run_csv_and_the_summary(tmp_path):
    rep, rows = _score(tmp_path, 1, task_skips=True)
    assert "halt_rule" in CSV_COLUMNS and tuple(rows[0]) == CSV_COLUMNS
    assert rep["n_halted"] == 10 and rep["halted_by_rule"] == {TASK_PRIOR: 10}
    assert all(r["halted_step"] == "1" and r["halt_rule"] == TASK_PRIOR for r in rows)
    assert all(r["halt_rule"] == TASK_PRIOR and TASK_PRIOR in r["reason"] for r in rep["per_run"])
    first = score_table(rep).splitlines()[0]
    assert "10 halted (10 on the task prior alone: a task skip, the run itself unread)" in first


def test_a_later_halt_is_an_outcome_rule_halt(tmp_path):
    rep, rows = _score(tmp_path, 2)
    assert rep["halted_by_rule"] == {OUTCOME_RULE: 10}
    assert all(r["halt_rule"] == OUTCOME_RULE for r in rows)
    assert "task prior" not in score_table(rep).splitlines()[0]


def test_the_default_policy_never_halts_at_step_1(tmp_path):
    rep, rows = _score(tmp_path, 1)  # min_halt_step 1, but task skips off
    assert rep["halted_by_rule"] == {OUTCOME_RULE: 10}
    assert all(r["halted_step"] == "2" for r in rows)

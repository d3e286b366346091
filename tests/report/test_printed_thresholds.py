"""A side that never halts is printed "off", never as the number the batch maths uses for it (issue 44 item 1): the
score summary, its what-if frontier, the pass line, the LOAO table and the report page all print a threshold
through ``core.decision.threshold_text``; the numbers stay numbers in the reports themselves."""

from __future__ import annotations

import re

from earlyeval.core.decision import NEVER, threshold_text
from earlyeval.report.page_rules import pair_text
from earlyeval.report.reporting import loao_table
from earlyeval.report.score_table import pass_line, score_table, what_if_table

OFF_SUCCESS = {"success": NEVER, "failure": 0.95, "min_halt_step": 1}
NUMBER = re.compile(r"(?<![\d.])10(\.0+)?(?![\d.])")


def _row(ts: float, tf: float) -> dict:
    return {
        "tau_s": ts,
        "tau_f": tf,
        "halted_fraction": 0.5,
        "halted_accuracy": 0.9,
        "outcome_accuracy": 0.9,
        "steps_saved": 0.3,
        "steps_saved_task_skip": 0.12,
        "steps_saved_in_run": 0.18,
        "resolve_rate_shift_pp": 0.0,
        "cost_usd_saved": None,
    }


def test_threshold_text_is_off_for_a_side_that_never_halts():
    assert [threshold_text(t) for t in (NEVER, 2.0, None, 0.9, 1.0)] == [
        "off",
        "off",
        "off",
        "0.9",
        "1",
    ]
    assert threshold_text(0.95, ".2f") == "0.95" and threshold_text(0.95, "") == str(0.95)


def test_every_printed_threshold_says_off():
    report = {
        "thresholds": OFF_SUCCESS,
        "n_trajectories": 2,
        "n_labelled": 0,
        "n_halted": 0,
        "skipped": [],
        "per_run": [],
        "as_of": "all submissions",
    }
    first = score_table(report).splitlines()[0]
    assert "thresholds success=off failure=0.95" in first and not NUMBER.search(first)
    grid = [_row(NEVER, 0.95), _row(0.9, NEVER)]
    table = what_if_table(
        {"taus": [0.9, NEVER], "runs": 2, "frontier": grid, "grid": grid}, OFF_SUCCESS
    )
    assert re.search(r"\*\s+off\s+0\.95", table) and re.search(r"0\.9\s+off", table)
    assert not NUMBER.search(table)
    seq = {"label_free": [NEVER, 0.95], "thresholds_history": [{"thresholds": [NEVER, 0.9]}]}
    line = pass_line(
        {
            **seq,
            "seed": 0,
            "workers": 1,
            "n_audited": 0,
            "n_audited_graded": 0,
            "audit_share": 0.1,
            "n_halted": 0,
            "status": "ok",
            "savings": {"steps_saved_fraction": None, "steps_saved": 0, "steps_total": 0},
        }
    )
    assert "off/0.95 -> off/0.9" in line and not NUMBER.search(line)
    loao = loao_table({"agents": {"a": {"n_runs": 3, "thresholds": OFF_SUCCESS}}, "pooled": {}})
    row = next(ln for ln in loao.splitlines() if ln.startswith("a "))
    assert row.split()[-2:] == ["off", "0.95"]
    assert pair_text(OFF_SUCCESS) == "off / 0.95" and pair_text({"success": 0.9}) == "0.9 / –"

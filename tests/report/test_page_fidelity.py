"""The report page's fidelity section shows each protocol's fidelity block, the policies apart from the default
and the forecast check, as loao.json states them (nothing recomputed), and says so where a block is absent."""

from __future__ import annotations

import json

from earlyeval.report.page_fidelity import section_fidelity
from earlyeval.report.page_inputs import Inputs

FIDELITY = {
    "regressions": {
        "summary": {
            "cells_within_2pp": 83,
            "cells": 84,
            "max_abs_error_pp": 2.4,
            "min_measured_over_true_drop": 0.875,
            "max_all_broken_rate": 0.0,
        }
    },
    "improvements": {
        "summary": {
            "cells_at_least_90pct": 25,
            "cells": 28,
            "max_abs_error_pp": 1.3,
            "min_measured_over_true_gain": 0.5,
        }
    },
    "real_pairs": {
        "n_pairs": 55,
        "significant_pairs": 18,
        "sign_agrees_on_significant": "18/18",
        "share_within_2pp": 0.673,
        "rank_correlation": 0.88,
    },
}


def _pooled(saved: float) -> dict:
    return {"halted_accuracy": 0.981, "steps_saved": saved, "resolve_rate_shift_pp": -0.1}


def test_the_section_states_the_blocks_of_loao_json(tmp_path):
    rdir = tmp_path / "reports" / "b"
    rdir.mkdir(parents=True)
    pooled = {
        **_pooled(0.268),
        "failure_only": _pooled(0.194),
        "task_skips": {**_pooled(0.260), "steps_saved_task_skip": 0.102},
    }
    check = {"agents_within": 5, "agents_checked": 7, "agents_within_or_warned": 6}
    rep = {
        "protocols": {
            "as_of": {"fidelity": FIDELITY, "pooled": pooled, "forecast_check": check},
            "peer": {"pooled": _pooled(0.038)},
        }
    }
    (rdir / "loao.json").write_text(json.dumps(rep))
    html = str(section_fidelity(Inputs("b", rdir, tmp_path / "features" / "b")))
    for text in (
        "83 of 84 within 2 pp",
        "25 of 28 ≥ 90 % of the gain",
        "within 2 pp: 67.3 %",
        "26.8 %",
        "19.4 %",
        "10.2 %",
        "5 of 7",
        "no fidelity block in this protocol",  # peer has none here: said, not hidden
    ):
        assert text in html, text
    assert "<h3>peer</h3>" in html and "<h3>as_of</h3>" in html

"""Human-facing summaries of the JSON reports, and prediction dumps for the sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from earlyeval.config.catalog import load_catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.atomic import atomic_path
from earlyeval.core.decision import threshold_text
from earlyeval.features import KNOWN_DIRECTIONS
from earlyeval.fitting.metrics import OPEN

GOLD_DEEP = (
    "gold_symbols_*",
    "gold_idents_*",
    "gold_removed_*",
    "gold_added_*",
    "edits_in_gold_hunks",
    "f2p_*",
    "since_f2p_run",
    "test_patch_file_seen",
    "diff_*",
    "since_diff_seen",
)
RAW_SCALE = (
    "step",
    "log_*",
    "n_edit",
    "n_test",
    "files_edited",
    "edit_actions",
    "n_submit",
    "n_test_summaries",
    "n_syntax_error",
    "reverts",
)
RELATIVE = ("share_*", "recent_share_*", "*_rel", "since_*", "edits_per_file")
TEST_SIGNALS = (
    "last_test_*",
    "test_after_*",
    "ever_passed_after_edit",
    "n_test_summaries",
    "since_test_summary",
)
# trajectory evidence that settles an outcome without a rich public history (issue 14, gold family)
EVIDENCE = (
    "edits_off_gold_only",
    "since_last_gold_edit_rel",
    "f2p_passed_after_last_edit",
    "f2p_failed_after_last_edit",
)


def default_ablations(bench: str, cfg: EvalConfig) -> list[tuple[str, dict[str, Any]]]:
    """Each feature family on and off, then each transfer lever of the issue on and off."""

    available = load_catalog(bench).families
    out: list[tuple[str, dict[str, Any]]] = []
    for fam in available:
        if fam in cfg.families:
            rest = [f for f in cfg.families if f != fam]
            if rest:
                out.append((f"no_{fam}", {"families": rest}))
        else:
            out.append((f"with_{fam}", {"families": cfg.families + [fam]}))
    if cfg.families != ["behaviour"] and "behaviour" in available:
        out.append(("behaviour_only", {"families": ["behaviour"]}))
    if "gold" in cfg.families:
        out.append(("gold_file_level_only", {"drop_features": GOLD_DEEP}))
        out.append(("no_trajectory_evidence", {"drop_features": EVIDENCE}))
    if "prior" in cfg.families:
        # under as_of the pool size tracks the run's date, hence the agent's era: a level-shift proxy
        out.append(("no_prior_n_submissions", {"drop_features": ("prior_n_submissions",)}))
    if "behaviour" in cfg.families:
        out.append(("behaviour_raw_scale_only", {"drop_features": RELATIVE}))
        out.append(("behaviour_relative_only", {"drop_features": RAW_SCALE}))
        out.append(("no_test_signals", {"drop_features": TEST_SIGNALS}))
    out.append(("adapt_em", {"adapt": "em"}))
    out.append(("monotone", {"monotone": dict(KNOWN_DIRECTIONS)}))
    out.append(
        (
            f"min_steps_{3 if cfg.min_steps != 3 else 10}",
            {"min_steps": 3 if cfg.min_steps != 3 else 10},
        )
    )
    other = "accuracy" if cfg.constraint == "recall" else "recall"
    out.append((f"constraint_{other}", {"constraint": other}))
    if cfg.confidence is not None:
        out.append(("no_confidence_bound", {"confidence": None}))
    out.append(("twin_flipped", {"twin": "flipped"}))
    out.append(("twin_balanced", {"twin": "balanced"}))
    return out


def _fmt(x: Any, pct: bool = False) -> str:
    if x is None:
        return "   -  "
    if isinstance(x, float) and np.isnan(x):
        return "   -  "
    return f"{100 * x:6.1f}" if pct else f"{x:6.3f}"


# what every column of the printed tables (loao_table, score_table.score_table) means: one place
COLUMNS: dict[str, str] = {
    "runs": "labelled runs scored",
    "rate": "true resolve rate %",
    "rate%": "true resolve rate",
    "AUROC": "P(success) ranking quality over every prefix",
    "halt%": "runs halted",
    "hAcc%": "accuracy of the halted runs' predictions",
    "oAcc%": "outcome accuracy over all runs (a completed run keeps its own outcome)",
    "saved%": "steps saved",
    "skip%": "steps saved by halts at t<=1 (task skip)",
    "inrun%": "steps saved by halts at t>=2 (predicted from the trajectory)",
    "shift": "predicted minus true resolve rate, in points",
    "τs": "success threshold of the agent's fold",
    "τf": "failure threshold of the agent's fold",
}


def legend(header: str) -> str:
    """One line explaining every column of a table header (the first column, the row name, excepted)."""
    return "columns: " + "; ".join(f"{c} = {COLUMNS[c]}" for c in header.split()[1:])


def loao_table(rep: dict[str, Any]) -> str:
    hdr = f"{'agent':<44} {'runs':>5} {'rate':>6} {'AUROC':>6} {'halt%':>6} {'hAcc%':>6} {'oAcc%':>6} {'saved%':>6} {'shift':>6} {'τs':>5} {'τf':>5}"
    lines = [hdr, "-" * len(hdr)]

    def row(name: str, b: dict[str, Any], th: dict[str, float] | None) -> str:
        ts = threshold_text(th["success"], ".2f") if th else "  -  "
        tf = threshold_text(th["failure"], ".2f") if th else "  -  "
        return (
            f"{name[:44]:<44} {b.get('n_runs', 0):>5} {_fmt(b.get('resolve_rate'), True)} {_fmt(b.get('auroc_success'))} "
            f"{_fmt(b.get('halted_fraction'), True)} {_fmt(b.get('halted_accuracy'), True)} {_fmt(b.get('outcome_accuracy'), True)} "
            f"{_fmt(b.get('steps_saved'), True)} {b.get('resolve_rate_shift_pp', 0):6.1f} {ts:>5} {tf:>5}"
        )

    for a, b in rep["agents"].items():
        lines.append(row(a + (" (small)" if b.get("small_n") else ""), b, b.get("thresholds")))
    lines.append(row("POOLED (held-out agents)", rep["pooled"], None))
    lines.append(row("oracle pooled (own labels; not honest)", rep.get("oracle_pooled", {}), None))
    for name, b in rep.get("baselines", {}).items():
        lines.append(row(f"baseline {name}", b, None))
    for s, blk in rep.get("leave_one_scaffold_out", {}).items():
        lines.append(
            row(f"leave-one-scaffold-out: {s}", blk.get("pooled", {}), blk.get("thresholds"))
        )
    lines.append(legend(hdr))
    lines.append(f"spearman(predicted vs true resolve rate) = {rep.get('spearman')}")
    if rep.get("ablations"):
        lines.append("\nablations (pooled over held-out agents):")
        lines.append(
            f"{'name':<28} {'meanAUROC':>9} {'hAcc%':>6} {'oAcc%':>6} {'saved%':>6} {'|shift|':>7}"
        )
        for ab in rep["ablations"]:
            p = ab["pooled"]
            lines.append(
                f"{ab['name']:<28} {_fmt(ab['mean_auroc']):>9} {_fmt(p.get('halted_accuracy'), True)} "
                f"{_fmt(p.get('outcome_accuracy'), True)} {_fmt(p.get('steps_saved'), True)} {ab.get('mean_abs_resolve_rate_shift_pp') or 0:7.2f}"
            )
    return "\n".join(lines)


def write_predictions(res: Any, path: Path) -> Path:
    """Every held-out prefix prediction with the thresholds its agent was evaluated with, and the prefix's gate
    (``features.evidence``: an action read, the run's own success evidence) that the halting rule reads."""
    rows = []
    for agent, rs in res.sets.items():
        th = res.thresholds[agent]
        for i, (rid, y, T, ps, pf) in enumerate(zip(rs.run_ids, rs.y, rs.T, rs.p_s, rs.p_f)):
            gates = rs.gates[i] if rs.gates else np.full(len(ps), OPEN, dtype=np.int8)
            for t, (a, b, g) in enumerate(zip(ps, pf, gates), start=1):
                rows.append(
                    (
                        agent,
                        rid,
                        int(t),
                        int(T),
                        int(y),
                        float(a),
                        float(b),
                        th["success"],
                        th["failure"],
                        agent in res.small,
                        int(g),
                    )
                )
    df = pd.DataFrame(
        rows,
        columns=[
            "agent",
            "run_id",
            "t",
            "T",
            "y",
            "p_success",
            "p_failure",
            "tau_s",
            "tau_f",
            "small",
            "gate",
        ],
    )
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False)
    return path

"""The per-run CSV of ``earlyeval score`` (one row per run: halt, prediction, label, tokens and dollars), apart from the scoring."""

from __future__ import annotations

from typing import Any

# audited: 1/0 under `score --pass` (an audit run, never halted), empty otherwise
CSV_COLUMNS = (
    "run_id",
    "agent",
    "format",
    "task_id",
    "steps",
    "halted_step",
    "halt_rule",
    "predicted",
    "recorded_outcome",
    "true_label",
    "p_success_at_halt",
    "p_failure_at_halt",
    "input_tokens_spent",
    "input_tokens_saved",
    "output_tokens_spent",
    "output_tokens_saved",
    "cost_usd_spent",
    "cost_usd_saved",
    "cost_source",
    "audited",
)


def per_run_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per run: where it halted, what was recorded (the prediction if halted, else the run's own
    outcome), its true label, and the tokens/dollars spent and saved (empty = unknown)."""
    lab = {1: "success", 0: "failure", None: ""}
    rows = []
    for r in records:
        u = r.get("usage") or {}
        recorded = r["predicted"] if r["halted"] else lab[r["outcome"]]
        row = {
            "run_id": r["run_id"],
            "agent": r["agent"],
            "format": r.get("format", ""),
            "task_id": r["task_id"],
            "steps": r["n_steps"],
            "halted_step": r["halt_t"] if r["halted"] else "",
            "halt_rule": (r.get("halt_rule") or "") if r["halted"] else "",
            "predicted": r["predicted"] or "",
            "recorded_outcome": recorded,
            "true_label": lab[r["outcome"]],
            "p_success_at_halt": "" if r["p_success_at_halt"] is None else r["p_success_at_halt"],
            "p_failure_at_halt": "" if r["p_failure_at_halt"] is None else r["p_failure_at_halt"],
        }
        for dim in ("input_tokens", "output_tokens", "cost_usd"):
            d = u.get(dim)
            row[f"{dim}_spent"] = "" if d is None else d["spent"]
            row[f"{dim}_saved"] = "" if d is None else d["saved"]
        row["cost_source"] = (u.get("cost_usd") or {}).get("source", "")
        row["audited"] = "" if r.get("audited") is None else int(r["audited"])
        rows.append(row)
    return rows


def csv_text(records: list[dict[str, Any]]) -> str:
    """The CSV's text (``score.write_outputs`` writes it together with score.json)."""
    import csv
    import io

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(CSV_COLUMNS), lineterminator="\n")
    w.writeheader()
    w.writerows(per_run_rows(records))
    return buf.getvalue()

"""The report page's fidelity section: does the early-stopped score follow the agent? Per protocol, loao.json's
``fidelity`` block (synthetic regressions and improvements, real pairs), the policies apart from the default
(live failure-only, task skips) and the forecast a model states when it is trained, against what happened."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup

from earlyeval.report.html import join, legend, note, num, pct, signed, table, tag
from earlyeval.report.page_inputs import Inputs

FIDELITY_LEGEND = {
    "regressions": "each held-out agent with k % of its runs replaced by broken runs (cut after 1-3 steps, "
    "a loop on one command, empty), seeded: the early-stopped resolve rate against the true one",
    "improvements": "an agent's failed runs swapped for another agent's successful runs on the same task",
    "drop / gain measured": "the measured change over the true change (1 = the score moved as the agent did)",
    "real pairs": "every pair of held-out agents on their common tasks: early-stopped against full-run "
    "difference in resolve rate (McNemar at 5 %)",
    "failure-only": "the live default (halt_on: failure) with its own thresholds and guarantee",
    "task skips": "halts at t ≤ 1 on the task alone: off by default; what turning them on would add",
}


def _summary_rows(fid: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    reg = (fid.get("regressions") or {}).get("summary") or {}
    imp = (fid.get("improvements") or {}).get("summary") or {}
    pairs = fid.get("real_pairs") or {}
    return [
        (
            "",
            [
                "regressions",
                f"{reg.get('cells_within_2pp', '–')} of {reg.get('cells', '–')} within 2 pp",
                f"max |error| {signed(reg.get('max_abs_error_pp'))} pp",
                f"min drop measured {pct(reg.get('min_measured_over_true_drop'), 0)}",
                f"all broken scored {pct(reg.get('max_all_broken_rate'))}",
            ],
        ),
        (
            "",
            [
                "improvements",
                f"{imp.get('cells_at_least_90pct', '–')} of {imp.get('cells', '–')} ≥ 90 % of the gain",
                f"max |error| {signed(imp.get('max_abs_error_pp'))} pp",
                f"min gain measured {pct(imp.get('min_measured_over_true_gain'), 0)}",
                "",
            ],
        ),
        (
            "",
            [
                "real pairs",
                f"{pairs.get('n_pairs', '–')} pairs, {pairs.get('significant_pairs', '–')} significant",
                f"sign agrees on significant: {pairs.get('sign_agrees_on_significant', '–')}",
                f"within 2 pp: {pct(pairs.get('share_within_2pp'))}",
                f"rank correlation {num(pairs.get('rank_correlation')) or '–'}",
            ],
        ),
    ]


def _policy_rows(pooled: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    rows = []
    for name, blk in (
        ("benchmark (default)", pooled),
        ("live failure-only", pooled.get("failure_only") or {}),
        ("with task skips", pooled.get("task_skips") or {}),
    ):
        rows.append(
            (
                "",
                [
                    name,
                    pct(blk.get("halted_accuracy")),
                    pct(blk.get("steps_saved")),
                    pct(blk.get("steps_saved_task_skip")),
                    pct(blk.get("steps_saved_in_run")),
                    signed(blk.get("resolve_rate_shift_pp")),
                ],
            )
        )
    return rows


def _forecast(blk: dict[str, Any]) -> Markup:
    fc, check = blk.get("forecast"), blk.get("forecast_check")
    out = []
    if isinstance(fc, dict) and fc.get("sentence"):
        out.append(tag("p", f"forecast (what train states): {fc['sentence']}"))
    if isinstance(check, dict):
        out.append(
            tag(
                "p",
                f"forecast check: {check.get('agents_within', '–')} of {check.get('agents_checked', '–')} "
                "held-out agents within 5 pp of the forecast of a model that never saw them "
                f"({check.get('agents_within_or_warned', '–')} within or warned)",
            )
        )
    return join(out)


def section_fidelity(inp: Inputs) -> Markup:
    if inp.loao is None:
        return inp.missing("loao.json")
    prots = inp.loao.get("protocols") or {"as_of": inp.loao}
    out = []
    for p, blk in prots.items():
        if p == "doc" or not isinstance(blk, dict):
            continue
        parts = [tag("h3", p)]
        fid = blk.get("fidelity")
        if isinstance(fid, dict):
            parts.append(table(["check", "", "", "", ""], _summary_rows(fid)))
        else:
            parts.append(note("no fidelity block in this protocol"))
        if isinstance(blk.get("pooled"), dict):
            header = ["policy (pooled)", "halted acc", "saved", "task skip", "in-run", "shift pp"]
            parts.append(table(header, _policy_rows(blk["pooled"])))
        parts.append(_forecast(blk))
        out.append(join(parts))
    out.append(legend(FIDELITY_LEGEND))
    return join(out)

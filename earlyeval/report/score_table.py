"""The printed summary of a score.json (``earlyeval score``): a report-layer table, so scoring never imports reporting."""

from __future__ import annotations

from collections import Counter
from typing import Any

from earlyeval.core.decision import threshold_text
from earlyeval.model.policy import TASK_PRIOR
from earlyeval.report.reporting import legend


def score_table(report: dict[str, Any]) -> str:
    """A short human summary of a score.json."""
    th = report["thresholds"]
    src = report.get("thresholds_source")
    # --format auto on a folder of several formats: runs per format
    mixed = report.get("format") == "mixed"
    per_fmt = ", ".join(f"{f} {n}" for f, n in (report.get("formats") or {}).items())
    lines = [
        f"{report['n_trajectories']} runs ({report['n_labelled']} labelled"
        + (f"; {per_fmt}" if mixed else "")
        + (
            f"), shadow mode: nothing halted, {report.get('n_would_halt') or 0} would have been"
            if report.get("mode") == "shadow"
            else f"), {report['n_halted']} halted"
        )
        + _by_rule(report)
        + "; "
        f"thresholds success={threshold_text(th['success'], '')} failure={threshold_text(th['failure'], '')}"
        + (f" ({src})" if src else "")
        + f"; {len(report['skipped'])} files skipped"
    ]
    if report.get("format_detected"):
        runs = (
            ", ".join(f"{f} {n} run{'s' if n != 1 else ''}" for f, n in report["formats"].items())
            if mixed
            else ""
        )
        lines.append(
            f"format: mixed (--format auto): {runs}, each read as its own format"
            if mixed
            else f"format: {report['format']} (--format auto)"
        )
    lines.append(f"task prior as of: {as_of_line(report)}")
    lines += _agent_lines(report)
    sv = report.get("savings")
    if sv:
        lines += _savings_lines(sv)
    if report.get("mode") == "shadow":
        lines += _shadow_lines(report)
    if report.get("what_if"):
        lines.append(what_if_table(report["what_if"], th))
    if report.get("pass"):
        lines.append(pass_line(report["pass"]))
    lines += _warning_lines(report)
    return "\n".join(lines)


def _agent_lines(report: dict[str, Any]) -> list[str]:
    """The per-agent table (and the pooled row) of labelled runs; without labels, the predictions counted."""
    lines: list[str] = []
    if report.get("agents"):
        hdr = (
            f"{'agent':<44} {'runs':>5} {'rate%':>6} {'AUROC':>6} {'halt%':>6} {'hAcc%':>6} {'oAcc%':>6} {'saved%':>6} "
            f"{'skip%':>6} {'inrun%':>6} {'shift':>6}"
        )
        lines += [hdr, "-" * len(hdr)]
        rows = list(report["agents"].items()) + (
            [("POOLED", report["pooled"])] if report.get("pooled") else []
        )
        for a, b in rows:
            lines.append(
                f"{a[:44]:<44} {b.get('n_runs', 0):>5} {_pct(b.get('resolve_rate'))} {_num(b.get('auroc_success'))} "
                f"{_pct(b.get('halted_fraction'))} {_pct(b.get('halted_accuracy'))} {_pct(b.get('outcome_accuracy'))} "
                f"{_pct(b.get('steps_saved'))} {_pct(b.get('steps_saved_task_skip'))} {_pct(b.get('steps_saved_in_run'))} "
                f"{b.get('resolve_rate_shift_pp') or 0.0:6.1f}"
            )
        lines.append(legend(hdr))
    else:
        by = Counter(r["predicted"] or "continue" for r in report["per_run"])
        lines.append(
            "no labels: predictions " + ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
        )
    return lines


def _savings_lines(sv: dict[str, Any]) -> list[str]:
    """Dollars and tokens saved, or why they are unknown."""
    lines: list[str] = []
    c = sv["cost_usd"]
    if c["runs_known"]:
        lines.append(
            f"dollars: ${c['saved']:.2f} saved of ${c['total']:.2f} spent as recorded "
            f"({c['runs_known']}/{sv['runs']} runs have costs: "
            + ", ".join(f"{k} {v}" for k, v in sorted(c["sources"].items()))
            + ")"
        )
    else:
        lines.append(f"dollars: unknown (0/{sv['runs']} runs have costs)")
    for dim in ("input_tokens", "output_tokens"):
        d = sv[dim]
        lines.append(
            f"{dim.replace('_', ' ')}: "
            + (
                f"{d['saved']:.0f} saved of {d['total']:.0f} "
                f"({d['runs_known']}/{sv['runs']} runs have counts)"
                if d["runs_known"]
                else f"unknown (0/{sv['runs']} runs have counts)"
            )
        )
    return lines


def _warning_lines(report: dict[str, Any]) -> list[str]:
    """Skipped files and every warning of the scoring (cross-bench, undated, in-sample, unlabelled tasks)."""
    lines: list[str] = []
    for s in report["skipped"][:5]:
        lines.append(f"skipped {s.get('file')}: {s.get('field')}: {s.get('reason')}")
    if len(report["skipped"]) > 5:
        lines.append(f"... and {len(report['skipped']) - 5} more skipped files (see score.json)")
    for key in ("catalog_hint",):
        if report.get(key):
            lines.append(f"warning: {report[key]}")
    if (report.get("bench_check") or {}).get("warning"):
        lines.append(f"warning: cross-bench: {report['bench_check']['warning']}")
    if (report.get("as_of_detail") or {}).get("warning"):
        lines.append(f"warning: undated runs: {report['as_of_detail']['warning']}")
    ov = report.get("training_overlap") or {}
    if ov.get("warning"):  # the full text went to stderr (log) when scored
        who = [
            a
            + (
                f": {v['runs_in_training']}/{v['runs']} runs are training runs"
                if v.get("runs_in_training")
                else f": same {' / '.join(v['by'])} as {', '.join(v['training_agents'])}"
                if v.get("training_agents")
                else ""
            )
            for a, v in sorted(ov["agents"].items())
        ]
        lines.append(
            "warning: in-sample: these runs overlap the model's training data "
            f"({'; '.join(who)}; see 'training_overlap' in score.json)"
        )
    for w, n in report.get("warnings", {}).items():
        lines.append(f"warning ({n} runs): {w}")
    if report.get("not_in_label_list"):
        lines.append(
            f"warning ({len(report['not_in_label_list'])} runs): the task is in no label list, scored as a failure "
            f"(e.g. {report['not_in_label_list'][0]}; all in score.json 'not_in_label_list')"
        )
    return lines


def _by_rule(report: dict[str, Any]) -> str:
    """ " (12 on the task prior alone: a task skip, the run itself unread)" when some halts were task skips."""
    n = (report.get("halted_by_rule") or {}).get(TASK_PRIOR, 0)
    return f" ({n} on the {TASK_PRIOR} alone: a task skip, the run itself unread)" if n else ""


def as_of_line(report: dict[str, Any]) -> str:
    """Which public submissions the runs' task prior counted: a date, today's pool, or each run's own date (and how
    many runs had one)."""
    d = report.get("as_of_detail") or {}
    n = d.get("runs_dated_by")
    if not n:
        return str(report.get("as_of"))
    span = d.get("dates") or {}
    when = f", {span['first']} .. {span['last']}" if span else ""
    return (
        f"each run's own date ({n.get('catalog', 0)} runs dated by their catalog entry, {n.get('files', 0)} by their "
        f"files{when}; {n.get('none', 0)} undated: all submissions)"
    )


def what_if_table(w: dict[str, Any], current: dict[str, Any] | None = None) -> str:
    """The frontier of a what-if block as text (the current thresholds' row marked with *)."""
    hdr = (
        f"  {'tau_s':>6} {'tau_f':>6} {'halt%':>6} {'hAcc%':>6} {'oAcc%':>6} {'saved%':>6} {'skip%':>6} "
        f"{'inrun%':>6} {'shift':>6} {'$saved':>9}"
    )
    lines = [
        f"what-if: savings/accuracy frontier over {len(w['taus'])}x{len(w['taus'])} thresholds, "
        f"{w['runs']} labelled runs (off = never halt that way)",
        hdr,
    ]
    rows = list(w["frontier"])
    cur = None
    if current is not None:
        cur = next(
            (
                r
                for r in w["grid"]
                if r["tau_s"] == float(current["success"])
                and r["tau_f"] == float(current["failure"])
            ),
            None,
        )
        if cur is not None and cur not in rows:
            rows = sorted(rows + [cur], key=lambda r: r["steps_saved"] or 0)
    for r in rows:
        mark = "*" if r is cur else " "
        usd = "        -" if r.get("cost_usd_saved") is None else f"{r['cost_usd_saved']:9.2f}"
        lines.append(
            f"{mark} {threshold_text(r['tau_s'], '6g'):>6} {threshold_text(r['tau_f'], '6g'):>6} {_pct(r['halted_fraction'])} {_pct(r['halted_accuracy'])} "
            f"{_pct(r['outcome_accuracy'])} {_pct(r['steps_saved'])} {_pct(r['steps_saved_task_skip'])} "
            f"{_pct(r['steps_saved_in_run'])} {r['resolve_rate_shift_pp'] or 0.0:6.1f} {usd}"
        )
    lines.append(
        "  (* = the thresholds used; skip% = steps saved by halts at t<=1 (task skip), inrun% = by halts at t>=2; "
        "$saved = dollars saved on the runs with a known cost)"
    )
    return "\n".join(lines)


def _pct(x: float | None) -> str:
    return "     -" if x is None else f"{100 * x:6.1f}"


def _num(x: float | None) -> str:
    return "     -" if x is None else f"{x:6.3f}"


def pass_line(ps: dict[str, Any]) -> str:
    """`score --pass`: the order, workers, audit sample, thresholds' movement and the steps saved (audit at full cost)."""
    sv = ps["savings"]
    frac = (
        "" if sv["steps_saved_fraction"] is None else f" ({100 * sv['steps_saved_fraction']:.1f}%)"
    )
    seq = [tuple(ps["label_free"])] + [tuple(h["thresholds"]) for h in ps["thresholds_history"]]
    moves = " -> ".join(
        f"{threshold_text(a)}/{threshold_text(b)}"
        for i, (a, b) in enumerate(seq)
        if i == 0 or seq[i - 1] != (a, b)
    )
    return (
        f"pass: seed {ps['seed']}, {ps['workers']} workers, {ps['n_audited']} audited "
        f"({ps['n_audited_graded']} graded) of share {ps['audit_share']:g}; {ps['n_halted']} halted; "
        f"thresholds success/failure {moves}; steps saved {sv['steps_saved']}/{sv['steps_total']}{frac}, "
        f"audited runs at full cost; {ps['status']}" + _shift_text(ps)
    )


def _shift_text(ps: dict[str, Any]) -> str:
    """The pass's shift test in one clause: what it can see, and what it found."""
    st, det = ps.get("shift_test") or {}, ps.get("shift_detectable") or {}
    seen = (
        ""
        if not det
        else "; shift test: too few audited runs to see any shift"
        if det.get("share") is None
        else f"; shift test sees wrong-halt shares of {det['share']:.0%} or more"
    )
    return seen + (f"; FIRED: {st['fallback']}" if st.get("fallback") else "")


def _shadow_lines(report: dict[str, Any]) -> list[str]:
    """A shadow monitor's would-be savings and its wrong would-be halts, per agent: what decides turning
    halting on (the agents' table above is what it would have done)."""
    lines = ["shadow mode: every number above is what halting would have done; nothing was halted"]
    sv = report.get("would_have_saved")
    if sv:
        lines += [f"would have saved, {line}" for line in _savings_lines(sv)]
    for agent, a in sorted(((report.get("shadow") or {}).get("agents") or {}).items()):
        wrong = ", ".join(
            f"{w['run_id']} ({w['predicted']} at step {w['step']})" for w in a["wrong"][:5]
        )
        more = f" and {a['n_wrong'] - 5} more" if a["n_wrong"] > 5 else ""
        lines.append(
            f"{agent}: {a['would_halt']} of {a['labelled_runs']} labelled runs would have halted, "
            f"{a['n_wrong']} wrongly" + (f": {wrong}{more}" if wrong else "")
        )
    return lines

"""One self-contained HTML page a person reads, from the reports a benchmark already has.

Nothing fetched, nothing recomputed that a report states; a missing input is a note naming its command. Every
string is escaped where the page is built (``report.html``). Inputs and rules: docs/architecture.md, "The HTML
report".
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from markupsafe import Markup

from earlyeval.config.workspace import features_dir, reports_dir
from earlyeval.core import atomic
from earlyeval.report.html import CSS, esc, join, note, tag
from earlyeval.report.page_calibration import section_calibration
from earlyeval.report.page_costs import section_budget, section_dollars, section_latency
from earlyeval.report.page_fidelity import section_fidelity
from earlyeval.report.page_frontier import section_frontier
from earlyeval.report.page_halts import halt_steps, section_halts
from earlyeval.report.page_inputs import Inputs
from earlyeval.report.page_pass import section_pass
from earlyeval.report.page_results import section_results
from earlyeval.report.page_rules import section_loso, section_rules
from earlyeval.report.page_summary import section_summary
from earlyeval.report.provenance import provenance

SECTIONS = {  # id -> heading; the test checks every heading is on the page
    "summary": "Summary",
    "results": "Results by protocol",
    "fidelity": "Does the score follow the agent?",
    "rules": "Threshold rules and failure-only mode",
    "loso": "Leave-one-scaffold-out",
    "frontier": "Savings / accuracy frontier",
    "calibration": "Calibration per held-out agent",
    "halts": "Halt steps: task skip vs in-run",
    "pass": "Benchmark passes",
    "dollars": "Dollars saved",
    "budget": "Budget coverage per agent",
    "latency": "Monitor latency",
}

BUILDERS: dict[str, Callable[[Inputs], Markup]] = {
    "summary": section_summary,
    "results": section_results,
    "fidelity": section_fidelity,
    "rules": section_rules,
    "loso": section_loso,
    "frontier": section_frontier,
    "calibration": section_calibration,
    "halts": section_halts,
    "pass": section_pass,
    "dollars": section_dollars,
    "budget": section_budget,
    "latency": section_latency,
}


def render(inp: Inputs) -> str:
    """The page: every section ``esc``-ed as it is put in (markup the ``report.html`` builders made passes,
    anything else is shown as text), so no string of a report reaches the page unescaped."""
    parts = []
    for sid, title in SECTIONS.items():
        try:
            body = esc(BUILDERS[sid](inp))
        except Exception as e:  # noqa: BLE001 - one section's surprise must not cost the whole page
            body = note(
                f"this section could not be built from the reports: {type(e).__name__}: {e}",
                missing=True,
            )
        parts.append(tag("section", tag("h2", title), body, id=sid))
    nav = join(tag("a", t, href=f"#{s}") for s, t in SECTIONS.items())
    found = [
        n
        for n in (
            "loao.json",
            "sweep.csv",
            "budget.json",
            "routing.json",
            "latency.json",
            "loao_predictions.parquet",
        )
        if n not in inp.problems
    ]
    rep = inp.loao or {}
    prov = join(
        (
            tag("b", k) + " " + esc(v)
            for k, v in provenance(inp.bench, inp.loao, inp.ingest).items()
        ),
        " · ",
    )
    head = join(
        [
            tag("h1", f"earlyeval report: {inp.bench}"),
            tag("p", prov, cls="provenance"),
            tag(
                "p",
                "Leave-one-agent-out: every number about an agent comes from models that never saw that "
                f"agent's runs. Held-out agents: {len(rep.get('holdout_agents') or [])} large, "
                f"{len(rep.get('small_agents') or [])} small. Read from: {', '.join(found) or 'nothing'}.",
            ),
            tag("nav", nav),
        ]
    )
    page = tag(
        "html",
        tag(
            "head",
            Markup('<meta charset="utf-8">'),
            tag("title", f"earlyeval report: {inp.bench}"),
            tag("style", Markup(CSS)),
        ),
        tag("body", head, *parts),
        lang="en",
    )
    return f"<!DOCTYPE html>{page}\n"


def write_report(bench: str, out: Path | str | None = None) -> Path:
    """Write reports/<bench>/report.html (atomically) from whatever reports the benchmark has.  ``out``: a file,
    or a directory (an existing one, or a path ending in a separator) that gets ``report.html``."""
    rdir, fdir = reports_dir(bench), features_dir(bench)
    inp = Inputs(bench, rdir, fdir)
    dest = Path(out) if out else rdir / "report.html"
    if out and (dest.is_dir() or str(out).endswith(("/", "\\"))):
        dest = dest / "report.html"
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(dest, render(inp))
    return dest


__all__ = ["BUILDERS", "SECTIONS", "Inputs", "halt_steps", "render", "write_report"]

"""``earlyeval report``: one self-contained HTML page from the reports a benchmark has."""

from __future__ import annotations

from typing import Optional

import typer

from earlyeval.app.cli_support import say, say_outputs


def report(
    bench: str = typer.Option(
        ..., "--bench", "-b", help="Benchmark whose reports/<bench>/ to summarize."
    ),
    out: Optional[str] = typer.Option(
        None,
        "--out",
        help="Output file, or a directory (existing, or ending in /) "
        "that gets report.html (default reports/<bench>/report.html).",
    ),
) -> None:
    """One self-contained HTML page (tables, plots, legends) from the reports a benchmark already has."""
    from earlyeval.config.workspace import reports_dir
    from earlyeval.report.report_page import write_report

    rdir = reports_dir(bench, create=False)
    if not rdir.is_dir():
        have = (
            sorted(p.name for p in rdir.parent.iterdir() if p.is_dir())
            if rdir.parent.is_dir()
            else []
        )
        say(
            f"error: --bench {bench}: no reports in {rdir} (run `earlyeval evaluate --bench {bench}` first); "
            f"benchmarks with reports: {', '.join(have) or 'none'}",
            err=True,
        )
        raise typer.Exit(2)
    say_outputs(report=write_report(bench, out))

"""``earlyeval export``: ingested runs written in an interchange format (ATIF)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import bench_option, say, say_outputs, setup_logging, verbose_option
from earlyeval.app.options import bad_value


def export(
    ctx: typer.Context,
    bench: str = bench_option(help="An ingested benchmark (data/<bench>/trajectories.parquet)."),
    fmt: str = typer.Option("atif", "--format", "-f", help="Output format (atif)."),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Output folder (default data/<bench>/export-<format>)."
    ),
    run: Optional[list[str]] = typer.Option(None, "--run", help="Only these run ids (repeatable)."),
    verbose: bool = verbose_option(),
) -> None:
    """Write ingested runs in an interchange format (ATIF v1.8, Harbor trial layout)."""
    from earlyeval.tables.store import bench_dir, read_ingested_trajectories
    from earlyeval.workflows.export import export_runs

    setup_logging(verbose, ctx)
    if fmt != "atif":
        raise bad_value(f"unknown output format {fmt!r}; valid: atif", param_hint="'--format'")
    trajs = read_ingested_trajectories(bench)
    if run:
        trajs = [t for t in trajs if t.run_id in set(run)]
    dest = out or bench_dir(bench) / f"export-{fmt}"
    written = export_runs(trajs, dest, fmt=fmt)
    say(f"wrote {len(written)} runs")
    say_outputs(folder=dest)

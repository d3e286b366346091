"""``earlyeval sweep``: the savings/accuracy frontier over thresholds."""

from __future__ import annotations

import typer

from earlyeval.app.cli_support import (
    bench_option,
    progress_line,
    say_outputs,
    setup_logging,
    verbose_option,
)


def sweep(
    ctx: typer.Context, bench: str = bench_option(), verbose: bool = verbose_option()
) -> None:
    """Savings/accuracy frontier over thresholds, label-free and warm-start; writes sweep.csv and a PNG."""
    from earlyeval.workflows.sweep import sweep_bench

    setup_logging(verbose, ctx)
    paths = sweep_bench(bench, progress=progress_line)
    say_outputs(**{k: str(v) for k, v in paths.items()})

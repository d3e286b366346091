"""``earlyeval route``: stop / escalate policies over real runs of two agents (``workflows.routing``)."""

from __future__ import annotations

from typing import Optional

import typer

from earlyeval.app.cli_support import (
    bench_option,
    progress_line,
    say_outputs,
    setup_logging,
    verbose_option,
)


def route(
    ctx: typer.Context,
    bench: str = bench_option("swebench"),
    cheap: str = typer.Option(..., "--cheap", help="Agent that starts every task."),
    strong: str = typer.Option(..., "--strong", help="Agent a task is escalated to."),
    budget_usd: Optional[float] = typer.Option(
        None, "--budget", help="Total budget B for one benchmark pass."
    ),
    verbose: bool = verbose_option(),
) -> None:
    """Simulate stop / escalate policies over real runs of two agents on the same tasks."""
    from earlyeval.app.stages.route import route_bench

    setup_logging(verbose, ctx)
    paths = route_bench(bench, cheap, strong, budget_usd=budget_usd, progress=progress_line)
    say_outputs(**{k: str(v) for k, v in paths.items()})

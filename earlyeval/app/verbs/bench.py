"""``earlyeval bench``: the latency of ``Monitor.observe`` on real runs (``workflows.benchmark``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import (
    JSON_HELP,
    bench_option,
    print_json,
    say,
    say_outputs,
    setup_logging,
    verbose_option,
)


def bench(
    ctx: typer.Context,
    bench: str = bench_option("swebench"),
    model: Optional[Path] = typer.Option(
        None, "--model", "-m", help="Model directory (default models/<bench>)."
    ),
    budget: str = typer.Option(
        "default",
        "--budget",
        help="Budget dimensions the Monitor computes: default (steps), all, none, or a comma list.",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    verbose: bool = verbose_option(),
) -> None:
    """Latency of Monitor.observe() on real trajectories (one core): median, p99, step 10 vs step 100."""
    from earlyeval.workflows.benchmark import run_latency_bench
    from earlyeval.workflows.latency_report import latency_summary

    setup_logging(verbose, ctx)
    from earlyeval.live.remaining_budget import DEFAULT_BUDGET_DIMS

    dims: bool | list[str] = (
        list(DEFAULT_BUDGET_DIMS)
        if budget == "default"
        else True
        if budget == "all"
        else False
        if budget == "none"
        else [d.strip() for d in budget.split(",") if d.strip()]
    )
    paths = run_latency_bench(bench, model, budget=dims)
    rep = json.loads(Path(paths["latency"]).read_text())
    if as_json:
        print_json(rep)
        say_outputs(err=True, **{k: str(v) for k, v in paths.items()})
        return
    say(latency_summary(rep))
    say_outputs(**{k: str(v) for k, v in paths.items()})

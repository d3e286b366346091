"""``earlyeval transfer``: fit on one benchmark, evaluate on another (``workflows.transfer``)."""

from __future__ import annotations

from pathlib import Path

import typer

from earlyeval.app.cli_support import (
    JSON_HELP,
    SEED_HELP,
    progress_line,
    say,
    say_outputs,
    setup_logging,
    verbose_option,
)
from earlyeval.app.options import check_bench


def transfer(
    ctx: typer.Context,
    train: str = typer.Option(
        ..., "--train", help="Source benchmark (trained on).", callback=check_bench
    ),
    test: str = typer.Option(
        ..., "--test", help="Target benchmark (evaluated on).", callback=check_bench
    ),
    families: str = typer.Option(
        "behaviour", "--families", help="Comma-separated families present on both sides."
    ),
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    verbose: bool = verbose_option(),
) -> None:
    """Cross-benchmark transfer: fit on every agent of one benchmark, evaluate on every agent of another."""
    from earlyeval.workflows.transfer import transfer_bench

    setup_logging(verbose, ctx)
    paths = transfer_bench(
        train,
        test,
        [f.strip() for f in families.split(",") if f.strip()],
        seed,
        progress=progress_line,
    )
    if as_json:
        say(Path(paths["report"]).read_text())
        say_outputs(err=True, **{k: str(v) for k, v in paths.items()})
        return
    say(Path(paths["table"]).read_text())
    say_outputs(**{k: str(v) for k, v in paths.items()})

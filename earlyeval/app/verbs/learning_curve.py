"""``earlyeval learning-curve``: held-out AUROC and savings against the number of training agents."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import (
    SEED_HELP,
    DataRoot,
    bench_option,
    progress_line,
    say_outputs,
    setup_logging,
    verbose_option,
)


def learning_curve(
    ctx: typer.Context,
    bench: str = bench_option(),
    data_root: Optional[Path] = DataRoot,
    subsets: int = typer.Option(
        2, "--subsets", min=1, help="Training-agent subsets drawn per size k."
    ),
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    verbose: bool = verbose_option(),
) -> None:
    """Held-out AUROC and steps saved against the number of training agents; writes learning_curve.json and a PNG."""
    from earlyeval.app.stages.learning_curve import learning_curve_bench

    setup_logging(verbose, ctx)
    paths = learning_curve_bench(
        bench, data_root, subsets=subsets, seed=seed, progress=progress_line
    )
    say_outputs(**{k: str(v) for k, v in paths.items()})

"""``earlyeval budget``: the remaining-budget evaluation, ``reports/<bench>/budget.json`` and its figures."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import (
    DataRoot,
    bench_option,
    progress_line,
    say_outputs,
    setup_logging,
    verbose_option,
)


def budget(
    ctx: typer.Context,
    bench: str = bench_option(),
    data_root: Optional[Path] = DataRoot,
    verbose: bool = verbose_option(),
) -> None:
    """Remaining-budget intervals (conformalized), feasibility under a budget, early stop on "impossible"."""
    from earlyeval.app.stages.budget import budget_bench

    setup_logging(verbose, ctx)
    paths = budget_bench(bench, root=data_root, progress=progress_line)
    say_outputs(**{k: str(v) for k, v in paths.items()})

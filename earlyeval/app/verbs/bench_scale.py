"""``earlyeval bench-scale``: wall time and peak memory per stage at 1x/10x/100x the runs (``app.scale_bench``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import (
    DataRoot,
    bench_option,
    say,
    say_outputs,
    setup_logging,
    verbose_option,
)
from earlyeval.app.options import bad_value


def bench_scale(
    ctx: typer.Context,
    bench: str = bench_option("swebench"),
    factors: str = typer.Option(
        "1,10,100", "--factors", help="Comma list of copies of every run to measure at."
    ),
    workers: int = typer.Option(
        2, "--workers", help="Worker processes of the LocalCluster measured beside in-process."
    ),
    stages: str = typer.Option(
        "ingest,featurize,train,evaluate", "--stages", help="Comma list of stages to measure."
    ),
    max_seconds: float = typer.Option(
        3600.0,
        "--max-seconds",
        help="Do not run a point predicted (from the exponent so far) to take longer.",
    ),
    data_root: Optional[Path] = DataRoot,
    tmp: Optional[Path] = typer.Option(
        None,
        "--tmp",
        help="Where the replicated runs are written (default: the "
        "system's temporary directory; never inside the repository).",
    ),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Output folder (default reports/<bench>/)."
    ),
    keep: bool = typer.Option(
        False, "--keep", help="Keep the replicated data sets and their workspaces."
    ),
    verbose: bool = verbose_option(),
) -> None:
    """Wall time and peak memory per stage at 1x/10x/100x the runs, in-process and on a LocalCluster side by side."""
    from earlyeval.app.scale_bench import bench_scale as run_bench
    from earlyeval.app.scale_measure import STAGES
    from earlyeval.app.scale_report import summary, write
    from earlyeval.config.workspace import reports_dir

    setup_logging(verbose, ctx)
    fs = tuple(int(x) for x in factors.split(",") if x.strip())
    st = tuple(x.strip() for x in stages.split(",") if x.strip())
    bad = [x for x in st if x not in STAGES]
    if bad or not fs or min(fs) < 1:
        raise bad_value(
            f"stages must be among {', '.join(STAGES)} and factors >= 1",
            param_hint="'--stages'/'--factors'",
        )
    say(
        "earlyeval bench-scale: larger sets are replicated copies of the real runs under new run ids"
    )
    points = run_bench(bench, fs, workers, st, max_seconds, data_root, tmp, keep, say=typer.echo)
    say("\n".join(summary(points)))
    say_outputs(**{k: str(v) for k, v in write(points, out or reports_dir(bench)).items()})

"""``earlyeval ingest``: every run of a catalog read into the store, and a table of what was read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import (
    JSON_HELP,
    DataRoot,
    backend_for,
    bench_option,
    print_json,
    say,
    say_outputs,
    scheduler_option,
    setup_logging,
    verbose_option,
)


def ingest(
    ctx: typer.Context,
    bench: str = bench_option(),
    data_root: Optional[Path] = DataRoot,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    scheduler: Optional[str] = scheduler_option(),
    verbose: bool = verbose_option(),
) -> None:
    """Read every run of the catalog in its native format; write normalized parquet and an ingest report."""
    from earlyeval.app.stages.ingest import ingest_bench

    setup_logging(verbose, ctx)
    with backend_for(scheduler) as backend:
        out = ingest_bench(bench, data_root, backend=backend)
    rep = json.loads(Path(out["report"]).read_text())
    if as_json:
        print_json(rep)
        say_outputs(err=True, **{k: str(v) for k, v in out.items()})
        return
    say(f"{'run':<72} {'traj':>5} {'res':>4} {'unres':>5} {'nolist':>6} {'unlab':>5} {'skip':>4}")
    for r in rep["runs"]:
        say(
            f"{r['run'][:72]:<72} {r['trajectories']:>5} {r['resolved']:>4} {r['unresolved']:>5} "
            f"{r['not_in_label_list']:>6} {r['unlabelled']:>5} {len(r['skipped']):>4}"
        )
    say(INGEST_LEGEND)
    say_outputs(**{k: str(v) for k, v in out.items()})


INGEST_LEGEND = (
    "columns: traj = trajectories read; res = resolved; unres = unresolved (including nolist); "
    "nolist = task in no label list, counted unresolved (SWE-bench convention); "
    "unlab = no label at all (not used for training); skip = files skipped (reasons in the report)"
)

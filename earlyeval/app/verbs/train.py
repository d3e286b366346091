"""``earlyeval train``: the shipped model directory (outcome model, thresholds, budget estimators)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import (
    SEED_HELP,
    DataRoot,
    backend_for,
    bench_option,
    cli_eval_config,
    say,
    say_outputs,
    scheduler_option,
    setup_logging,
    verbose_option,
)
from earlyeval.app.options import Bar


def train(
    ctx: typer.Context,
    bench: str = bench_option(),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Model directory (default models/<bench>)."
    ),
    data_root: Optional[Path] = DataRoot,
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    budget: bool = typer.Option(
        True, "--budget/--no-budget", help="Also ship the remaining-budget estimators."
    ),
    forecast: bool = typer.Option(
        True,
        "--forecast/--no-forecast",
        help="Forecast what a new agent should expect (the benchmark's own leave-one-agent-out, cached).",
    ),
    scheduler: Optional[str] = scheduler_option(),
    verbose: bool = verbose_option(),
) -> None:
    """Fit the outcome model (and the budget estimators) on all labelled agents and write a safe model directory."""
    from earlyeval.app.stages.train import train_bench
    from earlyeval.core.decision import threshold_text

    setup_logging(verbose, ctx)
    cfg = cli_eval_config(bench, seed=seed)
    t0 = time.monotonic()
    bar = Bar(bench, f"train seed={seed} budget={budget}", "train", verbose)
    ok = False
    try:
        with backend_for(scheduler) as backend:
            paths = train_bench(
                bench,
                out,
                cfg,
                data_root,
                progress=bar,
                budget=budget,
                backend=backend,
                with_forecast=forecast,
            )
        ok = True
    finally:
        bar.close(ok)
    # printed, never stored: the model dir's hashes stay deterministic
    seconds = round(time.monotonic() - t0, 1)
    mf = json.loads((Path(paths["model"]) / "manifest.json").read_text())
    say(
        f"trained on {mf['training']['runs_used']} runs of {len(mf['training']['agents'])} agents; "
        f"{len(mf['feature_names'])} features; thresholds "
        f"success={threshold_text(mf['thresholds']['success'], '')} "
        f"failure={threshold_text(mf['thresholds']['failure'], '')}"
    )
    b = mf["training"].get("budget")
    if b:
        say(
            "budget: "
            + "; ".join(f"{d} B={v['B']:g} tau={v['tau']:g}" for d, v in b["dimensions"].items())
            + f" (training took {seconds} s)"
        )
    fc = mf["training"].get("forecast")
    say(
        fc["sentence"]
        if fc
        else "no forecast (--no-forecast): run `earlyeval evaluate` to know what to expect"
    )
    say_outputs(model=paths["model"])

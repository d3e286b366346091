"""``earlyeval evaluate``: the leave-one-agent-out report, ``reports/<bench>/loao.json``, and its table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import (
    JSON_HELP,
    SEED_HELP,
    DataRoot,
    backend_for,
    bench_option,
    cli_eval_config,
    print_json,
    say,
    say_outputs,
    scheduler_option,
    setup_logging,
    verbose_option,
)
from earlyeval.app.options import Bar


def evaluate(
    ctx: typer.Context,
    bench: str = bench_option(),
    data_root: Optional[Path] = DataRoot,
    ablations: bool = typer.Option(
        True, "--ablations/--no-ablations", help="Also run the ablation table."
    ),
    min_steps: Optional[int] = typer.Option(
        None, "--min-steps", help="Override the catalog's minimum run length for training."
    ),
    target_accuracy: Optional[float] = typer.Option(
        None,
        "--target-accuracy",
        help="Override the catalog's target: the success and failure recall the thresholds must reach (e.g. 0.95).",
    ),
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    families: Optional[str] = typer.Option(
        None,
        "--families",
        help="Comma list of feature families (default: the catalog's model_families), "
        "e.g. behaviour,peer_prior.",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    scheduler: Optional[str] = scheduler_option(),
    verbose: bool = verbose_option(),
) -> None:
    """Leave-one-agent-out evaluation with honest thresholds; writes reports/<bench>/loao.json."""
    from earlyeval.app.stages.evaluate import evaluate_bench
    from earlyeval.config.workspace import features_dir, reports_dir
    from earlyeval.core.atomic import write_json
    from earlyeval.report.reporting import default_ablations, loao_table, write_predictions

    setup_logging(verbose, ctx)
    fams = [f.strip() for f in families.split(",") if f.strip()] if families else None
    cfg = cli_eval_config(
        bench, seed=seed, min_steps=min_steps, target_accuracy=target_accuracy, families=fams
    )
    abl = default_ablations(bench, cfg) if ablations else []
    key = json.dumps(
        {"ablations": [a for a, _ in abl], "cfg": cfg.to_dict()}, sort_keys=True, default=str
    )
    bar = Bar(bench, "evaluate " + key, "evaluate: model fits", verbose)
    ok = False
    try:
        with backend_for(scheduler) as backend:
            report, res = evaluate_bench(
                bench, cfg, data_root, progress=bar, ablations=abl, backend=backend
            )
        ok = True
    finally:
        bar.close(ok)
    out = reports_dir(bench)
    p = write_json(report, out / "loao.json")
    pp = write_predictions(res, features_dir(bench) / "loao_predictions.parquet")
    if as_json:
        print_json(report)
        say_outputs(err=True, loao=p, predictions=pp)
        return
    say(loao_table(report))
    say_outputs(loao=p, predictions=pp)

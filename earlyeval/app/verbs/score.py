"""``earlyeval score``: completed runs replayed through the Monitor (``workflows.score``); its options are
``score_flags``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import typer

from earlyeval.app.cli_support import (
    JSON_HELP,
    DataRoot,
    backend_for,
    print_json,
    say,
    say_outputs,
    scheduler_option,
    setup_logging,
    verbose_option,
)
from earlyeval.app.options import bad_value
from earlyeval.app.verbs import score_flags as flags


def score(
    ctx: typer.Context,
    model: Path = flags.SCORE_MODEL,
    runs: Path = flags.SCORE_RUNS,
    fmt: str = flags.SCORE_FORMAT,
    out: Optional[Path] = flags.SCORE_OUT,
    force: bool = flags.SCORE_FORCE,
    data_root: Optional[Path] = DataRoot,
    cross_bench: bool = flags.SCORE_CROSS_BENCH,
    labels: Optional[str] = flags.SCORE_LABELS,
    agent: Optional[str] = flags.SCORE_AGENT,
    as_of: Optional[str] = flags.SCORE_AS_OF,
    same_agent: Optional[str] = flags.SCORE_SAME_AGENT,
    warm_start: int = flags.SCORE_WARM_START,
    warm_rule: str = flags.SCORE_WARM_RULE,
    thresholds: Optional[str] = flags.SCORE_THRESHOLDS,
    what_if: bool = flags.SCORE_WHAT_IF,
    what_if_grid: Optional[str] = flags.SCORE_WHAT_IF_GRID,
    csv_path: Optional[Path] = flags.SCORE_CSV,
    tasks: Optional[Path] = flags.SCORE_TASKS,
    halt_on: str = flags.SCORE_HALT_ON,
    seed: int = flags.SCORE_SEED,
    as_pass: bool = flags.SCORE_PASS,
    audit_share: float = flags.SCORE_AUDIT_SHARE,
    pass_workers: int = flags.SCORE_PASS_WORKERS,
    require_signature: bool = flags.SCORE_REQUIRE_SIGNATURE,
    mode: Optional[str] = typer.Option(
        None,
        "--mode",
        help="halt, or shadow: decide and record at every step, halt nothing; score.json shows what it "
        "would have saved and where it would have been wrong (default: the model's default mode).",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    scheduler: Optional[str] = scheduler_option(),
    verbose: bool = verbose_option(),
) -> None:
    """Replay completed runs through the Monitor; write score.json (with loao.json's metrics for labelled runs)
    and a per-run CSV.  Exit 2, writing nothing, when no run was read or the scoring would mislead (another
    scoring in the output folder, a model of another benchmark, a format or label format it cannot tell);
    warn when the runs overlap the training data (by content) or carry no date."""
    from earlyeval.report.score_table import score_table
    from earlyeval.workflows.score import score_runs
    from earlyeval.workflows.score_options import ScoreOptions

    setup_logging(verbose, ctx)
    if not runs.exists():
        raise bad_value(f"{runs}: no such file or folder", param_hint="'--runs'")
    if not model.is_dir():
        raise bad_value(
            f"{model}: not a model directory (train one with `earlyeval train --bench B`)",
            param_hint="'--model'",
        )
    grid: Any = (
        [float(x) for x in what_if_grid.split(",") if x.strip()]
        if what_if_grid and what_if_grid != "model"
        else True
        if (what_if or what_if_grid)
        else None
    )
    # no run read, a bad model dir, too few runs for --warm-start ...: one line, exit 2 (command)
    if mode is not None and scheduler:
        raise bad_value(
            "give --mode in this process (no --scheduler): the workers load the model's own mode",
            param_hint="'--mode'",
        )
    with backend_for(scheduler) as backend:
        # None in this process: score replays itself
        replay_all = backend.replay(model, thresholds, halt_on, warm_rule)
        options = ScoreOptions(
            fmt,
            out=out,
            labels=labels,
            agent=agent,
            as_of=as_of,
            same_agent=same_agent,
            warm_start=warm_start,
            warm_rule=warm_rule,
            seed=seed,
            thresholds=thresholds,
            what_if_taus=grid,
            csv=csv_path,
            data_root=data_root,
            force=force,
            cross_bench=cross_bench,
            halt_on=halt_on,
            require_signature=require_signature,
            pass_replay=as_pass,
            audit_share=audit_share,
            pass_workers=pass_workers,
            mode=mode,
        )
        paths = score_runs(
            model,
            runs,
            options,
            replay_all=replay_all,
            **({"tasks": tasks} if tasks is not None else {}),
        )
    rep = json.loads(Path(paths["score"]).read_text())
    if as_json:
        print_json(rep)
        say_outputs(err=True, **{k: str(v) for k, v in paths.items()})
        return
    say(score_table(rep))
    say_outputs(**{k: str(v) for k, v in paths.items()})

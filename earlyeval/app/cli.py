"""earlyeval: predict agent-run outcomes early, and halt runs whose end is already clear.

Most verbs take --bench (a catalog: earlyeval/catalogs/<bench>.toml, or the workspace's data/<bench>.toml); every verb ends by printing where its outputs are.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Optional

import typer

from earlyeval.app.cli_support import (
    JSON_HELP,
    LABEL_FORMATS,
    SEED_HELP,
    DataRoot,
    _backend,
    _bench_opt,
    _command,
    _eval_config,
    _print_json,
    _progress,
    _say_outputs,
    _scheduler,
    _setup,
    _verbose,
    _version,
    app,
    say,
)
from earlyeval.app.options import (
    Bar,
    bad_value,
    check_as_of,
    check_bench,
    check_format,
    check_halt_on_option,
    check_thresholds,
    check_warm_rule,
    check_what_if,
)

log = logging.getLogger("earlyeval.app.cli")


@app.callback()
def _workspace(
    workspace: Optional[Path] = typer.Option(
        None,
        "--workspace",
        envvar="EARLYEVAL_HOME",
        help="Folder for data/, features/, models/, reports/ (default: $EARLYEVAL_HOME, else the current directory).",
    ),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """earlyeval: predict agent-run outcomes early, and halt runs whose end is already clear."""
    from earlyeval.config.workspace import set_workspace

    set_workspace(workspace)


@_command()
def ingest(
    ctx: typer.Context,
    bench: str = _bench_opt(),
    data_root: Optional[Path] = DataRoot,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    scheduler: Optional[str] = _scheduler(),
    verbose: bool = _verbose(),
) -> None:
    """Read every run of the catalog in its native format; write normalized parquet and an ingest report."""
    from earlyeval.app.pipeline import ingest_bench

    _setup(verbose, ctx)
    with _backend(scheduler) as backend:
        out = ingest_bench(bench, data_root, backend=backend)
    rep = json.loads(Path(out["report"]).read_text())
    if as_json:
        _print_json(rep)
        _say_outputs(err=True, **{k: str(v) for k, v in out.items()})
        return
    say(f"{'run':<72} {'traj':>5} {'res':>4} {'unres':>5} {'nolist':>6} {'unlab':>5} {'skip':>4}")
    for r in rep["runs"]:
        say(
            f"{r['run'][:72]:<72} {r['trajectories']:>5} {r['resolved']:>4} {r['unresolved']:>5} "
            f"{r['not_in_label_list']:>6} {r['unlabelled']:>5} {len(r['skipped']):>4}"
        )
    say(INGEST_LEGEND)
    _say_outputs(**{k: str(v) for k, v in out.items()})


INGEST_LEGEND = (
    "columns: traj = trajectories read; res = resolved; unres = unresolved (including nolist); "
    "nolist = task in no label list, counted unresolved (SWE-bench convention); "
    "unlab = no label at all (not used for training); skip = files skipped (reasons in the report)"
)


@_command()
def train(
    ctx: typer.Context,
    bench: str = _bench_opt(),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Model directory (default models/<bench>)."
    ),
    data_root: Optional[Path] = DataRoot,
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    budget: bool = typer.Option(
        True, "--budget/--no-budget", help="Also ship the remaining-budget estimators."
    ),
    scheduler: Optional[str] = _scheduler(),
    verbose: bool = _verbose(),
) -> None:
    """Fit the outcome model (and the budget estimators) on all labelled agents and write a safe model directory."""
    from earlyeval.app.pipeline import train_bench
    from earlyeval.core.decision import threshold_text

    _setup(verbose, ctx)
    cfg = _eval_config(bench, seed=seed)
    t0 = time.monotonic()
    bar = Bar(bench, f"train seed={seed} budget={budget}", "train", verbose)
    ok = False
    try:
        with _backend(scheduler) as backend:
            paths = train_bench(
                bench, out, cfg, data_root, progress=bar, budget=budget, backend=backend
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
    _say_outputs(model=paths["model"])


@_command()
def evaluate(
    ctx: typer.Context,
    bench: str = _bench_opt(),
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
    scheduler: Optional[str] = _scheduler(),
    verbose: bool = _verbose(),
) -> None:
    """Leave-one-agent-out evaluation with honest thresholds; writes reports/<bench>/loao.json."""
    from earlyeval.app.pipeline import evaluate_bench, write_json
    from earlyeval.config.workspace import features_dir, reports_dir
    from earlyeval.report.reporting import default_ablations, loao_table, write_predictions

    _setup(verbose, ctx)
    fams = [f.strip() for f in families.split(",") if f.strip()] if families else None
    cfg = _eval_config(
        bench, seed=seed, min_steps=min_steps, target_accuracy=target_accuracy, families=fams
    )
    abl = default_ablations(bench, cfg) if ablations else []
    key = json.dumps(
        {"ablations": [a for a, _ in abl], "cfg": cfg.to_dict()}, sort_keys=True, default=str
    )
    bar = Bar(bench, "evaluate " + key, "evaluate: model fits", verbose)
    ok = False
    try:
        with _backend(scheduler) as backend:
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
        _print_json(report)
        _say_outputs(err=True, loao=p, predictions=pp)
        return
    say(loao_table(report))
    _say_outputs(loao=p, predictions=pp)


@_command()
def learning_curve(
    ctx: typer.Context,
    bench: str = _bench_opt(),
    data_root: Optional[Path] = DataRoot,
    subsets: int = typer.Option(
        2, "--subsets", min=1, help="Training-agent subsets drawn per size k."
    ),
    seed: int = typer.Option(0, "--seed", help=SEED_HELP),
    verbose: bool = _verbose(),
) -> None:
    """Held-out AUROC and steps saved against the number of training agents; writes learning_curve.json and a PNG."""
    from earlyeval.app.pipeline import learning_curve_bench

    _setup(verbose, ctx)
    paths = learning_curve_bench(bench, data_root, subsets=subsets, seed=seed, progress=_progress)
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@_command()
def sweep(ctx: typer.Context, bench: str = _bench_opt(), verbose: bool = _verbose()) -> None:
    """Savings/accuracy frontier over thresholds, label-free and warm-start; writes sweep.csv and a PNG."""
    from earlyeval.workflows.sweep import sweep_bench

    _setup(verbose, ctx)
    paths = sweep_bench(bench, progress=_progress)
    _say_outputs(**{k: str(v) for k, v in paths.items()})


# score's options, named here so that the verb's signature stays a list of what it takes
_SCORE_MODEL = typer.Option(
    ..., "--model", "-m", help="A model directory written by `earlyeval train`."
)
_SCORE_RUNS = typer.Option(..., "--runs", help="A folder (or file) of completed runs.")
_SCORE_FORMAT = typer.Option(
    "auto",
    "--format",
    "-f",
    callback=check_format,
    help="Native format of the runs (see `earlyeval formats`); auto: read from the files "
    "(refused, naming the candidates, when none or several formats read them).",
)
_SCORE_OUT = typer.Option(
    None,
    "--out",
    help="Output folder (default reports/score/<runs folder name>); "
    "one holding a scoring of other runs is refused without --force.",
)
_SCORE_FORCE = typer.Option(
    False, "--force", help="Replace a score.json of other runs in the output folder."
)
_SCORE_CROSS_BENCH = typer.Option(
    False,
    "--cross-bench",
    help="Score runs of another benchmark than the model's (refused otherwise: "
    "the numbers would be a transfer experiment).",
)
_SCORE_LABELS = typer.Option(
    None,
    "--labels",
    help="Optional label source, FORMAT:GLOB relative to --runs "
    "(e.g. sb-cli:'*.json'; formats: " + LABEL_FORMATS + ").",
)
_SCORE_AGENT = typer.Option(
    None, "--agent", help="Agent name to report the runs under (default: the folder name)."
)
_SCORE_AS_OF = typer.Option(
    None,
    "--as-of",
    callback=check_as_of,
    help="Task prior from public submissions dated strictly before YYYY-MM-DD "
    "('all': every submission, today's pool; default: each run's own date, "
    "its catalog's or its files', with a warning for runs that have none).",
)
_SCORE_SAME_AGENT = typer.Option(
    None,
    "--same-agent",
    help="Regex naming public submissions of this same agent, left out of the prior "
    "(matched on name/display name/models lower-cased, non-alphanumerics removed).",
)
_SCORE_WARM_START = typer.Option(
    0,
    "--warm-start",
    help="K labelled runs completed first; each threshold is lowered as far as they certify "
    "it (exact binomial tests, see --warm-rule) and raised only when they show it fails.",
)
_SCORE_WARM_RULE = typer.Option(
    "certify",
    "--warm-rule",
    callback=check_warm_rule,
    help="certify (default: may lower or raise, with a stated guarantee) or check "
    "(issue 14's rule: may only raise).",
)
_SCORE_THRESHOLDS = typer.Option(
    None,
    "--thresholds",
    callback=check_thresholds,
    help="Halt with TS,TF (P(success) >= TS or P(failure) >= TF, each in (0.5, 1]) "
    "instead of the model's own thresholds; recorded in score.json.",
)
_SCORE_WHAT_IF = typer.Option(
    False,
    "--what-if",
    help="Also print (and write into score.json) the savings/accuracy frontier of these runs "
    "over a grid of thresholds (default grid: the model's own selection grid).",
)
_SCORE_WHAT_IF_GRID = typer.Option(
    None,
    "--what-if-grid",
    callback=check_what_if,
    help="The --what-if grid: a comma list used for both TS and TF "
    "(10 = never halt that way); implies --what-if.",
)
_SCORE_CSV = typer.Option(
    None, "--csv", help="Per-run CSV path (default per_run.csv beside score.json)."
)
_SCORE_TASKS = typer.Option(
    None,
    "--tasks",
    help="The task table (a tasks.parquet of `earlyeval ingest`); default: the model's "
    "benchmark's, beside the model directory's workspace or in --workspace / "
    "$EARLYEVAL_HOME (never the current folder); none for a model that "
    "needs one is an error.",
)
_SCORE_HALT_ON = typer.Option(
    "both",
    "--halt-on",
    callback=check_halt_on_option,
    help="Which predicted outcomes halt: both (a benchmark pass), failure (what a live "
    "adapter, which defaults to it, saves) or success; recorded in score.json.",
)
_SCORE_SEED = typer.Option(
    0, "--seed", help="Seed of the warm-start draw, and of the --pass order and audit sample."
)
_SCORE_PASS = typer.Option(
    False,
    "--pass",
    help="Replay the folder as one benchmark pass (docs/monitor.md): runs shuffled by "
    "--seed, --pass-workers simulated workers, each run's monitor from the runs "
    "finished before it started; an audit sample never halted; a 'pass' block.",
)
_SCORE_AUDIT_SHARE = typer.Option(
    0.10,
    "--audit-share",
    min=0.0,
    max=1.0,
    help="With --pass: the share of runs audited (never halted; a labelled "
    "audit run certifies the thresholds as the pass goes).",
)
_SCORE_PASS_WORKERS = typer.Option(
    1,
    "--pass-workers",
    min=1,
    help="With --pass: the parallel workers simulated (a run's duration is its "
    "steps, or its steps until it halts).",
)
_SCORE_REQUIRE_SIGNATURE = typer.Option(
    False,
    "--require-signature",
    help="Refuse a model directory not signed with the key in $EARLYEVAL_MODEL_KEY (or the file "
    "$EARLYEVAL_MODEL_KEY_FILE): an edited, re-hashed directory is refused (docs/monitor.md).",
)


@_command()
def score(
    ctx: typer.Context,
    model: Path = _SCORE_MODEL,
    runs: Path = _SCORE_RUNS,
    fmt: str = _SCORE_FORMAT,
    out: Optional[Path] = _SCORE_OUT,
    force: bool = _SCORE_FORCE,
    data_root: Optional[Path] = DataRoot,
    cross_bench: bool = _SCORE_CROSS_BENCH,
    labels: Optional[str] = _SCORE_LABELS,
    agent: Optional[str] = _SCORE_AGENT,
    as_of: Optional[str] = _SCORE_AS_OF,
    same_agent: Optional[str] = _SCORE_SAME_AGENT,
    warm_start: int = _SCORE_WARM_START,
    warm_rule: str = _SCORE_WARM_RULE,
    thresholds: Optional[str] = _SCORE_THRESHOLDS,
    what_if: bool = _SCORE_WHAT_IF,
    what_if_grid: Optional[str] = _SCORE_WHAT_IF_GRID,
    csv_path: Optional[Path] = _SCORE_CSV,
    tasks: Optional[Path] = _SCORE_TASKS,
    halt_on: str = _SCORE_HALT_ON,
    seed: int = _SCORE_SEED,
    as_pass: bool = _SCORE_PASS,
    audit_share: float = _SCORE_AUDIT_SHARE,
    pass_workers: int = _SCORE_PASS_WORKERS,
    require_signature: bool = _SCORE_REQUIRE_SIGNATURE,
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    scheduler: Optional[str] = _scheduler(),
    verbose: bool = _verbose(),
) -> None:
    """Replay completed runs through the Monitor; write score.json (with loao.json's metrics for labelled runs)
    and a per-run CSV.  Exit 2, writing nothing, when no run was read or the scoring would mislead (another
    scoring in the output folder, a model of another benchmark, a format or label format it cannot tell);
    warn when the runs overlap the training data (by content) or carry no date."""
    from earlyeval.report.score_table import score_table
    from earlyeval.workflows.score import score_runs
    from earlyeval.workflows.score_options import ScoreOptions

    _setup(verbose, ctx)
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
    # no run read, a bad model dir, too few runs for --warm-start ...: one line, exit 2 (_command)
    with _backend(scheduler) as backend:
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
        _print_json(rep)
        _say_outputs(err=True, **{k: str(v) for k, v in paths.items()})
        return
    say(score_table(rep))
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@_command()
def bench(
    ctx: typer.Context,
    bench: str = _bench_opt("swebench"),
    model: Optional[Path] = typer.Option(
        None, "--model", "-m", help="Model directory (default models/<bench>)."
    ),
    budget: str = typer.Option(
        "default",
        "--budget",
        help="Budget dimensions the Monitor computes: default (steps), all, none, or a comma list.",
    ),
    as_json: bool = typer.Option(False, "--json", help=JSON_HELP),
    verbose: bool = _verbose(),
) -> None:
    """Latency of Monitor.observe() on real trajectories (one core): median, p99, step 10 vs step 100."""
    from earlyeval.workflows.benchmark import latency_summary, run_latency_bench

    _setup(verbose, ctx)
    from earlyeval.live.budget import DEFAULT_BUDGET_DIMS

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
        _print_json(rep)
        _say_outputs(err=True, **{k: str(v) for k, v in paths.items()})
        return
    say(latency_summary(rep))
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@_command()
def bench_scale(
    ctx: typer.Context,
    bench: str = _bench_opt("swebench"),
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
    verbose: bool = _verbose(),
) -> None:
    """Wall time and peak memory per stage at 1x/10x/100x the runs, in-process and on a LocalCluster side by side."""
    from earlyeval.app.scale_bench import STAGES, summary, write
    from earlyeval.app.scale_bench import bench_scale as run_bench
    from earlyeval.config.workspace import reports_dir

    _setup(verbose, ctx)
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
    _say_outputs(**{k: str(v) for k, v in write(points, out or reports_dir(bench)).items()})


@_command()
def budget(
    ctx: typer.Context,
    bench: str = _bench_opt(),
    data_root: Optional[Path] = DataRoot,
    verbose: bool = _verbose(),
) -> None:
    """Remaining-budget intervals (conformalized), feasibility under a budget, early stop on "impossible"."""
    from earlyeval.app.pipeline import budget_bench

    _setup(verbose, ctx)
    paths = budget_bench(bench, root=data_root, progress=_progress)
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@_command()
def route(
    ctx: typer.Context,
    bench: str = _bench_opt("swebench"),
    cheap: str = typer.Option(..., "--cheap", help="Agent that starts every task."),
    strong: str = typer.Option(..., "--strong", help="Agent a task is escalated to."),
    budget_usd: Optional[float] = typer.Option(
        None, "--budget", help="Total budget B for one benchmark pass."
    ),
    verbose: bool = _verbose(),
) -> None:
    """Simulate stop / escalate policies over real runs of two agents on the same tasks."""
    from earlyeval.app.pipeline import route_bench

    _setup(verbose, ctx)
    paths = route_bench(bench, cheap, strong, budget_usd=budget_usd, progress=_progress)
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@_command()
def export(
    ctx: typer.Context,
    bench: str = _bench_opt(help="An ingested benchmark (data/<bench>/trajectories.parquet)."),
    fmt: str = typer.Option("atif", "--format", "-f", help="Output format (atif)."),
    out: Optional[Path] = typer.Option(
        None, "--out", help="Output folder (default data/<bench>/export-<format>)."
    ),
    run: Optional[list[str]] = typer.Option(None, "--run", help="Only these run ids (repeatable)."),
    verbose: bool = _verbose(),
) -> None:
    """Write ingested runs in an interchange format (ATIF v1.8, Harbor trial layout)."""
    from earlyeval.tables.store import bench_dir, read_ingested_trajectories
    from earlyeval.workflows.export import export_runs

    _setup(verbose, ctx)
    if fmt != "atif":
        raise bad_value(f"unknown output format {fmt!r}; valid: atif", param_hint="'--format'")
    trajs = read_ingested_trajectories(bench)
    if run:
        trajs = [t for t in trajs if t.run_id in set(run)]
    dest = out or bench_dir(bench) / f"export-{fmt}"
    written = export_runs(trajs, dest, fmt=fmt)
    say(f"wrote {len(written)} runs")
    _say_outputs(folder=dest)


@_command()
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
    verbose: bool = _verbose(),
) -> None:
    """Cross-benchmark transfer: fit on every agent of one benchmark, evaluate on every agent of another."""
    from earlyeval.workflows.transfer import transfer_bench

    _setup(verbose, ctx)
    paths = transfer_bench(
        train, test, [f.strip() for f in families.split(",") if f.strip()], seed, progress=_progress
    )
    if as_json:
        say(Path(paths["report"]).read_text())
        _say_outputs(err=True, **{k: str(v) for k, v in paths.items()})
        return
    say(Path(paths["table"]).read_text())
    _say_outputs(**{k: str(v) for k, v in paths.items()})


def format_descriptions() -> dict[str, str]:
    """Each run format's one-line description: the first line of its ingestor's docstring."""
    from earlyeval.ingest import FORMATS

    out = {}
    for f in sorted(FORMATS.known()):
        try:
            doc = (FORMATS.resolve(f).__doc__ or "").strip()
        except Exception as e:  # a broken optional plugin: say so, list the others
            doc = f"(cannot load: {type(e).__name__}: {e})"
        out[f] = doc.splitlines()[0].strip() if doc else ""
    return out


@_command()
def formats(
    as_json: bool = typer.Option(False, "--json", help="Print {name: description} as JSON."),
) -> None:
    """List the native run formats earlyeval reads (built-in, then installed entry points), each with a description."""
    d = format_descriptions()
    if as_json:
        _print_json(d)
        return
    w = max(map(len, d), default=0)
    for f, desc in d.items():
        say(f"{f:<{w}}  {desc}")


@_command()
def report(
    bench: str = typer.Option(
        ..., "--bench", "-b", help="Benchmark whose reports/<bench>/ to summarize."
    ),
    out: Optional[str] = typer.Option(
        None,
        "--out",
        help="Output file, or a directory (existing, or ending in /) "
        "that gets report.html (default reports/<bench>/report.html).",
    ),
) -> None:
    """One self-contained HTML page (tables, plots, legends) from the reports a benchmark already has."""
    from earlyeval.config.workspace import reports_dir
    from earlyeval.report.report_page import write_report

    rdir = reports_dir(bench, create=False)
    if not rdir.is_dir():
        have = (
            sorted(p.name for p in rdir.parent.iterdir() if p.is_dir())
            if rdir.parent.is_dir()
            else []
        )
        say(
            f"error: --bench {bench}: no reports in {rdir} (run `earlyeval evaluate --bench {bench}` first); "
            f"benchmarks with reports: {', '.join(have) or 'none'}",
            err=True,
        )
        raise typer.Exit(2)
    _say_outputs(report=write_report(bench, out))


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()

"""earlyeval: predict agent-run outcomes early, and halt runs whose end is already clear.

Most verbs take --bench (a catalog: earlyeval/catalogs/<bench>.toml, or the workspace's data/<bench>.toml); every verb ends by printing where its outputs are.
"""

from __future__ import annotations

import json
import re
import logging
import time
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

DataRoot = typer.Option(None, "--data-root", help="Folder holding the shared runs (default: $EARLYEVAL_DATA, else ../shared/data).")


@app.callback()
def _workspace(workspace: Optional[Path] = typer.Option(
        None, "--workspace", envvar="EARLYEVAL_HOME",
        help="Folder for data/, features/, models/, reports/ (default: $EARLYEVAL_HOME, else the current directory).")) -> None:
    """earlyeval: predict agent-run outcomes early, and halt runs whose end is already clear."""
    from .workspace import set_workspace

    set_workspace(workspace)


def _setup(verbose: bool) -> None:
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


def _say_outputs(**paths: Path | str) -> None:
    typer.echo("\nOutputs:")
    for k, p in paths.items():
        typer.echo(f"  {k:<12} {p}")


def _progress(msg: str) -> None:
    typer.echo(f"  … {msg}", err=True)


@app.command()
def ingest(bench: str = typer.Option(..., "--bench", "-b", help="Benchmark catalog name, e.g. swebench."),
           data_root: Optional[Path] = DataRoot,
           verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Read every run of the catalog in its native format; write normalized parquet and an ingest report."""
    from .pipeline import ingest_bench

    _setup(verbose)
    out = ingest_bench(bench, data_root)
    rep = json.loads(Path(out["report"]).read_text())
    typer.echo(f"{'run':<72} {'traj':>5} {'res':>4} {'unres':>5} {'nolist':>6} {'unlab':>5} {'skip':>4}")
    for r in rep["runs"]:
        typer.echo(f"{r['run'][:72]:<72} {r['trajectories']:>5} {r['resolved']:>4} {r['unresolved']:>5} "
                   f"{r['not_in_label_list']:>6} {r['unlabelled']:>5} {len(r['skipped']):>4}")
    _say_outputs(**{k: str(v) for k, v in out.items()})


@app.command()
def train(bench: str = typer.Option(..., "--bench", "-b"),
          out: Optional[Path] = typer.Option(None, "--out", help="Model directory (default models/<bench>)."),
          data_root: Optional[Path] = DataRoot,
          seed: int = typer.Option(0, "--seed"),
          budget: bool = typer.Option(True, "--budget/--no-budget", help="Also ship the remaining-budget estimators."),
          verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Fit the outcome model (and the budget estimators) on all labelled agents and write a safe model directory."""
    from .pipeline import eval_config, train_bench

    _setup(verbose)
    cfg = eval_config(bench, seed=seed)
    t0 = time.monotonic()
    paths = train_bench(bench, out, cfg, data_root, progress=_progress, budget=budget)
    seconds = round(time.monotonic() - t0, 1)  # printed, never stored: the model dir's hashes stay deterministic
    mf = json.loads((Path(paths["model"]) / "manifest.json").read_text())
    typer.echo(f"trained on {mf['training']['runs_used']} runs of {len(mf['training']['agents'])} agents; "
               f"{len(mf['feature_names'])} features; thresholds success={mf['thresholds']['success']} failure={mf['thresholds']['failure']}")
    b = mf["training"].get("budget")
    if b:
        typer.echo("budget: " + "; ".join(f"{d} B={v['B']:g} tau={v['tau']:g}" for d, v in b["dimensions"].items())
                   + f" (training took {seconds} s)")
    _say_outputs(model=paths["model"])


@app.command()
def evaluate(bench: str = typer.Option(..., "--bench", "-b"),
             data_root: Optional[Path] = DataRoot,
             ablations: bool = typer.Option(True, "--ablations/--no-ablations", help="Also run the ablation table."),
             min_steps: Optional[int] = typer.Option(None, "--min-steps", help="Override the catalog's minimum run length for training."),
             target_accuracy: Optional[float] = typer.Option(None, "--target-accuracy"),
             seed: int = typer.Option(0, "--seed"),
             families: Optional[str] = typer.Option(None, "--families",
                                                    help="Comma list of feature families (default: the catalog's model_families), "
                                                         "e.g. behaviour,peer_prior."),
             verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Leave-one-agent-out evaluation with honest thresholds; writes reports/<bench>/loao.json."""
    from .pipeline import evaluate_bench, eval_config, write_json
    from .reporting import default_ablations, loao_table, write_predictions
    from .workspace import features_dir, reports_dir

    _setup(verbose)
    fams = [f.strip() for f in families.split(",") if f.strip()] if families else None
    cfg = eval_config(bench, seed=seed, min_steps=min_steps, target_accuracy=target_accuracy, families=fams)
    abl = default_ablations(bench, cfg) if ablations else []
    report, res = evaluate_bench(bench, cfg, data_root, progress=_progress, ablations=abl)
    out = reports_dir(bench)
    p = write_json(report, out / "loao.json")
    pp = write_predictions(res, features_dir(bench) / "loao_predictions.parquet")
    typer.echo(loao_table(report))
    _say_outputs(loao=p, predictions=pp)


@app.command()
def sweep(bench: str = typer.Option(..., "--bench", "-b"),
          verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Savings/accuracy frontier over thresholds, label-free and warm-start; writes sweep.csv and a PNG."""
    from .sweep import sweep_bench

    _setup(verbose)
    paths = sweep_bench(bench, progress=_progress)
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@app.command()
def score(model: Path = typer.Option(..., "--model", "-m", help="A model directory written by `earlyeval train`."),
          runs: Path = typer.Option(..., "--runs", help="A folder (or file) of completed runs."),
          fmt: str = typer.Option(..., "--format", "-f", help="Native format of the runs (see `earlyeval formats`)."),
          out: Optional[Path] = typer.Option(None, "--out", help="Output folder (default reports/score/<runs name>)."),
          labels: Optional[str] = typer.Option(None, "--labels", help="Optional label source, FORMAT:GLOB relative to --runs (e.g. sb-cli:'*.json')."),
          agent: Optional[str] = typer.Option(None, "--agent", help="Agent name to report the runs under (default: the folder name)."),
          as_of: Optional[str] = typer.Option(None, "--as-of",
                                              help="Task prior from public submissions dated strictly before YYYY-MM-DD "
                                                   "('run': each run's own catalog date; default: all submissions)."),
          same_agent: Optional[str] = typer.Option(None, "--same-agent",
                                                   help="Regex naming public submissions of this same agent, left out of the prior "
                                                        "(matched on name/display name/models lower-cased, non-alphanumerics removed)."),
          warm_start: int = typer.Option(0, "--warm-start", help="K labelled runs completed first to recalibrate and pick thresholds."),
          seed: int = typer.Option(0, "--seed", help="Seed of the warm-start draw."),
          verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Replay completed runs through the Monitor; for labelled runs write score.json with loao.json's metrics."""
    from .score import score_runs, score_table

    _setup(verbose)
    if not runs.exists():
        typer.echo(f"error: --runs {runs}: no such file or folder", err=True)
        raise typer.Exit(2)
    if as_of and as_of != "run" and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", as_of):
        raise typer.BadParameter(f"{as_of!r} is not YYYY-MM-DD or 'run'", param_hint="--as-of")
    paths = score_runs(model, runs, fmt, out=out, labels=labels, agent=agent, as_of=as_of or "", same_agent=same_agent,
                       warm_start=warm_start, seed=seed)
    typer.echo(score_table(json.loads(Path(paths["score"]).read_text())))
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@app.command()
def bench(bench: str = typer.Option("swebench", "--bench", "-b"),
          model: Optional[Path] = typer.Option(None, "--model", "-m", help="Model directory (default models/<bench>)."),
          budget: str = typer.Option("default", "--budget",
                                     help="Budget dimensions the Monitor computes: default (steps), all, none, or a comma list."),
          verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Latency of Monitor.observe() on real trajectories (one core): median, p99, step 10 vs step 100."""
    from .benchmark import latency_summary, run_latency_bench

    _setup(verbose)
    from .monitor import DEFAULT_BUDGET_DIMS

    dims: bool | list[str] = (list(DEFAULT_BUDGET_DIMS) if budget == "default" else True if budget == "all" else False if budget == "none"
                              else [d.strip() for d in budget.split(",") if d.strip()])
    paths = run_latency_bench(bench, model, budget=dims)
    typer.echo(latency_summary(json.loads(Path(paths["latency"]).read_text())))
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@app.command()
def budget(bench: str = typer.Option(..., "--bench", "-b"),
           data_root: Optional[Path] = DataRoot,
           verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Remaining-budget intervals (conformalized), feasibility under a budget, early stop on "impossible"."""
    from .pipeline import budget_bench

    _setup(verbose)
    paths = budget_bench(bench, root=data_root, progress=_progress)
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@app.command()
def route(bench: str = typer.Option("swebench", "--bench", "-b"),
          cheap: str = typer.Option(..., "--cheap", help="Agent that starts every task."),
          strong: str = typer.Option(..., "--strong", help="Agent a task is escalated to."),
          budget_usd: Optional[float] = typer.Option(None, "--budget", help="Total budget B for one benchmark pass."),
          verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Simulate stop / escalate policies over real runs of two agents on the same tasks."""
    from .routing import route_bench

    _setup(verbose)
    paths = route_bench(bench, cheap, strong, budget_usd=budget_usd, progress=_progress)
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@app.command()
def export(bench: str = typer.Option(..., "--bench", "-b", help="An ingested benchmark (data/<bench>/trajectories.parquet)."),
           fmt: str = typer.Option("atif", "--format", "-f", help="Output format (atif)."),
           out: Optional[Path] = typer.Option(None, "--out", help="Output folder (default data/<bench>/export-<format>)."),
           run: Optional[list[str]] = typer.Option(None, "--run", help="Only these run ids (repeatable)."),
           verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Write ingested runs in an interchange format (ATIF v1.8, Harbor trial layout)."""
    from .export import export_runs
    from .store import bench_dir, read_ingested_trajectories

    _setup(verbose)
    trajs = read_ingested_trajectories(bench)
    if run:
        trajs = [t for t in trajs if t.run_id in set(run)]
    dest = out or bench_dir(bench) / f"export-{fmt}"
    written = export_runs(trajs, dest, fmt=fmt)
    typer.echo(f"wrote {len(written)} runs")
    _say_outputs(folder=dest)


@app.command()
def transfer(train: str = typer.Option(..., "--train", help="Source benchmark (trained on)."),
             test: str = typer.Option(..., "--test", help="Target benchmark (evaluated on)."),
             families: str = typer.Option("behaviour", "--families", help="Comma-separated families present on both sides."),
             seed: int = typer.Option(0, "--seed"),
             verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Cross-benchmark transfer: fit on every agent of one benchmark, evaluate on every agent of another."""
    from .transfer import transfer_bench

    _setup(verbose)
    paths = transfer_bench(train, test, [f.strip() for f in families.split(",") if f.strip()], seed, progress=_progress)
    typer.echo(Path(paths["table"]).read_text())
    _say_outputs(**{k: str(v) for k, v in paths.items()})


@app.command()
def formats() -> None:
    """List the native run formats earlyeval reads (built-in, then installed entry points)."""
    from .ingest import FORMATS

    for f in sorted(FORMATS.known()):
        typer.echo(f)


@app.command()
def report(bench: str = typer.Option(..., "--bench", "-b", help="Benchmark whose reports/<bench>/ to summarize."),
           out: Optional[Path] = typer.Option(None, "--out", help="Output file (default reports/<bench>/report.html).")) -> None:
    """One self-contained HTML page (tables, plots, legends) from the reports a benchmark already has."""
    from .report_page import write_report
    from .workspace import reports_dir

    rdir = reports_dir(bench, create=False)
    if not rdir.is_dir():
        have = sorted(p.name for p in rdir.parent.iterdir() if p.is_dir()) if rdir.parent.is_dir() else []
        typer.echo(f"error: --bench {bench}: no reports in {rdir} (run `earlyeval evaluate --bench {bench}` first); "
                   f"benchmarks with reports: {', '.join(have) or 'none'}", err=True)
        raise typer.Exit(2)
    _say_outputs(report=write_report(bench, out))


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()

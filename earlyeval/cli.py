"""``earlyeval``: predict agent-run outcomes early, and halt runs whose end is already clear.

Every verb takes ``--bench`` (a catalog ``data/<bench>.toml``) and ends by
printing where its outputs are.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__)

DataRoot = typer.Option(None, "--data-root", help="Folder holding the shared runs (default: $EARLYEVAL_DATA, else ../shared/data).")


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
          verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Fit the outcome model on all labelled agents and write a safe model directory."""
    from .pipeline import eval_config, train_bench

    _setup(verbose)
    cfg = eval_config(bench, seed=seed)
    paths = train_bench(bench, out, cfg, data_root, progress=_progress)
    mf = json.loads((Path(paths["model"]) / "manifest.json").read_text())
    typer.echo(f"trained on {mf['training']['runs_used']} runs of {len(mf['training']['agents'])} agents; "
               f"{len(mf['feature_names'])} features; thresholds success={mf['thresholds']['success']} failure={mf['thresholds']['failure']}")
    _say_outputs(model=paths["model"])


@app.command()
def evaluate(bench: str = typer.Option(..., "--bench", "-b"),
             data_root: Optional[Path] = DataRoot,
             ablations: bool = typer.Option(True, "--ablations/--no-ablations", help="Also run the ablation table."),
             min_steps: Optional[int] = typer.Option(None, "--min-steps", help="Override the catalog's minimum run length for training."),
             target_accuracy: Optional[float] = typer.Option(None, "--target-accuracy"),
             seed: int = typer.Option(0, "--seed"),
             verbose: bool = typer.Option(False, "--verbose", "-v")) -> None:
    """Leave-one-agent-out evaluation with honest thresholds; writes reports/<bench>/loao.json."""
    from .pipeline import evaluate_bench, eval_config, reports_dir, write_json
    from .reporting import default_ablations, loao_table, write_predictions

    _setup(verbose)
    cfg = eval_config(bench, seed=seed, min_steps=min_steps, target_accuracy=target_accuracy)
    abl = default_ablations(bench, cfg) if ablations else []
    report, res = evaluate_bench(bench, cfg, data_root, progress=_progress, ablations=abl)
    out = reports_dir(bench)
    p = write_json(report, out / "loao.json")
    pp = write_predictions(res, out.parent.parent / "features" / bench / "loao_predictions.parquet")
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


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()

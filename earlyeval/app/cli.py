"""earlyeval: predict agent-run outcomes early, and halt runs whose end is already clear.

The typer app and its wiring: the global options (``--workspace``, ``--version``) and the verbs, in the order
``earlyeval --help`` lists them.  Each verb is a module of ``earlyeval.app.verbs``; ``cli_support.command``
gives every one the same error convention (one line, exit 2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from earlyeval.app.cli_support import app, command, say
from earlyeval.app.verbs import (
    bench,
    bench_scale,
    budget,
    catalog,
    evaluate,
    export,
    formats,
    ingest,
    learning_curve,
    report,
    route,
    score,
    sweep,
    train,
    transfer,
)


def _version(value: bool) -> None:
    if value:
        from earlyeval import __version__

        say(f"earlyeval {__version__}")
        raise typer.Exit()


@app.callback()
def _workspace(
    workspace: Optional[Path] = typer.Option(
        None,
        "--workspace",
        envvar="EARLYEVAL_HOME",
        help="Folder for data/, features/, models/, reports/ (default: $EARLYEVAL_HOME, else the current directory).",
    ),
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """earlyeval: predict agent-run outcomes early, and halt runs whose end is already clear."""
    from earlyeval.config.workspace import set_workspace

    set_workspace(workspace)


VERBS = (
    ingest.ingest,
    train.train,
    evaluate.evaluate,
    learning_curve.learning_curve,
    sweep.sweep,
    score.score,
    bench.bench,
    bench_scale.bench_scale,
    budget.budget,
    route.route,
    export.export,
    transfer.transfer,
    formats.formats,
    report.report,
)
for verb in VERBS:
    command(verb)
command(catalog.new, on=catalog.catalog_app)
app.add_typer(catalog.catalog_app, name="catalog")


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    app()

"""``earlyeval catalog new NAME --runs FOLDER...``: a starter catalog for your own benchmark, written to
``<workspace>/data/NAME.toml`` (``workflows.starter_catalog``: formats sniffed, agents by folder, label files
found and checked).  docs/catalogs.md explains every key it writes and what to add."""

from __future__ import annotations

import os
from pathlib import Path
from typing import List

import typer

from earlyeval.app.cli_support import say, say_outputs, setup_logging, verbose_option

catalog_app = typer.Typer(
    help="Write a benchmark catalog for your own runs (docs/catalogs.md).", no_args_is_help=True
)


def new(
    ctx: typer.Context,
    name: str = typer.Argument(
        ..., help="The benchmark's name: writes <workspace>/data/NAME.toml."
    ),
    runs: List[Path] = typer.Option(
        ..., "--runs", help="A folder of runs, one sub-folder per agent (repeatable)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing catalog of that name."),
    verbose: bool = verbose_option(),
) -> None:
    """Write a starter catalog: one [[runs]] entry per agent folder and format, labels found and checked."""
    from earlyeval.config import file_schemas, schema
    from earlyeval.config.catalog import available_benches
    from earlyeval.config.workspace import data_dir, is_bench_name
    from earlyeval.core.atomic import write_text
    from earlyeval.core.errors import CatalogError, SettingError
    from earlyeval.workflows.starter_catalog import catalog_text, starter_runs

    setup_logging(verbose, ctx)
    err = lambda key, why: SettingError("catalog new", "NAME", why)  # noqa: E731
    schema.check(file_schemas.CATALOG.fields["bench"], name, err)  # the catalog's own `bench` rule
    if not is_bench_name(name):
        raise SettingError("catalog new", "NAME", f"{name!r} is not a benchmark name")
    target = data_dir(name).with_suffix(".toml")
    if target.exists() and not force:
        raise CatalogError(str(target), "<file>", "exists: give --force to replace it")
    folders = [Path(r).resolve() for r in runs]
    for f in folders:
        if not f.is_dir():
            raise FileNotFoundError(f"--runs {f}: no such folder")
    root = Path(os.path.commonpath(folders)) if len(folders) > 1 else folders[0]
    entries = starter_runs(folders, root)
    if not entries:
        raise SettingError(
            "catalog new",
            "--runs",
            f"no known format reads any file under {', '.join(map(str, folders))} "
            "(`earlyeval formats` lists them)",
        )
    write_text(target, catalog_text(name, entries))
    if name in available_benches() and target != available_benches()[name]:
        say(f"note: {name} is a shipped catalog's name: this file overrides it in this workspace")
    for e in entries:
        label = e.labels[0].format if e.labels else "NONE"
        say(f"{e.agent:<40} {e.format:<24} {e.n_runs:>5} runs  labels: {label}")
    missing = [e.agent for e in entries if not e.labels]
    if missing:
        say(f"warning: no label file found for {', '.join(missing)}: add `labels` by hand")
    say(f"next: earlyeval ingest --bench {name} --data-root {root}")
    say(f"      earlyeval train --bench {name} --data-root {root}")
    say_outputs(catalog=target)

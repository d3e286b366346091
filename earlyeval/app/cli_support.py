"""The CLI's shared pieces: the typer app, option factories, logging setup, the error convention of every verb
(one line, exit 2: ``command``), progress and output lines.  The verbs themselves are in ``earlyeval.app.cli``."""

from __future__ import annotations

import functools
import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any, Optional

import typer

from earlyeval.app.options import check_bench, check_scheduler, printable

HELP = """earlyeval: predict agent-run outcomes early, and halt runs whose end is already clear.

Most verbs take --bench (a catalog: earlyeval/catalogs/<bench>.toml, or the workspace's data/<bench>.toml); every verb ends by printing where its outputs are.
"""
# click's conventions: -h and --help everywhere, usage errors as click prints them (exit 2, no traceback, no box)
app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help=HELP,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

log = logging.getLogger("earlyeval.app.cli")


def bench_option(
    default: Any = ...,
    help: str = "Benchmark catalog name, e.g. swebench (see earlyeval/catalogs/).",
) -> Any:
    return typer.Option(default, "--bench", "-b", help=help, callback=check_bench)


DataRoot = typer.Option(
    None,
    "--data-root",
    help="Folder holding the shared runs (default: $EARLYEVAL_DATA, else ../shared/data).",
)
VERBOSE_HELP = "Log progress detail and library warnings (INFO level) to stderr."
LABEL_FORMATS = "sb-cli, instance-reports, harness-lists, resolved-list, openhands-md, csv-summary, resolved-submissions"  # ingest.labels.READERS (checked by a test)
JSON_HELP = "Print the report as JSON on stdout (and nothing else there) instead of the table."
SEED_HELP = "Random seed (LightGBM, subsampling, warm-start draws): same seed, same results."


def verbose_option() -> Any:
    return typer.Option(False, "--verbose", "-v", help=VERBOSE_HELP)


SCHEDULER_HELP = (
    "Run on a dask.distributed cluster: local (a LocalCluster, one worker process per core), local:N "
    "(N worker processes), or a running scheduler's address tcp://HOST:PORT (docs/scale.md). "
    "Default: $EARLYEVAL_SCHEDULER, else everything in this process."
)


def scheduler_option() -> Any:
    return typer.Option(
        None,
        "--scheduler",
        envvar="EARLYEVAL_SCHEDULER",
        help=SCHEDULER_HELP,
        callback=check_scheduler,
    )


def backend_for(scheduler: Optional[str]) -> Any:
    """Where the verb's stages run, for the ``with`` block (``workflows.backend.Backend``): chosen once, here.
    In this process without a scheduler; a ``scale.backend.DaskBackend`` with one (dask is imported only then)."""
    import contextlib

    from earlyeval.scale.spec import parse_scheduler
    from earlyeval.workflows.backend import InProcess

    spec = parse_scheduler(scheduler)
    if spec is None:
        return contextlib.nullcontext(InProcess())
    try:
        from earlyeval.scale.backend import open_backend
    except ImportError as e:
        raise user_error(
            ImportError(
                f"needs the dask extra ({e}): make install, or pip install '.[dask]' in the "
                "repository (docs/scale.md)"
            ),
            "--scheduler",
        )
    return open_backend(spec, progress=lambda m: log.info("%s", m))


def cli_eval_config(bench: str, **options: Any) -> Any:
    """The catalog's ``EvalConfig`` with the verb's options; a bad one is a ``SettingError`` naming the option."""
    from earlyeval.core.errors import SettingError
    from earlyeval.evaluation.settings import eval_config

    try:
        return eval_config(bench, **options)
    except SettingError as e:
        if e.key not in options:
            raise
        raise SettingError("--" + e.key.replace("_", "-"), e.key, e.reason) from None


def setup_logging(verbose: bool, ctx: Any = None) -> None:
    """Logging to stderr.  Library warnings (``warnings.warn``) are routed into the log (logger
    'py.warnings'): shown with -v, else logged at debug level and summed up in one line at the end."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format=LOG_FORMAT)
    for h in (
        logging.getLogger().handlers
    ):  # the log reaches the terminal too: names escaped there as well
        if isinstance(h, logging.StreamHandler) and getattr(h, "stream", None) is sys.stderr:
            h.setFormatter(PrintableFormatter(LOG_FORMAT))
    pyw = logging.getLogger("py.warnings")
    prev = warnings.showwarning
    count = [0]

    def _show(
        message: Any, category: Any, filename: str, lineno: int, file: Any = None, line: Any = None
    ) -> None:
        count[0] += 1
        text = warnings.formatwarning(message, category, filename, lineno, line).rstrip()
        pyw.log(logging.WARNING if verbose else logging.DEBUG, "%s", text)

    warnings.showwarning = _show

    def _done() -> None:
        warnings.showwarning = prev
        if count[0] and not verbose:
            say(f"note: {count[0]} library warning(s) hidden (run with -v to see them)", err=True)

    if ctx is not None:
        ctx.call_on_close(_done)


LOG_FORMAT = "%(levelname)s %(name)s: %(message)s"


def say(message: Any = "", err: bool = False, nl: bool = True) -> None:
    """Every line the CLI prints goes through here (``printable``)."""
    typer.echo(printable(str(message)), err=err, nl=nl)


class PrintableFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def command(f: Any, on: Any = None) -> Any:
    """Verb ``f`` registered on ``app`` (``app.command()``).  Errors a user can fix (a missing file, a malformed
    catalog or model dir, an unknown agent: ``EarlyEvalError``, ``FileNotFoundError``, ``ValueError``) print one
    line and exit 2 instead of a traceback; with --verbose the traceback follows in the log."""

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        from earlyeval.core.errors import EarlyEvalError

        try:
            return f(*args, **kwargs)
        except (EarlyEvalError, FileNotFoundError, ValueError) as e:
            if kwargs.get("verbose"):
                log.info("traceback of the error below", exc_info=True)
            raise user_error(e) from None
        except BrokenPipeError:
            raise
        except (
            KeyboardInterrupt
        ):  # Ctrl-C: one line, no traceback; locks are released, staging removed on the way
            if kwargs.get("verbose"):
                log.info("traceback of the interruption", exc_info=True)
            say(
                "error: interrupted (Ctrl-C): stopped; no output was replaced by a partial one",
                err=True,
            )
            raise typer.Exit(130) from None
        except OSError as e:  # a fault of the machine outside the atomic writers (reading, a library's own write)
            if kwargs.get("verbose"):
                log.info("traceback of the error below", exc_info=True)
            raise user_error(
                e if not e.filename else OSError(f"{e.strerror or e}: {e.filename}")
            ) from None

    return (on or app).command()(run)


def user_error(e: Exception, param: str | None = None) -> typer.Exit:
    """One line on stderr and exit 2, for bad input the user can fix (no traceback)."""
    text = " ".join(str(e).split())  # one line, whatever the message held
    say(f"error: {param + ': ' if param else ''}{text}", err=True)
    return typer.Exit(2)


def say_outputs(err: bool = False, **paths: Path | str) -> None:
    say("\nOutputs:", err=err)
    for k, p in paths.items():
        say(f"  {k:<12} {p}", err=err)


def progress_line(msg: str) -> None:
    say(f"  … {msg}", err=True)


def print_json(obj: Any) -> None:
    say(json.dumps(obj, indent=1, default=str))

"""The CLI's option checkers and progress bar, apart from its commands (typer callbacks: a bad value is a usage error)."""

from __future__ import annotations

import logging
import sys
from typing import Any, Optional, TextIO

import typer

from earlyeval.core.text import printable

# the CLI's logger: the bar's messages log under the same name as before
log = logging.getLogger("earlyeval.app.cli")


def bad_value(message: str, **kw: Any) -> typer.BadParameter:
    """A usage error whose text is ``printable`` (click prints it itself, past ``cli_support.say``)."""
    return typer.BadParameter(printable(message), **kw)


def check_bench(value: Optional[str]) -> Optional[str]:
    """A catalog name this workspace knows; else a usage error listing them."""
    if value is None:
        return value
    from earlyeval.config.catalog import available_benches

    known = sorted(available_benches())
    if value not in known:
        raise bad_value(f"unknown benchmark {value!r}; available: {', '.join(known)}")
    return value


def check_format(value: Optional[str]) -> Optional[str]:
    """A registered run format, 'auto' (read from the files) or a dotted path 'pkg.mod:Class'; else a usage error listing them."""
    if value is None or value == "auto" or ":" in value:
        return value
    from earlyeval.ingest import FORMATS

    known = sorted(FORMATS.known())
    if value not in known:
        raise bad_value(f"unknown format {value!r}; valid: auto, {', '.join(known)}")
    return value


def check_as_of(value: Optional[str]) -> Optional[str]:
    """--as-of: a real calendar date YYYY-MM-DD (2024-13-45 is refused), 'run' or 'all'."""
    if value is None or value in ("run", "all"):
        return value
    from earlyeval.config.schema import Invalid, parse_date

    try:
        return parse_date(value, "--as-of")
    except Invalid as e:
        raise bad_value(f"{e.reason}; expected YYYY-MM-DD, 'run' or 'all'")


def check_thresholds(value: Optional[str]) -> Optional[str]:
    if value is None:
        return value
    from earlyeval.model.thresholds import ThresholdError, parse_thresholds

    try:
        parse_thresholds(value)
    except ThresholdError as e:
        raise bad_value(str(e))
    return value


def check_halt_on_option(value: str) -> str:
    from earlyeval.model.policy import check_halt_on

    try:
        return check_halt_on(value, "--halt-on")
    except ValueError as e:
        raise bad_value(str(e))


def check_warm_rule(value: str) -> str:
    from earlyeval.core.errors import MissingExtraError

    try:
        from earlyeval.fitting.thresholds import WARM_RULES
    except MissingExtraError:  # without [train]: the verb itself says so, in one line (issue 42)
        return value

    if value not in WARM_RULES:
        raise bad_value(f"{value!r}: one of {', '.join(WARM_RULES)}")
    return value


def check_what_if(value: Optional[str]) -> Optional[str]:
    if value is None or value == "model":
        return value
    try:
        taus = [float(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise bad_value(
            f"expected 'model' or a comma list of thresholds (e.g. 0.8,0.9,0.95,10), not {value!r}"
        )
    if not taus or any(not (0.5 < t <= 1.0 or t == 10.0) for t in taus):
        raise bad_value(f"thresholds must be in (0.5, 1] (or 10 = never), got {value!r}")
    return value


def check_scheduler(value: Optional[str]) -> Optional[str]:
    """--scheduler / $EARLYEVAL_SCHEDULER: local, local:N or an address (checked without importing dask)."""
    from earlyeval.scale.spec import parse_scheduler

    try:
        parse_scheduler(value)
    except ValueError as e:
        raise bad_value(str(e))
    return value


class Bar:
    """One tqdm progress bar over the model fits ("fit without [...]" messages), with its total (hence an
    ETA) from the stage's plan (the ``evaluate.FITS_PLANNED`` message: ``evaluate.planned_fits``, counted
    before the first fit); drawn on a terminal only (quiet when stderr is a file or a pipe); every message
    goes to the debug log (shown with -v)."""

    def __init__(
        self, bench: str, key: str, desc: str, verbose: bool, file: TextIO | None = None
    ) -> None:
        from tqdm.auto import tqdm

        self.key = key  # the stage and its configuration (kept for the log)
        self.verbose = verbose
        self.file = file or sys.stderr
        self.total: int | None = None
        self.n = 0
        self.bar = tqdm(
            total=None,
            desc=desc,
            unit="fit",
            dynamic_ncols=True,
            file=self.file,
            leave=True,
            disable=None,
        )

    def __call__(self, msg: str) -> None:
        from earlyeval.evaluation.fit_plan import FITS_PLANNED

        log.debug("%s", msg)
        if self.verbose:
            self.bar.write(f"  … {msg}", file=self.file)
        if msg.startswith(FITS_PLANNED):
            self.total = int(msg[len(FITS_PLANNED) :])
            self.bar.total = self.total
            self.bar.refresh()
        elif msg.startswith("fit without"):
            self.n += 1
            self.bar.update(1)
        else:
            self.bar.set_postfix_str(msg[:40])

    def close(self, ok: bool) -> None:
        self.bar.close()
        if (
            ok and self.total is not None and self.n != self.total
        ):  # the plan and the fits are one rule: say if not
            log.debug("%s: planned %d fits, made %d", self.key, self.total, self.n)

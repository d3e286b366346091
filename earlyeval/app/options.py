"""The CLI's option checkers and progress bar, apart from its commands (typer callbacks: a bad value is a usage error)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Optional

import typer

log = logging.getLogger("earlyeval.app.cli")  # the CLI's logger: the bar's messages log under the same name as before


def check_bench(value: Optional[str]) -> Optional[str]:
    """A catalog name this workspace knows; else a usage error listing them."""
    if value is None:
        return value
    from earlyeval.config.catalog import available_benches

    known = sorted(available_benches())
    if value not in known:
        raise typer.BadParameter(f"unknown benchmark {value!r}; available: {', '.join(known)}")
    return value


def check_format(value: Optional[str]) -> Optional[str]:
    """A registered run format (or a dotted path 'pkg.mod:Class'); else a usage error listing them."""
    if value is None or ":" in value:
        return value
    from earlyeval.ingest import FORMATS

    known = sorted(FORMATS.known())
    if value not in known:
        raise typer.BadParameter(f"unknown format {value!r}; valid: {', '.join(known)}")
    return value


def check_thresholds(value: Optional[str]) -> Optional[str]:
    if value is None:
        return value
    from earlyeval.modeling.thresholds import ThresholdError, parse_thresholds

    try:
        parse_thresholds(value)
    except ThresholdError as e:
        raise typer.BadParameter(str(e))
    return value


def check_what_if(value: Optional[str]) -> Optional[str]:
    if value is None or value == "model":
        return value
    try:
        taus = [float(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"expected 'model' or a comma list of thresholds (e.g. 0.8,0.9,0.95,10), not {value!r}")
    if not taus or any(not (0.5 < t <= 1.0 or t == 10.0) for t in taus):
        raise typer.BadParameter(f"thresholds must be in (0.5, 1] (or 10 = never), got {value!r}")
    return value


def check_scheduler(value: Optional[str]) -> Optional[str]:
    """--scheduler / $EARLYEVAL_SCHEDULER: local, local:N or an address (checked without importing dask)."""
    from earlyeval.scale.spec import parse_scheduler

    try:
        parse_scheduler(value)
    except ValueError as e:
        raise typer.BadParameter(str(e))
    return value


class Bar:
    """One tqdm progress bar over the model fits ("fit without [...]" messages), with counts and an ETA
    once the number of fits of the same configuration is known from an earlier run (kept in
    features/<bench>/progress_counts.json); every message goes to the debug log (shown with -v)."""

    def __init__(self, bench: str, key: str, desc: str, verbose: bool) -> None:
        from tqdm.auto import tqdm

        from earlyeval.config.workspace import features_dir

        self.path = features_dir(bench) / "progress_counts.json"
        self.key = key
        try:
            self.counts = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.counts = {}
        total = self.counts.get(key) if isinstance(self.counts, dict) else None
        self.verbose = verbose
        self.bar = tqdm(total=total if isinstance(total, int) else None, desc=desc, unit="fit", dynamic_ncols=True,
                        file=sys.stderr, leave=True)
        self.n = 0

    def __call__(self, msg: str) -> None:
        log.debug("%s", msg)
        if self.verbose:
            self.bar.write(f"  … {msg}", file=sys.stderr)
        if msg.startswith("fit without"):
            self.n += 1
            self.bar.update(1)
        else:
            self.bar.set_postfix_str(msg[:40])

    def close(self, ok: bool) -> None:
        self.bar.close()
        if ok and self.n:
            from earlyeval.core.atomic import write_text

            counts = self.counts if isinstance(self.counts, dict) else {}
            counts[self.key] = self.n
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                write_text(self.path, json.dumps(counts, indent=1, sort_keys=True) + "\n")
            except OSError:  # a read-only workspace only loses the ETA of the next run
                pass

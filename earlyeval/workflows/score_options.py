"""The settings of one scoring (``earlyeval score``, ``earlyeval.score``), as one checked record: a bad value is
refused when the record is made, before any run is read, with the message the option's check has always given."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from earlyeval.config.catalog import data_root as _data_root
from earlyeval.core.errors import SettingError
from earlyeval.ingest import format_module
from earlyeval.live.pass_certify import MAX_WORKERS
from earlyeval.workflows.score_checks import check_as_of

# score_runs' keyword arguments that are not settings: objects of this process (a loaded Monitor, a cluster's
# replay function, Task objects or the task table's path) and the progress display
IN_PROCESS = ("tasks", "progress", "monitor", "replay_all")


@dataclasses.dataclass(frozen=True)
class ScoreOptions:
    """How to score a folder of runs (``score.score_runs``); each field is checked as the record is made.

    Attributes
    ----------
    fmt : str
        The runs' native format; "auto": read from the files (``score_checks.detect_format``).
    out : str or Path, optional
        The output folder (default ``reports/score/<runs folder name>``).
    labels : str, optional
        A label source FORMAT:GLOB relative to the runs, in place of the catalog's.
    agent : str, optional
        The agent name to report the runs under (default: the folder name).
    as_of : str, optional
        None (or "run"): each run's own date, its catalog's or its files' (``score_checks.date_runs``: undated
        runs get today's pool and a warning); "" or "all": every submission; a YYYY-MM-DD cutoff.
    same_agent : str, optional
        A regex naming public submissions of this same agent, left out of the prior (``run_context``).
    warm_start : int
        K labelled runs (a seeded random draw) completed first and used by ``fitting.warm.warm_start``; the
        rest is halted with the thresholds it gives; the metrics count every run, the warm ones at full cost.
    seed : int
        The seed of the warm-start draw, and of the pass's order and audit sample.
    thresholds : optional
        Halt with this (tau_s, tau_f) instead of the model's (``Monitor.load``).
    what_if_taus : optional
        Also the frontier over this grid (True: the model's own selection grid).
    csv : str, Path or bool, optional
        The per-run CSV's path (default ``per_run.csv`` beside score.json; False: none).
    data_root : str or Path, optional
        Where catalog run folders are (default ``config.workspace.data_root``).
    force : bool
        Replace a score.json of other runs in the output folder.
    cross_bench : bool
        Score runs of another benchmark than the model's (refused otherwise).
    halt_on : str
        Which predicted outcomes halt ("both", the default of a benchmark pass; "failure": what a live adapter
        saves; "success"), as ``Monitor(halt_on=...)``; recorded in score.json.
    require_signature : bool
        Refuse a model dir not signed with the user's key (``Monitor.load``).
    warm_rule : str
        The warm start's rule: "certify" (the default) or "check".
    pass_replay : bool
        Replay the folder as one benchmark pass (``score_pass``: order shuffled by ``seed``, ``pass_workers``
        simulated workers, an ``audit_share`` audit sample never halted); a ``pass`` block.
    audit_share : float
        With ``pass_replay``: the share of runs audited, in [0, 1].
    pass_workers : int
        With ``pass_replay``: the parallel workers simulated, >= 1.
    mode : str, optional
        "halt" or "shadow" (the monitor decides and records at every step and halts nothing: score.json's
        numbers are what it would have done, with its wrong would-be halts listed per agent); None: the model's
        ``default_mode`` (shadow for a model whose forecast halts below its target), as every adapter.
    """

    fmt: str
    out: str | Path | None = None
    labels: str | None = None
    agent: str | None = None
    as_of: str | None = None
    same_agent: str | None = None
    warm_start: int = 0
    seed: int = 0
    thresholds: Any = None
    what_if_taus: Any = None
    csv: str | Path | bool | None = None
    data_root: str | Path | None = None
    force: bool = False
    cross_bench: bool = False
    halt_on: str = "both"
    require_signature: bool = False
    warm_rule: str = "certify"
    pass_replay: bool = False
    audit_share: float = 0.10
    pass_workers: int = 1
    mode: str | None = None

    def __post_init__(self) -> None:
        """The checks made before any work, in the order score_runs has always made them."""
        if self.fmt != "auto":
            # unknown format: IngestError naming the known ones, before any work
            format_module(self.fmt)
        # a real date, normalised; or None/""/run/all
        object.__setattr__(self, "as_of", check_as_of(self.as_of))
        if (
            isinstance(self.warm_start, bool)
            or not isinstance(self.warm_start, int)
            or self.warm_start < 0
        ):
            raise ValueError(f"--warm-start {self.warm_start!r}: a number of runs >= 0")
        if self.data_root is not None and not _data_root(self.data_root).is_dir():
            raise FileNotFoundError(f"--data-root {self.data_root}: no such folder")
        if self.pass_replay and self.warm_start:
            raise ValueError(
                "--pass replays the folder as one pass in this process: not with --warm-start or --scheduler"
            )
        if self.mode not in (None, "halt", "shadow"):
            raise SettingError("score", "--mode", f"{self.mode!r}: halt or shadow")
        if self.mode == "shadow" and self.pass_replay:
            raise SettingError(
                "score",
                "--mode",
                "shadow halts nothing: a --pass (whose halts are its point) cannot be one",
            )
        _check_counts(self)
        _check_together(self)


def _check_counts(o: ScoreOptions) -> None:
    """The sizes and shares a user gives, each bounded and named (``--pass-workers 1e9`` once allocated a
    billion simulated workers)."""
    for name, v, lo, hi in (
        ("--pass-workers", o.pass_workers, 1, MAX_WORKERS),
        ("--seed", o.seed, 0, 2**63 - 1),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise ValueError(f"{name} {v!r}: an integer in [{lo}, {hi}]")
    share = o.audit_share
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
        raise ValueError(f"--audit-share {share!r} must be in [0, 1]")


# (option, its default, the option without which it is never read)
_NEEDS = (
    ("pass_workers", "--pass-workers", 1, "pass_replay", "--pass"),
    ("audit_share", "--audit-share", 0.10, "pass_replay", "--pass"),
    ("warm_rule", "--warm-rule", "certify", "warm_start", "--warm-start"),
)


def _check_together(o: ScoreOptions) -> None:
    """An option given without the one that reads it would change nothing: refused, naming both."""
    for field, name, default, needs, needs_name in _NEEDS:
        v = getattr(o, field)
        if v != default and not getattr(o, needs):
            raise ValueError(f"{name} {v!r} is read only with {needs_name}, which is not given")

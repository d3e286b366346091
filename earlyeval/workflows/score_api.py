"""``earlyeval.score``: the batch entry point from Python, one row per run in a DataFrame (what
``earlyeval score`` writes as per_run.csv), with score.json beside it for the metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_csv import CSV_COLUMNS, per_run_rows
from earlyeval.workflows.score_options import IN_PROCESS, ScoreOptions

NUMERIC = (
    "steps",
    "halted_step",
    "p_success_at_halt",
    "p_failure_at_halt",
    "input_tokens_spent",
    "input_tokens_saved",
    "output_tokens_spent",
    "output_tokens_saved",
    "cost_usd_spent",
    "cost_usd_saved",
)


def score(
    model: str | Path,
    runs: str | Path,
    *,
    format: str = "auto",
    out: str | Path | None = None,
    **options: Any,
) -> pd.DataFrame:
    """Replay completed runs through the Monitor, as ``earlyeval score`` does.

    Parameters
    ----------
    model : str or Path
        A model directory written by ``earlyeval train``.
    runs : str or Path
        A folder (or file) of completed runs.
    format : str, default "auto"
        The runs' native format (``earlyeval formats``); "auto" reads it from the files.
    out : str or Path, optional
        Where score.json and per_run.csv go (default ``reports/score/<runs folder name>``).
    **options
        The other settings, the fields of ``earlyeval.workflows.score_options.ScoreOptions`` (``as_of``,
        ``labels``, ``halt_on``, ``warm_start``, ``thresholds``, ``force``, ...), and the keywords of
        ``earlyeval.workflows.score.score_runs`` (``tasks``, ``monitor``, ...); ``progress`` is off unless given.

    Returns
    -------
    pandas.DataFrame
        One row per run, the columns of per_run.csv: where it halted (``halted_step``, NaN when it ran to
        the end), the prediction recorded, the true label, and the tokens and dollars spent and saved
        (NaN = unknown, never 0).  ``frame.attrs["score_json"]`` is the path of score.json (metrics per
        agent, skipped files, warnings) and ``frame.attrs["per_run_csv"]`` that of the CSV.

    Raises
    ------
    NothingScoredError
        No run was read (nothing is written).
    ScoreRefusedError
        The scoring would mislead (another scoring in ``out``, a model of another benchmark, ...).
    """
    options.setdefault("progress", False)
    in_process = {k: options.pop(k) for k in IN_PROCESS if k in options}
    paths = score_runs(model, runs, ScoreOptions(format, out=out, **options), **in_process)
    report = json.loads(Path(paths["score"]).read_text())
    rows = [
        {k: (None if v == "" else v) for k, v in r.items()} for r in per_run_rows(report["per_run"])
    ]
    frame = pd.DataFrame(rows, columns=list(CSV_COLUMNS))
    for c in NUMERIC:
        frame[c] = pd.to_numeric(frame[c])
    frame.attrs["score_json"] = str(paths["score"])
    if "csv" in paths:
        frame.attrs["per_run_csv"] = str(paths["csv"])
    return frame

"""The reports one HTML page reads (``report_page.Inputs``): each read once; absent or unreadable is recorded, never raised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from earlyeval.report.html import note

MAKES = {"loao.json": "make evaluate", "loao_predictions.parquet": "make evaluate", "sweep.csv": "make sweep",
         "budget.json": "make budget", "routing.json": "make route",
         "latency.json": "make bench"}


class Inputs:
    """The reports of one benchmark, each read once; a file that is absent or unreadable is recorded, not raised."""

    def __init__(self, bench: str, rdir: Path, fdir: Path) -> None:
        self.bench, self.rdir, self.fdir = bench, rdir, fdir
        self.problems: dict[str, str] = {}
        self.loao = self._json("loao.json")
        self.budget = self._json("budget.json")
        self.routing = self._json("routing.json")
        self.latency = self._json("latency.json")
        self.sweep = self._frame(rdir / "sweep.csv", pd.read_csv)
        self.preds = self._frame(fdir / "loao_predictions.parquet", pd.read_parquet)

    def _json(self, name: str) -> dict[str, Any] | None:
        p = self.rdir / name
        if not p.exists():
            self.problems[name] = f"not run: {MAKES[name]} BENCH={self.bench} writes {p}"
            return None
        try:
            obj = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            self.problems[name] = f"{p}: unreadable ({type(e).__name__}: {e})"
            return None
        if not isinstance(obj, dict):
            self.problems[name] = f"{p}: not a JSON object"
            return None
        return obj

    def _frame(self, p: Path, reader: Callable[[Path], pd.DataFrame]) -> pd.DataFrame | None:
        if not p.exists():
            self.problems[p.name] = f"not run: {MAKES[p.name]} BENCH={self.bench} writes {p}"
            return None
        try:
            return reader(p)
        except Exception as e:  # noqa: BLE001 - any reader error is a note on the page, not a crash
            self.problems[p.name] = f"{p}: unreadable ({type(e).__name__}: {e})"
            return None

    def missing(self, name: str) -> str:
        return note(self.problems.get(name, f"{name}: absent"), missing=True)

"""The reports one HTML page reads (``report_page.Inputs``): each read once; absent or unreadable is recorded, never raised."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import pandas as pd
from markupsafe import Markup

from earlyeval.report.html import figure, note, png_bytes

# the verb that writes each input: a remedy the page names as an ``earlyeval`` command with the workspace and
# benchmark (issue 42: `make` targets exist in a checkout only, not after pip install or for a workspace catalog)
VERBS = {
    "loao.json": "evaluate",
    "loao_predictions.parquet": "evaluate",
    "sweep.csv": "sweep",
    "budget.json": "budget",
    "routing.json": "route",
    "ingest.json": "ingest",
    "latency.json": "bench",
    "latency.png": "bench",
    "budget_intervals.png": "budget",
    "budget_late_recognition.png": "budget",
}


def remedy(name: str, bench: str, rdir: Path) -> str:
    """The command that writes input ``name`` of benchmark ``bench`` whose reports folder is ``rdir``
    (``<workspace>/reports/<bench>``)."""
    verb = VERBS.get(name)
    if verb is None:
        return "its stage"
    return f"earlyeval --workspace {rdir.parent.parent} {verb} --bench {bench}"


MAX_PNG_BYTES = 8 << 20  # a stage's plot is ~100 KB; anything far larger is not one


class Inputs:
    """The reports of one benchmark, each read once; a file that is absent or unreadable is recorded, not raised."""

    def __init__(self, bench: str, rdir: Path, fdir: Path) -> None:
        self.bench, self.rdir, self.fdir = bench, rdir, fdir
        self.problems: dict[str, str] = {}
        self.loao = self._json("loao.json")
        self.budget = self._json("budget.json")
        self.routing = self._json("routing.json")
        self.latency = self._json("latency.json")
        self.ingest = self._json("ingest.json")
        self.sweep = self._frame(rdir / "sweep.csv", pd.read_csv)
        self.preds = self._frame(fdir / "loao_predictions.parquet", pd.read_parquet)

    def _json(self, name: str) -> dict[str, Any] | None:
        p = self.rdir / name
        if not p.exists():
            self.problems[name] = f"not run: {remedy(name, self.bench, self.rdir)} writes {p}"
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
            self.problems[p.name] = f"not run: {remedy(p.name, self.bench, self.rdir)} writes {p}"
            return None
        try:
            return reader(p)
        except Exception as e:  # noqa: BLE001 - any reader error is a note on the page, not a crash
            self.problems[p.name] = f"{p}: unreadable ({type(e).__name__}: {e})"
            return None

    def png(self, name: str, title: str) -> Markup:
        """A stage's own PNG from the reports folder, embedded; a note naming its command when absent."""
        p = self.rdir / name
        try:
            b = p.read_bytes() if p.stat().st_size <= MAX_PNG_BYTES else b""
        except FileNotFoundError:
            return note(
                f"{name}: not made yet ({remedy(name, self.bench, self.rdir)} writes {p})",
                missing=True,
            )
        except OSError as e:
            return note(f"{p}: unreadable ({type(e).__name__}: {e})", missing=True)
        if not b.startswith(b"\x89PNG"):
            return note(f"{p}: not a PNG (or larger than {MAX_PNG_BYTES >> 20} MB)", missing=True)
        return figure(png_bytes(b, title), title)

    def missing(self, name: str) -> Markup:
        return note(self.problems.get(name, f"{name}: absent"), missing=True)


def small_agents(inp: Inputs) -> set[str]:
    """The agents loao.json flags small (held out together, not pooled)."""
    s = set((inp.loao or {}).get("small_agents") or [])
    for a, b in ((inp.loao or {}).get("agents") or {}).items():
        if isinstance(b, dict) and b.get("small_n"):
            s.add(a)
    return s

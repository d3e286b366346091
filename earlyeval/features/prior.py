"""Task-difficulty priors from public outcome history.

The share of public submissions that solved the task, never counting the evaluated agent's own and only those
dated before the run. The exclusion and date rules: docs/architecture.md, "Feature families".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json
from earlyeval.core.trajectory import Step
from earlyeval.features.base import FOLD_FREE, FamilyBase, FamilyResources, RunContext

NAN = float("nan")
DIFFICULTY = {"<15 min fix": 0.0, "15 min - 1 hour": 1.0, "1-4 hours": 2.0, ">4 hours": 3.0}


def _norm(s: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", s.lower())


def default_match_patterns(scaffold: str, model: str) -> list[str]:
    """A submission is the same agent if it names both the scaffold and the model."""
    sc, mo = _norm(scaffold), _norm(model)
    if not sc or not mo:
        return []
    # a model key must not be followed by more model-name characters (gpt4 vs gpt4o)
    return [
        rf"{re.escape(sc)}.*{re.escape(mo)}(?![a-z])",
        rf"{re.escape(mo)}(?![a-z]).*{re.escape(sc)}",
    ]


@dataclass
class PriorTable:
    """Per-submission metadata and per-task resolver lists."""

    submissions: dict[str, dict[str, Any]]  # name -> {split, text, date ("YYYY-MM-DD" or "")}
    resolved_by: dict[str, list[str]]  # task_id -> submission names

    @classmethod
    def load(cls, path: str | Path) -> "PriorTable":
        d = load_json(path)
        if not (
            isinstance(d, dict)
            and isinstance(d.get("submissions"), list)
            and isinstance(d.get("resolved_by"), dict)
            and all(
                isinstance(s, dict) and isinstance(s.get("name"), str) for s in d["submissions"]
            )
            and all(isinstance(v, list) for v in d["resolved_by"].values())
        ):
            raise IngestError(
                str(path),
                "submissions/resolved_by",
                "expected {submissions: [{name, split, date, ...}], resolved_by: {task: [names]}}",
            )
        subs = {}
        for s in d["submissions"]:
            text = " ".join(
                [s.get("name", ""), s.get("folder", ""), s.get("display_name", "") or ""]
                + list(s.get("models") or [])
            )
            subs[s["name"]] = {
                "split": s.get("split", ""),
                "text": _norm(text),
                "date": str(s.get("date") or ""),
            }
        return cls(subs, {k: list(v) for k, v in d["resolved_by"].items()})

    def to_json(self) -> dict[str, Any]:
        return {"submissions": self.submissions, "resolved_by": self.resolved_by}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "PriorTable":
        """The table as ``to_json`` wrote it, checked: a ValueError names the first entry that is not what
        ``pool``/``excluded``/``solve_rate`` read (a model dir's prior family is refused with it)."""
        if (
            not isinstance(d, dict)
            or not isinstance(d.get("submissions"), dict)
            or not isinstance(d.get("resolved_by"), dict)
        ):
            raise ValueError(
                "table: expected {submissions: {name: {...}}, resolved_by: {task: [names]}}"
            )
        for n, sub in d["submissions"].items():
            if not (
                isinstance(sub, dict)
                and all(isinstance(sub.get(k, ""), str) for k in ("split", "text", "date"))
            ):
                raise ValueError(
                    f"table.submissions[{n!r}]: expected {{split, text, date}} strings"
                )
            if sub.get("date") and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", sub["date"]):
                raise ValueError(
                    f"table.submissions[{n!r}].date: {sub['date']!r} is not YYYY-MM-DD"
                )
        for k, v in d["resolved_by"].items():
            if not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
                raise ValueError(f"table.resolved_by[{k!r}]: expected a list of submission names")
        return cls(
            {
                n: {
                    "split": s.get("split", ""),
                    "text": s.get("text", ""),
                    "date": s.get("date", ""),
                }
                for n, s in d["submissions"].items()
            },
            {k: list(v) for k, v in d["resolved_by"].items()},
        )

    def excluded(self, names: list[str], patterns: list[str]) -> set[str]:
        out = {n for n in names if n in self.submissions}
        regs = [re.compile(p) for p in patterns]
        for n, s in self.submissions.items():
            if any(r.search(s["text"]) for r in regs):
                out.add(n)
        return out

    def pool(self, split: str, exclude: set[str], as_of: str = "") -> list[str]:
        """Submissions of ``split`` not excluded and, with ``as_of``, dated strictly before it."""
        return [
            n
            for n, s in self.submissions.items()
            if (not split or s["split"] == split)
            and n not in exclude
            and (not as_of or (bool(s.get("date")) and str(s["date"]) < as_of))
        ]

    def solve_rate(
        self, task_id: str, split: str, exclude: set[str], as_of: str = ""
    ) -> tuple[float, int]:
        pool = self.pool(split, exclude, as_of)
        if not pool or task_id not in self.resolved_by:
            return NAN, len(pool)
        solved = set(self.resolved_by[task_id])
        return sum(1 for n in pool if n in solved) / len(pool), len(pool)


class PriorFamily(FamilyBase):
    name: ClassVar[str] = "prior"
    fit_scope: ClassVar[str] = FOLD_FREE  # the table is reference metadata, loaded, not learned
    needs_task: ClassVar[bool] = True
    _names: ClassVar[list[str]] = ["prior_solve_rate", "prior_n_submissions", "task_difficulty"]

    def __init__(self, table: PriorTable | None = None) -> None:
        self.table = table
        self._excl_cache: dict[tuple, set[str]] = {}

    @property
    def names(self) -> list[str]:
        return list(self._names)

    @classmethod
    def from_config(cls, resources: FamilyResources) -> "PriorFamily":
        return cls(resources.prior_table)

    def check_context(self, ctx: RunContext) -> str | None:
        if ctx.task is None:
            return "the model uses the prior family but no task was given: its features are NaN"
        if self.table is None or ctx.task.task_id not in self.table.resolved_by:
            return (
                "the task is not in the model's public-history table: its prior solve rate is NaN"
            )
        return None

    def fit(self, trajs, contexts) -> "PriorFamily":
        return self  # the table is reference metadata, loaded, not learned

    def exclusions(self, ctx: RunContext) -> set[str]:
        if self.table is None:
            return set()
        key = (tuple(ctx.exclude_submissions), tuple(ctx.prior_match), ctx.scaffold, ctx.model)
        if key not in self._excl_cache:
            pats = list(ctx.prior_match) or default_match_patterns(ctx.scaffold, ctx.model)
            self._excl_cache[key] = self.table.excluded(list(ctx.exclude_submissions), pats)
        return self._excl_cache[key]

    def start(self, ctx: RunContext) -> np.ndarray:
        if self.table is None or ctx.task is None:
            return np.full(len(self._names), NAN)
        split = ctx.split or str(ctx.task.meta.get("split", ""))
        rate, n = self.table.solve_rate(ctx.task.task_id, split, self.exclusions(ctx), ctx.as_of)
        diff = DIFFICULTY.get(str(ctx.task.meta.get("difficulty", "")), NAN)
        return np.asarray([rate, float(n), diff], dtype=np.float64)

    def update(self, state: np.ndarray, step: Step) -> None:
        return None

    def values(self, state: np.ndarray) -> np.ndarray:
        return state

    def get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return ({"table": self.table.to_json() if self.table else None}, {})

    @classmethod
    def from_state(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> "PriorFamily":
        t = meta.get("table")
        return cls(PriorTable.from_json(t) if t else None)

"""Prefix expansion: every labelled run becomes T-1 training rows.

A run of length T >= ``min_steps`` gives prefixes t = 1..T-1 (halting is only
possible before the run ends), each labelled with the run's final outcome and
weighted 1/(T-1), so that every run weighs the same whatever its length (the
weights of one run sum to 1; ARCHITECTURE's "1/T" is the same idea with the
final, never-halted prefix counted).
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("train", "earlyeval.tables.prefixes (prefix tables)", ("pandas",))

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from earlyeval.core.trajectory import Trajectory


@dataclass
class PrefixDropReport:
    min_steps: int
    runs: dict[str, int]  # agent -> labelled runs
    dropped: dict[str, int]  # agent -> runs shorter than min_steps
    median_length: dict[str, float]

    def to_dict(self) -> dict:
        return {
            "min_steps": self.min_steps,
            "agents": {
                a: {
                    "runs": self.runs[a],
                    "dropped": self.dropped.get(a, 0),
                    "dropped_share": round(self.dropped.get(a, 0) / self.runs[a], 4)
                    if self.runs[a]
                    else None,
                    "median_length": self.median_length[a],
                }
                for a in self.runs
            },
        }


def prefix_table(trajs: list[Trajectory], min_steps: int = 1) -> pd.DataFrame:
    """One row per prefix t = 1..T-1 of every labelled run with T >= max(min_steps, 2)."""
    rows = {"run": [], "agent": [], "task_id": [], "t": [], "T": [], "weight": [], "y": []}
    for i, tr in enumerate(trajs):
        T = len(tr.steps)
        if tr.outcome is None or T < max(min_steps, 2):
            continue
        n = T - 1
        rows["run"].extend([i] * n)
        rows["agent"].extend([tr.agent] * n)
        rows["task_id"].extend([tr.task_id] * n)
        rows["t"].extend(range(1, T))
        rows["T"].extend([T] * n)
        rows["weight"].extend([1.0 / n] * n)
        rows["y"].extend([int(tr.outcome)] * n)
    df = pd.DataFrame(rows)
    df["t"] = df["t"].astype(np.int32)
    df["T"] = df["T"].astype(np.int32)
    return df


def drop_report(trajs: list[Trajectory], min_steps: int) -> PrefixDropReport:
    runs, dropped, lengths = Counter(), Counter(), {}
    per_agent: dict[str, list[int]] = {}
    for tr in trajs:
        if tr.outcome is None:
            continue
        runs[tr.agent] += 1
        per_agent.setdefault(tr.agent, []).append(len(tr.steps))
        if len(tr.steps) < max(min_steps, 2):
            dropped[tr.agent] += 1
    for a, ls in per_agent.items():
        lengths[a] = float(np.median(ls))
    return PrefixDropReport(min_steps, dict(runs), dict(dropped), lengths)

"""Does the pass's early-stopped score follow this agent? An anytime-valid test on its audited runs.

A benchmark pass never halts its audited runs, so each one, once graded, shows what the pass would have recorded
for it (the rule's halt, at the thresholds in effect when it started) against what happened: a wrong success halt
(it would have been credited and failed), a wrong failure halt, or neither. If the model follows the agent, wrong
halts of each side are rare; a regressed, weaker or improved agent the model does not follow makes one side
frequent, and the score shifts by as much. The test asks, after every graded audited run, whether either side's
share of wrong halts is above ``margin``: per side a betting martingale (the mean of a few fixed bets on a 0/1
variable), at level alpha/2, so that P(it ever fires | both shares <= margin) <= alpha however long the pass
runs (Ville's inequality). Under that null the score's shift is at most ``margin``. Pure maths: the live pass
imports it. docs/monitor.md, "A pass that notices when it is wrong".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

MARGIN, ALPHA = (
    0.05,
    0.05,
)  # the tolerated share of wrong halts per side, and the test's level (both sides)
BETS = (
    1.0,
    2.0,
    4.0,
)  # the bets whose wealth is averaged (each below 1 / margin: the wealth stays positive)
SIDES = (
    "over",
    "under",
)  # over: wrong success halts (the score too high); under: wrong failure halts


@dataclass
class ShiftTest:
    """The state of the test: per side, the log-wealth of each bet; ``update`` with each graded audited run."""

    margin: float = MARGIN
    alpha: float = ALPHA
    n: int = 0
    wrong: dict[str, int] = field(default_factory=dict)
    log_wealth: dict[str, list[float]] = field(default_factory=dict)
    rejected: str | None = None  # the side that fired first ("over" / "under"), or None
    rejected_at: int | None = None

    def __post_init__(self) -> None:
        if not (0.0 < self.margin < 1.0 / max(BETS) and 0.0 < self.alpha < 1.0):
            raise ValueError(
                f"margin {self.margin!r} must be in (0, {1.0 / max(BETS):g}) and alpha {self.alpha!r} in (0, 1)"
            )
        for side in SIDES:
            self.wrong.setdefault(side, 0)
            self.log_wealth.setdefault(side, [0.0] * len(BETS))

    def update(self, would_halt: str | None, outcome: int) -> str | None:
        """Fold one graded audited run in: the outcome the rule would have recorded by halting it ("success",
        "failure", or None when it would not have halted it) and its graded 0/1 outcome. Returns the side that
        fired (the first one stays), else None."""
        if would_halt not in ("success", "failure", None) or outcome not in (0, 1):
            raise ValueError(
                f"would_halt success/failure/None and an outcome 0 or 1, not {would_halt!r}, {outcome!r}"
            )
        self.n += 1
        errs = {
            "over": would_halt == "success" and outcome == 0,
            "under": would_halt == "failure" and outcome == 1,
        }
        for side in SIDES:
            x = float(errs[side])
            self.wrong[side] += int(x)
            lw = self.log_wealth[side]
            for k, b in enumerate(BETS):
                lw[k] += math.log1p(b * (x - self.margin))
        if self.rejected is None:
            for side in SIDES:
                if self.wealth(side) >= 2.0 / self.alpha:
                    self.rejected, self.rejected_at = side, self.n
                    break
        return self.rejected

    def wealth(self, side: str) -> float:
        """The mixture's wealth for ``side``: the mean over the bets (a martingale when its share is ``margin``)."""
        lw = np.asarray(self.log_wealth[side])
        m = float(lw.max())
        return float(math.exp(m) * np.mean(np.exp(lw - m)))

    def summary(self) -> dict[str, object]:
        """What a report or a log line says of the test."""
        return {
            "graded_audited_runs": self.n,
            "wrong_halts": dict(self.wrong),
            "margin": self.margin,
            "alpha": self.alpha,
            "fired": self.rejected,
            "fired_after": self.rejected_at,
            "evidence": {s: self.wealth(s) for s in SIDES},
            "threshold": 2.0 / self.alpha,
        }

    @classmethod
    def replay(
        cls, pairs: Iterable[tuple[str | None, int]], margin: float = MARGIN, alpha: float = ALPHA
    ) -> "ShiftTest":
        """The test after these (would_halt, outcome) pairs, in order: how a pass re-derives it from its records."""
        t = cls(margin, alpha)
        for h, y in pairs:
            t.update(h, y)
        return t


def detectable_share(
    n_audit: int,
    alpha: float = ALPHA,
    margin: float = MARGIN,
    power: float = 0.8,
    draws: int = 400,
    seed: int = 0,
) -> float | None:
    """The smallest share of wrong halts of one side (in steps of 0.05 above ``margin``) that ``n_audit`` graded
    audited runs make the test fire on with probability at least ``power`` (simulated, seeded): the shift a pass
    of this size and audit share can see at all. None when not even a share of 0.9 is."""
    if n_audit <= 0:
        return None
    rng = np.random.default_rng(seed)
    u = rng.random((draws, n_audit))
    for share in np.arange(margin + 0.05, 0.901, 0.05):
        hits = 0
        for row in u < share:
            t = ShiftTest(margin, alpha)
            for x in row:
                if t.update("success" if x else None, 0):
                    hits += 1
                    break
        if hits / draws >= power:
            return float(round(share, 2))
    return None


def shift_summary(test: ShiftTest) -> dict[str, Any]:
    """The test as a pass's state, report and logs say it: its numbers and, once it fired, the side turned off
    for the rest of the pass and why (``fallback``)."""
    out: dict[str, Any] = test.summary()
    side = test.rejected
    out["fallback"] = (
        None
        if side is None
        else (
            "the audited runs show the model does not follow this agent: after "
            f"{test.rejected_at} graded audited runs, the share that would have been halted as "
            f"{'successes that failed' if side == 'over' else 'failures that succeeded'} "
            f"is above {test.margin:.0%} (anytime-valid test, level {test.alpha:g}); "
            f"{'success' if side == 'over' else 'failure'} halts are off for the rest of the pass"
        )
    )
    return out


def detectable_note(expected_runs: int, audit_share: float) -> dict[str, Any]:
    """What a pass of ``expected_runs`` runs auditing ``audit_share`` of them can see, said up front: the smallest
    share of wrong halts of one side its test fires on with 80 % power (``detectable_share``), in a sentence."""
    n_audit = int(round(int(expected_runs) * audit_share))
    share = detectable_share(n_audit)
    seen = (
        "too few audited runs for the shift test to see any shift"
        if share is None
        else f"the shift test sees a share of wrong halts of {share:.0%} or more (80 % power)"
    )
    return {
        "expected_runs": int(expected_runs),
        "audited": n_audit,
        "share": share,
        "sentence": f"{int(expected_runs)} runs, about {n_audit} audited: {seen}",
    }


__all__ = [
    "ALPHA",
    "BETS",
    "MARGIN",
    "SIDES",
    "ShiftTest",
    "detectable_note",
    "detectable_share",
    "shift_summary",
]

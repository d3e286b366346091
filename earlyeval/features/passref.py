"""Pass-relative features: a step read against the agent's own finished runs in this pass (issue 28 item 2).

What a step count or a test count means depends on the agent (docs/architecture.md, "pass-relative
features"), so a step is also described against a reference: the pass's *audited* runs (a seeded random share,
never halted, so their lengths are uncensored) that finished before this run started
(``RunContext.pass_reference``).  Label-free.  With fewer than ``MIN_REFERENCE`` of them the features are NaN:
the cold start is the missing-value path, and it never halts a run by itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Mapping

import numpy as np

from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.features.base import RunContext, StatelessFamily
from earlyeval.features.signals import step_kinds

MIN_REFERENCE = 5  # finished audited runs before the features are defined
NAN = float("nan")


@dataclass(frozen=True)
class RunProfile:
    """What a finished run leaves for the runs after it: its length, its first edit (0-based step index,
    None when it never edited) and how many of its steps ran tests.  No label, no usage."""

    steps: int
    first_edit: int | None
    tests: int

    def to_dict(self) -> dict[str, Any]:
        return {"steps": self.steps, "first_edit": self.first_edit, "tests": self.tests}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], where: str = "profile") -> "RunProfile":
        """A profile from its dict; a ValueError names the field that is not a count."""

        def count(k: str, none_ok: bool = False) -> Any:
            v = d.get(k) if isinstance(d, Mapping) else None
            if v is None and none_ok:
                return None
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{where}.{k}: {v!r} is not a count >= 0")
            return v

        p = cls(count("steps"), count("first_edit", none_ok=True), count("tests"))
        if p.first_edit is not None and p.first_edit >= p.steps:
            raise ValueError(
                f"{where}.first_edit: {p.first_edit} is not a step of a {p.steps}-step run"
            )
        if p.tests > p.steps:
            raise ValueError(f"{where}.tests: {p.tests} test steps in a {p.steps}-step run")
        return p


@dataclass(frozen=True, eq=False)
class PassReference:
    """The sorted distributions of the reference runs' profiles (``of``: None below ``MIN_REFERENCE``)."""

    steps: np.ndarray  # lengths, ascending
    first_edit: np.ndarray  # first-edit index, ascending; inf = never edited
    test_rate: np.ndarray  # tests per step, ascending
    n: int
    median_steps: float  # of ``steps``: read at every step, computed once

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, PassReference)
            and self.n == other.n
            and all(
                np.array_equal(getattr(self, k), getattr(other, k))
                for k in ("steps", "first_edit", "test_rate")
            )
        )

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def of(cls, profiles: Iterable[RunProfile]) -> "PassReference | None":
        ps = [p for p in profiles if p.steps > 0]
        if len(ps) < MIN_REFERENCE:
            return None
        return cls(
            np.sort(np.asarray([p.steps for p in ps], dtype=np.float64)),
            np.sort(
                np.asarray(
                    [math.inf if p.first_edit is None else p.first_edit for p in ps],
                    dtype=np.float64,
                )
            ),
            np.sort(np.asarray([p.tests / p.steps for p in ps], dtype=np.float64)),
            len(ps),
            float(np.median([p.steps for p in ps])),
        )


def _below(a: np.ndarray, x: float, n: int) -> float:
    """Share of ``a`` (sorted) strictly below x."""
    return float(np.searchsorted(a, x, side="left")) / n


class PassState:
    __slots__ = ("ref", "t", "first_edit", "tests")

    def __init__(self, ref: PassReference | None) -> None:
        self.ref = ref
        self.t = 0
        self.first_edit = -1
        self.tests = 0

    def profile(self) -> RunProfile:
        return RunProfile(self.t, self.first_edit if self.first_edit >= 0 else None, self.tests)


class PassFamily(StatelessFamily):
    """The step against the pass's reference runs; counts as the behaviour family counts them."""

    name: ClassVar[str] = "pass"
    _names: ClassVar[list[str]] = [
        "pass_still_running",
        "pass_step_over_median",
        "pass_edited_by_now",
        "pass_edit_earlier_than",
        "pass_test_rate_pct",
        "pass_reference_runs",
    ]

    def check_context(self, ctx: RunContext) -> str | None:
        if ctx.pass_reference is None:
            return (
                f"no pass reference (fewer than {MIN_REFERENCE} audited runs of this agent finished in its pass):"
                " the pass features are missing"
            )
        return None

    def start(self, ctx: RunContext) -> PassState:
        ref = ctx.pass_reference
        return PassState(ref if isinstance(ref, PassReference) else None)

    def update(self, s: PassState, step: Step) -> None:
        _, kinds_here = step_kinds(step)
        if "edit" in kinds_here and s.first_edit < 0:
            s.first_edit = s.t
        if "test" in kinds_here:
            s.tests += 1
        s.t += 1

    def values(self, s: PassState) -> np.ndarray:
        r = s.ref
        if r is None or s.t == 0:
            return np.full(len(self._names), NAN)
        t, n = s.t, r.n
        edited = s.first_edit >= 0
        return np.asarray(
            [
                1.0
                - float(np.searchsorted(r.steps, t, side="right"))
                / n,  # reference runs longer than t steps
                t / r.median_steps,
                _below(
                    r.first_edit, t, n
                ),  # reference runs that had edited within their first t steps
                1.0 - _below(r.first_edit, s.first_edit + 1, n)
                if edited
                else NAN,  # ... that edited later than this one
                _below(r.test_rate, s.tests / t, n),
                float(n),
            ],
            dtype=np.float64,
        )


def profile_of(traj: Trajectory) -> RunProfile:
    """A finished run's profile as the live pass records it: the family's own counting over the steps a live monitor
    scores, steps 1..T-1 (no loop scores the final, submitting turn; ``replay`` feeds the same), so that training and
    the simulator read the references a live pass hands its monitors."""
    fam = PassFamily()
    s = fam.start(RunContext())
    for step in traj.steps[:-1]:
        fam.update(s, step)
    return s.profile()

"""The pass's anytime-valid shift test (earlyeval/model/shift_test.py): its level under the null, its power on the
shifts the issue names, and that it is re-derived from its records."""

from __future__ import annotations

import numpy as np
import pytest

from earlyeval.model.shift_test import MARGIN, ShiftTest, detectable_share


def _fires_within(share: float, n: int, rng: np.random.Generator, side: str = "over") -> int | None:
    t = ShiftTest()
    halt, y = ("success", 0) if side == "over" else ("failure", 1)
    for i, wrong in enumerate(rng.random(n) < share):
        if t.update(halt if wrong else None, y):
            return i + 1
    return None


@pytest.mark.parametrize("side", ["over", "under"])
def test_it_detects_large_shifts_quickly_on_either_side(side):
    rng = np.random.default_rng(0)
    # +40 pp of wrong halts within 25 graded audited runs in >= 90 % of seeds, +20 pp within 60 in >= 80 %
    d40 = sum(_fires_within(0.4, 25, rng, side) is not None for _ in range(300)) / 300
    d20 = sum(_fires_within(0.2, 60, rng, side) is not None for _ in range(300)) / 300
    assert d40 >= 0.9 and d20 >= 0.8, (d40, d20)


def test_it_fires_at_most_at_its_level_on_agents_within_the_margin():
    rng = np.random.default_rng(1)
    sims, n = 200, 600
    for share in (0.0, 0.02, MARGIN):
        fired = sum(_fires_within(share, n, rng) is not None for _ in range(sims)) / sims
        # the level is alpha over both sides, alpha / 2 = 0.025 for one: 3 Monte Carlo standard errors above it
        assert fired <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / sims), (share, fired)


def test_wrong_halts_of_both_sides_and_the_state_replays_from_the_records():
    rng = np.random.default_rng(2)
    records = [(rng.choice(["success", "failure", None]), int(rng.integers(2))) for _ in range(80)]
    inc = ShiftTest()
    for h, y in records:
        inc.update(h, y)
    again = ShiftTest.replay(records)
    assert again.summary() == inc.summary()
    assert inc.wrong["over"] == sum(h == "success" and y == 0 for h, y in records)
    assert inc.wrong["under"] == sum(h == "failure" and y == 1 for h, y in records)


def test_a_fired_side_stays_and_bad_records_are_refused():
    t = ShiftTest()
    for _ in range(20):
        t.update("success", 0)
    assert t.rejected == "over" and t.rejected_at is not None
    first = t.rejected_at
    for _ in range(50):
        t.update("failure", 1)
    assert (t.rejected, t.rejected_at) == ("over", first)
    with pytest.raises(ValueError, match="outcome"):
        t.update("success", 2)
    with pytest.raises(ValueError):
        t.update("maybe", 0)
    with pytest.raises(ValueError, match="margin"):
        ShiftTest(margin=0.5)


def test_what_a_pass_can_detect_shrinks_with_its_audited_runs():
    shares = [detectable_share(n, draws=200) for n in (10, 25, 60)]
    assert all(s is not None for s in shares)
    assert shares[0] > shares[1] > shares[2] and shares[1] <= 0.4 and shares[2] <= 0.2
    assert detectable_share(0) is None

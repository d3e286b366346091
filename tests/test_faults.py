"""The fault suite: every case, and every example of every property-based class, must end ok or refused with a
named error -- 0 crashes, 0 silent drops or wrong decisions.  Cases: tests/faults_classes.py lists them (the first
suites, tests/faults.py, faults24.py and faults29.py, and the classes by subject, tests/faults_<subject>.py); a
case in its ``XFAIL`` is held to ``xfail(strict=True)``: it fails until the change it waits for lands, and then the
mark must go.  Fuzz classes: tests/fuzz.py (hypothesis, a fresh sample each run: the seed is in the failure
message, ``EARLYEVAL_FUZZ_SEED=<seed>`` replays it).  ``tools/fault_summary.py`` prints the table by class with the
same cases and counts."""

from __future__ import annotations

import pytest
from faults import Env, run_case
from faults_classes import ALL, XFAIL
from fuzz import FUZZ, fuzz_seed, run_fuzz

SEED = fuzz_seed()
PARAMS = [
    pytest.param(
        c,
        n,
        fn,
        id=f"{c}-{n}",
        marks=[pytest.mark.xfail(strict=True, reason=XFAIL[n])] if n in XFAIL else [],
    )
    for c, n, fn in ALL
]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return Env(tmp_path_factory.mktemp("faults"))


@pytest.mark.parametrize("cls,name,fn", PARAMS)
def test_fault(env, cls, name, fn):
    kind, detail = run_case(env, fn)
    if kind == "absent":
        pytest.skip(f"{name}: the machine cannot stage this fault ({detail})")
    assert kind in ("ok", "named"), f"{cls} / {name}: {kind}: {detail}"


@pytest.mark.parametrize("fc", FUZZ, ids=[fc.name for fc in FUZZ])
def test_fuzz(env, fc):
    def gate(kind: str, detail: str, example: object) -> None:
        assert kind in ("ok", "named"), (
            f"{fc.name}: {kind}: {detail} (EARLYEVAL_FUZZ_SEED={SEED} replays this run)"
        )

    print(f"{fc.name}: {fc.n} examples, EARLYEVAL_FUZZ_SEED={SEED}")
    run_fuzz(fc, env, SEED, gate)

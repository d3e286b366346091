"""The fault suite: every case, and every example of every property-based class, must end ok or refused with a
named error -- 0 crashes, 0 silent drops or wrong decisions.  Cases: tests/faults.py (issue 15) and
tests/faults24.py (issue 24), tests/faults29.py (issue 29), tests/faults_settings.py (a monitor's settings) and tests/faults_readers.py (the step readers); fuzz classes: tests/fuzz.py (hypothesis, a fresh sample each run: the seed is in
the failure message, ``EARLYEVAL_FUZZ_SEED=<seed>`` replays it).  ``tools/fault_summary.py`` prints the table by
class with the same cases and counts."""

from __future__ import annotations

import pytest
from faults import CASES, Env, class_of, run_case
from faults24 import CASES24
from faults29 import CASES29
from faults_readers import CASES_READERS
from faults_settings import CASES_SETTINGS
from fuzz import FUZZ, fuzz_seed, run_fuzz

ALL = (
    [(class_of(f, n), n, fn) for f, n, fn in CASES]
    + CASES24
    + CASES29
    + CASES_SETTINGS
    + CASES_READERS
)
SEED = fuzz_seed()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return Env(tmp_path_factory.mktemp("faults"))


@pytest.mark.parametrize("cls,name,fn", ALL, ids=[f"{c}-{n}" for c, n, _ in ALL])
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

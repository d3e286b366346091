"""The fault-injection suite (issue 15): every case must end correct or refused with a named error --
0 crashes, 0 silent drops or wrong decisions.  ``tools/fault_summary.py`` runs the same cases and prints
the counts per finding."""

from __future__ import annotations

import pytest

from faults import CASES, Env, run_case


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return Env(tmp_path_factory.mktemp("faults"))


@pytest.mark.parametrize("finding,name,fn", CASES, ids=[f"{f.split()[0]}-{n}" for f, n, _ in CASES])
def test_fault(env, finding, name, fn):
    kind, detail = run_case(env, fn)
    assert kind in ("correct", "named"), f"{finding} / {name}: {kind}: {detail}"

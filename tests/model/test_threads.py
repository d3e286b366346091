"""The thread policy (earlyeval.model.threads): OpenMP's passive wait policy set before OpenMP loads, unless the
user set one, and LightGBM's threads capped at the cores other processes leave free, unless the user fixed them."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import numpy as np
import pytest
from _bounds import assert_same_number
from _paths import REPO

from earlyeval.model import threads

# a fresh interpreter: was OpenMP mapped when the policy was set, and which policy is in the environment after
SPY = """
import os, sys
os.environ.pop("OMP_WAIT_POLICY", None)
{env}
from earlyeval.model import threads
seen = []
real = threads.configure
def spy(*a, **k):
    seen.append(threads.openmp_loaded())
    return real(*a, **k)
threads.configure = spy
{body}
print(seen[0] if seen else None, threads.openmp_loaded(), os.environ.get("OMP_WAIT_POLICY"))
"""


def _spy(body: str, env: str = "") -> list[str]:
    r = subprocess.run(
        [sys.executable, "-c", SPY.format(body=body, env=env)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"},
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.split()[-3:]


def test_the_offline_stack_sets_the_passive_policy_before_lightgbm_loads_openmp():
    assert _spy("import earlyeval.fitting.estimator") == ["False", "True", "PASSIVE"]
    assert _spy("import earlyeval.fitting.budget_quantiles") == ["False", "True", "PASSIVE"]


def test_the_cli_sets_it_first():
    body = (
        "sys.argv = ['earlyeval', '--version']\nimport earlyeval.__main__ as m\n"
        "try:\n    m.main()\nexcept SystemExit:\n    pass"
    )
    assert _spy(body)[0] == "False" and _spy(body)[2] == "PASSIVE"


def test_a_policy_the_user_set_is_kept():
    assert _spy("import earlyeval.fitting.estimator", "os.environ['OMP_WAIT_POLICY'] = 'active'")[
        2
    ] == ("active")
    env = {"OMP_WAIT_POLICY": " ACTIVE "}
    assert threads.configure(env) == "ACTIVE" and env["OMP_WAIT_POLICY"] == " ACTIVE "
    env = {}
    assert threads.configure(env) == "PASSIVE" and env == {"OMP_WAIT_POLICY": "PASSIVE"}


def test_fit_threads_follows_the_free_cores_at_most_n_jobs(monkeypatch):
    monkeypatch.delenv("EARLYEVAL_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "free_cores", lambda: 1)
    assert threads.fit_threads(2) == 1
    monkeypatch.setattr(threads, "free_cores", lambda: 8)
    assert threads.fit_threads(2) == 2 and threads.fit_threads(16) == 8


def test_a_count_the_user_fixed_wins(monkeypatch):
    monkeypatch.setattr(threads, "free_cores", lambda: 1)
    monkeypatch.delenv("EARLYEVAL_THREADS", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3,1")
    assert threads.fit_threads(8) == 3 and threads.fit_threads(2) == 2
    monkeypatch.setenv(
        "OMP_NUM_THREADS", "many"
    )  # malformed: OpenMP ignores it, and so does the policy
    assert threads.fit_threads(2) == 1
    monkeypatch.setenv("EARLYEVAL_THREADS", "4")
    assert threads.fit_threads(8) == 4
    monkeypatch.setenv("EARLYEVAL_THREADS", "0")
    with pytest.raises(Exception, match="EARLYEVAL_THREADS"):
        threads.fit_threads(2)


def test_free_cores_leaves_out_what_other_processes_keep_busy(monkeypatch):
    """Two online cores, both busy over the window while this process slept: one core (never fewer)."""
    ticks = iter([(1000.0, 4000.0), (1200.0, 4200.0)])  # 200 busy of 200 ticks: both cores busy
    monkeypatch.setattr(threads, "_stat_busy", lambda: next(ticks))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads, "cpu_budget", lambda: 2)
    monkeypatch.setattr(threads, "_measured", None)
    monkeypatch.setattr(threads.time, "sleep", lambda s: None)
    assert threads.free_cores() == 1
    ticks = iter([(1000.0, 4000.0), (1050.0, 4200.0)])  # a quarter busy: half a core
    monkeypatch.setattr(threads, "_measured", None)
    assert threads.free_cores() == 2
    assert threads.free_cores() == 2  # trusted for REMEASURE_S: no third read


def test_the_cap_is_lightgbms_own_and_keeps_the_model_file(monkeypatch):
    calls = []

    class Lib:
        def LGBM_SetMaxThreads(self, n):
            calls.append(n.value)

    monkeypatch.setattr(threads, "fit_threads", lambda n: 1)
    assert threads.limit_lightgbm(2, Lib()) == 1 and calls == [1]
    assert threads.limit_lightgbm(2, object()) == 2  # a LightGBM without the call: nothing capped


def test_a_capped_fit_predicts_as_an_uncapped_one_and_records_n_jobs(monkeypatch):
    """The cap changes how many threads run, not what is fitted: the model file keeps num_threads = n_jobs."""
    from earlyeval.fitting.estimator import OutcomeModel
    from earlyeval.model.lgbm_capi import library

    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    y = (X[:, 0] + rng.normal(size=3000) > 0).astype(int)
    groups = np.arange(3000) // 10
    fits = {}
    try:
        for cap in ("1", "2"):
            monkeypatch.setenv("EARLYEVAL_THREADS", cap)
            m = OutcomeModel(n_jobs=2).fit(X, y, groups=groups)
            fits[cap] = m
    finally:
        library().LGBM_SetMaxThreads(ctypes.c_int(-1))
    text = {c: m.boosters_["success"].model_to_string() for c, m in fits.items()}
    assert all("[num_threads: 2]" in t for t in text.values())
    assert_same_number(fits["1"].predict_proba(X), fits["2"].predict_proba(X))

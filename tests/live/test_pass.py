"""The benchmark pass (issue 28 items 1 and 3): audit sample, anytime-valid certification, shared state, fail-open."""

from __future__ import annotations

import json
import math
import multiprocessing as mp

import _paths  # noqa: F401
import numpy as np
import pytest
from _monitor_helpers import ALWAYS_FAIL, constant_model

from earlyeval.core.trajectory import Action, make_step
from earlyeval.live.benchpass import AuditMonitor, Pass, audited, certify_pass
from earlyeval.live.monitor import Monitor
from earlyeval.model.anytime import binom_cdf, cs_bounds, spent_level
from earlyeval.model.policy import NEVER

TASK = {"task_id": "t0", "prompt": "fix the parser in src/app.py", "gold_patch": None}


def _steps(n: int = 5):
    return [
        make_step(
            i,
            [Action("bash", f"python -m pytest tests/test_{i}.py")],
            observation="1 failed, 2 passed",
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def doomed_dir(tmp_path_factory):
    """Every run halts at step 2 predicting failure (P(success) = 0.2 everywhere)."""
    return constant_model(tmp_path_factory.mktemp("m") / "m", 0.2, ALWAYS_FAIL)


def _drive(mon, n: int = 5) -> list:
    mon.start(task=TASK)
    return [mon.observe(s) for s in _steps(n)]


def test_the_audit_sample_is_drawn_before_any_prediction_and_never_halted(doomed_dir):
    ids = [f"run-{i}" for i in range(2000)]
    sample = {r for r in ids if audited(7, r, 0.1)}
    # a function of (seed, run_id) only: the same set in any order, and about the share asked for
    assert sample == {r for r in reversed(ids) if audited(7, r, 0.1)}
    assert abs(len(sample) / len(ids) - 0.1) < 0.02
    assert sample != {r for r in ids if audited(8, r, 0.1)}
    p = Pass(Monitor.load(doomed_dir), audit_share=0.5, seed=3)
    seen = {"audit": 0, "plain": 0}
    for r in ids[:20]:
        # decided before its monitor exists, i.e. before any prediction
        known_before = p.is_audited(r)
        mon = p.monitor(r)
        ds = _drive(mon)
        assert isinstance(mon, AuditMonitor) == known_before
        if known_before:
            seen["audit"] += 1
            assert not any(d.halt for d in ds) and all(d.p_success is not None for d in ds)
            assert any("would: halt" in d.reason for d in ds) and len(mon.probs) == 5
        else:
            seen["plain"] += 1
            assert any(d.halt for d in ds)  # the same model halts a run that is not audited
    assert seen["audit"] and seen["plain"]
    with pytest.raises(ValueError, match="audited"):
        p.finish(next(r for r in ids if p.is_audited(r)), steps=5, halted=True)


def _outside(e: int, n: int, p: float, alpha: float) -> bool:
    """p outside the n-th interval, by the tails (equivalent to comparing with cs_bounds, and cheap)."""
    a = spent_level(alpha, n) / 2.0
    return binom_cdf(e, n, p) < a or 1.0 - binom_cdf(e - 1, n, p) < a


def test_the_anytime_bound_holds_at_its_level_on_synthetic_sequences():
    """P(the true rate ever leaves the interval over n = 1..N) <= alpha, simulated (with binomial slack)."""
    rng = np.random.default_rng(0)
    alpha, reps, N = 0.2, 300, 100
    assert math.isclose(sum(spent_level(alpha, n) for n in range(1, 200000)), alpha, rel_tol=1e-4)
    for e, n, p in (
        (0, 50, 0.1),
        (3, 40, 0.02),
        (10, 30, 0.5),
    ):  # the tail form agrees with the interval
        lo, hi = cs_bounds(e, n, alpha)
        assert _outside(e, n, p, alpha) == (not lo <= p <= hi)
    for p in (0.02, 0.1, 0.4):
        bad = 0
        for _ in range(reps):
            e = np.cumsum(rng.random(N) < p)
            bad += any(_outside(int(e[n - 1]), n, p, alpha) for n in range(1, N + 1))
        assert bad / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps), (p, bad)


def _synthetic_audit(rng, n: int, acc: float) -> list[dict]:
    """Audit runs of an agent whose halts at p_f >= tau are right with probability ``acc`` whatever tau."""
    out = []
    for _ in range(n):
        pf = float(rng.uniform(0.5, 1.0))
        y = int(rng.random() >= acc)  # halted as failure (pf >= tau) is wrong iff the run succeeded
        out.append({"outcome": y, "probs": [[1 - pf, pf]] * 3})
    return out


def test_the_pass_guarantee_holds_at_its_stated_level_on_synthetic_agents():
    """Many passes of agents of known halted accuracy: the certified failure tau's true error exceeds max_error,
    at any time of the pass, in at most alpha of the passes (re-certified after every graded run)."""
    rng = np.random.default_rng(1)
    alpha, max_error, reps = 0.2, 0.10, 30
    for acc in (
        0.85,
        0.995,
    ):  # true error 0.15 (> max_error: any bolder tau is a violation) and 0.005 (fine)
        bad = moved = 0
        for _ in range(reps):
            audit = _synthetic_audit(rng, 240, acc)
            violated = False
            for k in (60, 120, 240):
                cert = certify_pass(audit[:k], (NEVER, 0.99), 1, alpha, max_error)
                tf = cert["pair"][1]
                moved += tf < 0.99
                violated |= tf < 0.99 and (1 - acc) > max_error  # a bolder tau certified
            bad += violated
        assert bad / reps <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / reps), (acc, bad)
        if acc == 0.995:
            assert moved > 0  # the certification can fire: the test above is not vacuous


def test_with_no_finished_run_the_pass_never_halts_more_boldly_than_label_free(
    tmp_path, doomed_dir
):
    mon = Monitor.load(doomed_dir)
    p = Pass(mon, tmp_path / "pass.json", audit_share=0.0)
    assert p.thresholds == (mon.rule.success, mon.rule.failure)
    m = p.monitor("r1")
    assert (m.rule.success, m.rule.failure) == (mon.rule.success, mon.rule.failure)
    # finished runs without graded outcomes (no audit) never move the thresholds
    for i in range(30):
        p.finish(f"r{i}", steps=5, tokens=None, cost=None, halted=True)
    assert p.thresholds == (mon.rule.success, mon.rule.failure)


@pytest.mark.parametrize(
    "content",
    [
        None,
        "{not json",
        json.dumps({"version": 1, "finished": [], "thresholds": [0.6, 0.6]}),
        json.dumps([1, 2]),
    ],
)
def test_a_missing_or_corrupt_pass_state_fails_open_and_says_so(tmp_path, doomed_dir, content):
    path = tmp_path / "pass.json"
    if content is not None:
        path.write_text(content)
    mon = Monitor.load(doomed_dir)
    p = Pass(mon, path)
    assert p.thresholds == (mon.rule.success, mon.rule.failure)
    assert "cold start" in p.status
    if content is not None:
        assert p.warnings and str(path) in p.warnings[0]
    p.finish("x", steps=3, halted=False)  # and it goes on: the next write makes a good state
    assert json.loads(path.read_text())["finished"]["x"]["tokens"] is None
    assert Pass(mon, path).status == "resumed"


def _worker(model_dir: str, path: str, prefix: str, n: int) -> None:
    p = Pass(Monitor.load(model_dir), path, audit_share=0.3, seed=1)
    for i in range(n):
        rid = f"{prefix}-{i}"
        p.finish(
            rid,
            steps=i + 1,
            tokens=None,
            cost=None,
            halted=False,
            outcome=(i % 2) if p.is_audited(rid) else None,
            probs=[[0.4, 0.6]] * 3 if p.is_audited(rid) else None,
        )


def test_two_processes_sharing_one_state_file_lose_no_finish_event(tmp_path, doomed_dir):
    path = tmp_path / "pass.json"
    ctx = mp.get_context("spawn")
    procs = [
        ctx.Process(target=_worker, args=(str(doomed_dir), str(path), k, 40)) for k in ("a", "b")
    ]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join(240)
        assert pr.exitcode == 0
    st = json.loads(path.read_text())
    assert set(st["finished"]) == {f"{k}-{i}" for k in "ab" for i in range(40)}
    n_aud = sum(1 for k in "ab" for i in range(40) if audited(1, f"{k}-{i}", 0.3))
    assert sum("outcome" in r for r in st["finished"].values()) == n_aud
    # the history is derived from the records (one entry per graded run), never stored
    p = Pass(Monitor.load(doomed_dir), path, audit_share=0.3, seed=1)
    assert "history" not in st and len(p.history) == n_aud
    assert [h["n_audited_graded"] for h in p.history] == list(range(1, n_aud + 1))


def test_a_late_grade_certifies_as_an_outcome_given_at_finish(tmp_path, doomed_dir):
    """``grade`` after ``finish``: the same thresholds and history as the outcome given at ``finish``; a run not
    audited, or not finished, is refused with its id named."""
    late = Pass(
        Monitor.load(doomed_dir),
        tmp_path / "late.json",
        audit_share=1.0,
        seed=2,
        alpha=0.5,
        max_error=0.8,
    )
    now = Pass(
        Monitor.load(doomed_dir),
        tmp_path / "now.json",
        audit_share=1.0,
        seed=2,
        alpha=0.5,
        max_error=0.8,
    )
    for i in range(12):
        rid = f"r{i}"
        for p in (late, now):
            _drive(p.monitor(rid))
        late.finish(rid, steps=5)
        now.finish(rid, steps=5, outcome=i % 4 != 0)
    for i in range(12):
        late.grade(f"r{i}", int(i % 4 != 0))
    assert late.thresholds == now.thresholds and late.history[-1] == now.history[-1]
    with pytest.raises(ValueError, match="'nope' has not finished"):
        late.grade("nope", 1)
    plain = Pass(Monitor.load(doomed_dir), audit_share=0.0)
    with pytest.raises(ValueError, match="'r0' is not audited"):
        plain.grade("r0", 1)


def test_a_failure_only_pass_certifies_the_halts_its_monitors_make(tmp_path):
    """``halt_on="failure"`` (every live adapter's default): the success side is off from the start and stays off,
    and a graded run the failure side halts counts against it even when P(success) crossed its tau first (a rule
    halting on both sides would have halted it as a correct success, and never seen the error)."""
    model = constant_model(
        tmp_path / "m", 0.5, {"success": 0.9, "failure": 0.95, "min_halt_step": 1}
    )
    # success predicted at step 1, failure at step 2; it succeeded
    probs = [
        [0.95, 0.05],
        [0.02, 0.98],
        [0.02, 0.98],
    ]
    passes = {
        h: Pass(Monitor.load(model, halt_on=h), tmp_path / f"{h}.json", audit_share=1.0)
        for h in ("failure", "both")
    }
    for p in passes.values():
        for i in range(3):
            p.finish(f"r{i}", steps=4, outcome=1, probs=probs)
    assert passes["failure"].base == (NEVER, 0.95)
    # 3 wrong failure halts of 3: the failure side is rejected
    assert passes["failure"].thresholds == (
        NEVER,
        NEVER,
    )
    # 3 right success halts, no failure halt: nothing certified
    assert passes["both"].thresholds == (
        0.9,
        0.95,
    )
    m = passes["failure"].monitor("r9")
    # the off side keeps its tau
    assert m.monitor.rule.success == 0.9 and m.monitor.rule.pair == (
        NEVER,
        NEVER,
    )


def test_a_pass_whose_audited_runs_contradict_its_halts_turns_that_side_off(doomed_dir, caplog):
    """The shift test (issue 41 item 3): the model predicts failure at every step, and every audited run
    succeeds. The test fires on the "under" side within a few graded runs, failure halts are off for the rest of
    the pass, the state, the summary and the log say so; the same pass with failing runs never fires."""
    probs = [[0.2, 0.8]] * 4

    def run(outcome: int) -> Pass:
        p = Pass(Monitor.load(doomed_dir), audit_share=0.5, seed=1, expected_runs=80)
        for i in range(80):
            rid = f"r{i}"
            if p.is_audited(rid):
                p.finish(rid, steps=5, outcome=outcome, probs=probs)
            else:
                p.finish(rid, steps=5, halted=p.thresholds[1] <= 0.8)
        return p

    with caplog.at_level("WARNING", logger="earlyeval.live.benchpass"):
        wrong = run(1)
    st = wrong.summary()["shift_test"]
    assert st["fired"] == "under" and st["fired_after"] <= 25 and wrong.thresholds[1] == NEVER
    assert "failure halts are off" in st["fallback"] and st["fallback"] in caplog.text
    assert not _drive_halts(wrong)  # a run spawned now is never halted as a failure
    right = run(0)
    assert right.summary()["shift_test"]["fired"] is None and right.thresholds[1] < NEVER
    det = right.summary()["shift_detectable"]
    assert det["audited"] == 40 and 0.05 < det["share"] < 0.5


def _drive_halts(p: Pass) -> bool:
    rid = next(f"new{i}" for i in range(100) if not p.is_audited(f"new{i}"))
    return any(d.halt for d in _drive(p.monitor(rid)))

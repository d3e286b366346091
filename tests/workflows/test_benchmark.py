"""The latency benchmark's report structure (never its timings: they depend on the machine)."""

from __future__ import annotations

import json
import os

from _monitor_helpers import save_tiny

from earlyeval.workflows.benchmark import run_latency_bench
from earlyeval.workflows.benchmark_runs import sample_runs, synthetic_long_run
from earlyeval.workflows.latency_report import BUCKETS


def test_latency_bench_writes_report_and_plot(tmp_path):
    model, _, trajs, tasks = save_tiny(
        tmp_path / "m", families=("behaviour", "gold", "prior"), n=40
    )
    before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    paths = run_latency_bench(
        "synth",
        model,
        per_agent=4,
        synthetic_steps=120,
        trajs=trajs,
        tasks=tasks,
        out=tmp_path / "rep",
        formats={},
    )
    if before is not None:
        assert os.sched_getaffinity(0) == before  # the pin to one CPU is undone
    rep = json.loads(paths["latency"].read_text())
    assert paths["plot"].exists() and paths["plot"].stat().st_size > 1000
    assert rep["predictor"] == "c-api" and rep["setup"]["OMP_NUM_THREADS"] == "1"
    assert rep["synthetic"]["steps"] == 120 and "cycled" in rep["synthetic"]["how"]
    n_real = sum(len(t.steps) for t in sample_runs(trajs, 4))
    assert rep["per_step"]["wall"]["n"] == n_real == rep["sample"]["steps"]
    for stage in ("wall", "cpu", "featurize", "predict"):
        s = rep["per_step"][stage]
        assert s["median_us"] > 0 and s["median_us"] <= s["p90_us"] <= s["p99_us"] <= s["max_us"]
    assert list(rep["by_step_bucket"]) == [
        f"{lo}-{hi}" if hi < 10**9 else f"{lo}+" for lo, hi in BUCKETS
    ]
    assert (
        rep["by_step_bucket"]["101+"]["wall"]["n"] == 20
        and rep["by_step_bucket"]["101+"]["synthetic_share"] == 1.0
    )
    assert rep["by_step_bucket"]["1-10"]["wall"]["n"] > 0
    assert set(rep["step_10_vs_100"]) >= {"median_us_steps_1_10", "median_us_steps_91_100"}
    # the 10,000-step new-file-every-step run: ten timed steps in each of the three buckets
    lr = rep["long_run"]
    assert lr["steps"] == 10_000 and list(lr["by_step_bucket"]) == ["1-10", "91-100", "9991-10000"]
    assert all(v["wall"]["n"] == 10 and v["cpu"]["n"] == 10 for v in lr["by_step_bucket"].values())


def test_synthetic_long_run_cycles_real_steps():
    from _monitor_helpers import make_runs

    runs = make_runs(10, seed=2)
    long = synthetic_long_run(runs, 77)
    assert len(long.steps) == 77 and [s.index for s in long.steps] == list(range(77))
    real_actions = {s.action for t in runs for s in t.steps}
    assert {s.action for s in long.steps} <= real_actions

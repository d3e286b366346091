"""Will it pay (issue 42 item 2): train states the benchmark's own leave-one-agent-out forecast, writes it into
the model directory with the default mode it implies, and every loaded model logs it; a forecast that cannot be
made is said, and the model ships in shadow mode."""

from __future__ import annotations

import json
import logging

import pytest
from synth import SMALL_LGBM, make_dataset, make_trajectories

from earlyeval.app.stages import train as train_stage
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.forecast import sentence
from earlyeval.live.monitor import Monitor


def _cfg(**kw) -> EvalConfig:
    base = dict(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=10,
        n_jobs=1,
        lgbm_params=dict(SMALL_LGBM),
        inner_folds=6,
        warm_repeats=1,
    )
    return EvalConfig(**{**base, **kw})


@pytest.mark.parametrize("below", [False, True])
def test_train_writes_the_forecast_and_the_mode_it_implies(tmp_path, caplog, monkeypatch, below):
    """The synthetic agents are told apart perfectly, so the real forecast pays; ``below`` stands in a forecast
    below its target (the verdict's own rule is forecast.forecast's) to follow the mode it implies."""
    target = 0.95
    if below:
        real = train_stage.forecast

        def short(res, cfg):
            fc = real(res, cfg)
            fc["benchmark_mode"]["halted_accuracy"] = 0.9
            fc.update(verdict="below target", default_mode="shadow")
            fc["sentence"] = sentence(fc, 0.3)
            return fc

        monkeypatch.setattr(train_stage, "forecast", short)
    trajs, tasks = make_trajectories(24)
    ds = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)
    msgs: list[str] = []
    train_stage.train_bench(
        "synth",
        tmp_path / "m",
        _cfg(target_accuracy=target),
        progress=msgs.append,
        budget=False,
        ds=ds,
    )
    man = json.loads((tmp_path / "m" / "manifest.json").read_text())
    fc = man["training"]["forecast"]
    th = man["thresholds"]
    assert fc["agents"] == 4 and fc["verdict"] in ("pays", "below target", "no halts")
    acc = fc["benchmark_mode"]["halted_accuracy"]
    # the verdict is the realised pooled accuracy against the target, and the mode follows it
    if acc is not None and acc >= target:
        assert fc["verdict"] == "pays" and th["default_mode"] == "halt"
        assert not fc["sentence"].startswith("WARNING")
    else:
        assert th["default_mode"] == "shadow" and fc["sentence"].startswith("WARNING")
        assert "shadow mode" in fc["sentence"]
    with caplog.at_level(logging.INFO):
        mon = Monitor.load(tmp_path / "m")
    assert fc["sentence"] in caplog.text
    assert mon.shadow == (th["default_mode"] == "shadow")
    assert Monitor.load(tmp_path / "m", mode="halt").shadow is False  # the user may turn halting on


def test_a_forecast_that_cannot_be_made_is_said_and_ships_in_shadow_mode(tmp_path):
    trajs, tasks = make_trajectories(6)  # too few runs for the leave-one-agent-out's folds
    ds = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)
    train_stage.train_bench(
        "synth", tmp_path / "m", _cfg(holdout_min_runs=2, min_halt_step=2), budget=False, ds=ds
    )
    man = json.loads((tmp_path / "m" / "manifest.json").read_text())
    fc = man["training"]["forecast"]
    assert fc["verdict"] == "unknown" and man["thresholds"]["default_mode"] == "shadow"
    assert fc["sentence"].startswith("WARNING: no forecast") and "could not run" in fc["sentence"]
    assert Monitor.load(tmp_path / "m").shadow

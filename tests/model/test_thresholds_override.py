"""Thresholds chosen at run time: validated, applied by the one halting rule, recorded, never written to the model dir."""

from __future__ import annotations

import json
import math

import pytest
from _monitor_helpers import differs_from, make_runs, quantile_thresholds, save_tiny

from earlyeval.core.errors import ModelDirError, SettingError
from earlyeval.features.evidence import prefix_gates
from earlyeval.fitting.metrics import halting
from earlyeval.live.monitor import Monitor
from earlyeval.live.replay import replay
from earlyeval.model.modeldir import load_model_dir
from earlyeval.model.thresholds import ThresholdError, override, parse_thresholds, source_of


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    path, bundle, trajs, tasks = save_tiny(tmp_path_factory.mktemp("th") / "model")
    return path, bundle, tasks


@pytest.mark.parametrize(
    "spec",
    ["0.3,0.9", "0.9,0.5", "0.9,1.01", "nan,0.9", "inf,0.9", "0.9", "0.9,0.9,0.9", "a,b", ",0.9"],
)
def test_bad_strings_are_refused(spec):
    with pytest.raises(ThresholdError):
        parse_thresholds(spec)


@pytest.mark.parametrize(
    "spec",
    [
        (0.4, 0.9),
        (0.9, math.nan),
        (True, 0.9),
        ("0.9", 0.9),
        {"success": 0.9},
        {"success": 0.9, "failure": 0.9, "extra": 1},
        {"success": 0.9, "failure": 0.9, "min_halt_step": 0},
        (0.9,),
        0.9,
    ],
)
def test_bad_overrides_are_refused(spec):
    with pytest.raises(ThresholdError):
        override({"success": 0.7, "failure": 0.7, "min_halt_step": 1}, spec)


def test_good_overrides():
    base = {"success": 0.7, "failure": 10.0, "min_halt_step": 2}
    assert parse_thresholds(" 0.9 , 1 ") == (0.9, 1.0)
    assert override(base, (0.95, 0.99)) == {"success": 0.95, "failure": 0.99, "min_halt_step": 2}
    assert override(base, "0.8,0.85")["failure"] == 0.85
    assert override(base, {"success": 0.6, "failure": 0.7, "min_halt_step": 3}) == {
        "success": 0.6,
        "failure": 0.7,
        "min_halt_step": 3,
    }
    assert (
        source_of(override(base, (0.95, 0.99)), base) == "override"
        and source_of(base, base) == "model"
    )
    assert source_of(base, base, warm=True) == "warm start"


def test_monitor_load_override_halts_by_the_one_rule_and_keeps_the_dir(tiny):
    path, bundle, tasks = tiny
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    runs = make_runs(30, seed=5, agents=("agent-a",))
    # a valid pair that moves some halts, by construction (quantile_thresholds checks both on these runs)
    th = quantile_thresholds(
        load_model_dir(path),
        runs,
        tasks,
        min_halt_step=1,
        q=0.4,
        need=(differs_from(bundle.thresholds),),
    )
    assert 0.5 < th["success"] <= 1 and 0.5 < th["failure"] <= 1, th
    mon = Monitor.load(path, thresholds=(th["success"], th["failure"]))
    assert (mon.rule.success, mon.rule.failure) == (th["success"], th["failure"])
    assert mon.spawn().thresholds == mon.thresholds  # spawned monitors keep the override
    model = Monitor.load(path)
    assert model.thresholds == {
        k: bundle.thresholds[k] for k in ("success", "failure", "min_halt_step")
    }
    differ = 0
    for t in runs:
        r = replay(mon, t, tasks.get(t.task_id))
        gate = prefix_gates(mon.loaded.evidence, t.steps)
        t_halt, pred = halting(
            r["p_success"], r["p_failure"], th["success"], th["failure"], 1, gate
        )
        assert (r["halt_t"] or 0) == t_halt
        differ += (r["halt_t"] or 0) != (replay(model, t, tasks.get(t.task_id))["halt_t"] or 0)
    assert differ > 0  # the override changed where some runs halt
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    with pytest.raises(SettingError, match=r"'thresholds\[0\]'.*\(0.5, 1\]"):
        Monitor.load(path, thresholds=(0.2, 0.9))  # the record's check, named


def test_editing_thresholds_json_is_still_refused(tiny, tmp_path):
    import shutil

    path, _, _ = tiny
    edited = tmp_path / "edited"
    shutil.copytree(path, edited)
    th = json.loads((edited / "thresholds.json").read_text())
    th["success"] = 0.99
    (edited / "thresholds.json").write_text(json.dumps(th, indent=1, sort_keys=True))
    with pytest.raises(ModelDirError, match="thresholds.json"):
        Monitor.load(edited)

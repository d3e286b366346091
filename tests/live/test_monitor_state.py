"""The Monitor configured by its record, its per-run state apart (issue 44 item 1): ``MonitorConfig`` in,
``RunState`` per ``start()``, one typed map of what is off for a run, "off" printed for a side that never halts,
and ``Monitor.replay`` of a finished run."""

from __future__ import annotations

import re

import numpy as np
import pytest
from _monitor_helpers import ALWAYS_FAIL, constant_model, make_runs, make_tasks, save_tiny

from earlyeval import Monitor, MonitorConfig
from earlyeval.core.decision import NEVER, threshold_text
from earlyeval.core.errors import SettingError
from earlyeval.features import RunContext
from earlyeval.live import reasons
from earlyeval.live.runstate import RunState


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return save_tiny(
        tmp_path_factory.mktemp("state") / "m", families=("behaviour", "gold", "prior")
    )


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    """P(success) = 0.2 at every step; the success side is off (its threshold above 1)."""
    return constant_model(tmp_path_factory.mktemp("off") / "m", 0.2, dict(ALWAYS_FAIL))


def test_load_takes_the_record_or_its_fields_by_name(tiny):
    path, _, _, _ = tiny
    by_name = Monitor.load(path, halt_on="failure", budget=False, top_k=3)
    record = MonitorConfig(halt_on="failure", budget=False, top_k=3)
    by_record = Monitor.load(path, config=record)
    assert by_name.config == by_record.config == record.replace(model=str(path))
    assert (
        Monitor.load(config=by_record.config).config == by_record.config
    )  # the record names the dir
    spawned = by_record.spawn()
    assert spawned.config is by_record.config and spawned.loaded is by_record.loaded
    assert spawned.rule is by_record.rule and spawned.run is not by_record.run
    with pytest.raises(SettingError, match="'model'"):
        Monitor.load(path, config=MonitorConfig(model="elsewhere"))
    with pytest.raises(SettingError, match="'halt_onn': unknown setting"):
        Monitor.load(path, halt_onn="failure")
    _, bundle, _, _ = tiny
    built = Monitor(bundle, MonitorConfig(thresholds="0.91,0.96", budget=False))  # never dropped
    assert built.thresholds == {**bundle.thresholds, "success": 0.91, "failure": 0.96}
    assert bundle.thresholds["success"] != 0.91  # the override is the monitor's, in memory only


def test_each_start_makes_a_new_run_state(tiny):
    path, _, trajs, tasks = tiny
    mon = Monitor.load(path, budget=False)
    before = mon.run
    assert isinstance(before, RunState) and before.states is None and before.t == 0
    t = trajs[0]
    mon.start(task=tasks[t.task_id], run_id=t.run_id, agent=t.agent)
    first = mon.run
    assert first is not before and first.run_id == t.run_id and first.ctx.agent == t.agent
    for step in t.steps[:3]:
        mon.observe(step)
    assert first.t == 3 and first.acted == sum(bool(s.actions) for s in t.steps[:3])
    assert first.last_features is not None and first.last_features.dtype == np.float32
    mon.start(task=tasks[t.task_id], run_id="again")
    assert (
        mon.run is not first and mon.run.t == 0 and first.t == 3
    )  # the old run's state is left as it was


def test_what_is_off_for_a_run_is_one_typed_map(tiny):
    path, _, trajs, tasks = tiny
    mon = Monitor.load(path, budget=False)
    t = trajs[1]
    mon.start(task=tasks[t.task_id], run_id="full")
    assert mon.run.off == {} and mon.run.context == "full"
    mon.start(task=None, run_id="none")
    d = mon.observe(t.steps[0])
    assert set(mon.run.off) == {"halting", "inputs"} and mon.run.context == "none"
    assert d.reason.startswith(f"continue (never halts: {mon.run.off['halting']})")
    mon.start(task={"task_id": "not-a-task", "prompt": "p"}, run_id="partial")
    assert "inputs" in mon.run.off
    assert mon.observe(t.steps[0]).reason.endswith(f"[degraded: {mon.run.off['inputs']}]")

    mon.start(task=tasks[t.task_id], run_id="broken")
    mon.run.states = ["not a family's state"] * len(mon.run.states)  # a family whose update raises
    d = mon.observe(t.steps[0])
    assert "monitor" in mon.run.off and d.reason.startswith("fail-open: ") and d.p_success is None
    assert mon.observe(t.steps[1]).reason == reasons.disabled(mon.run.off["monitor"])


def test_a_side_that_never_halts_is_printed_off(failing):
    mon = Monitor.load(failing, budget=False)
    assert mon.rule.off("success") == "its threshold is off" and mon.rule.off("failure") is None
    assert mon.thresholds["success"] == ALWAYS_FAIL["success"]  # the number stays in the data
    run = make_runs(4, 0)[0]
    ds = mon.replay(run, make_tasks(12).get(run.task_id))
    assert ds[1].halt and ds[1].outcome == "failure"
    for d in ds:
        assert "p_success=0.200 (success halts off: its threshold is off)" in d.reason or (
            d.reason.startswith("already halted")
        )
        assert not re.search(r"[<>]=? ?(2|2\.0|10|10\.0)\b", d.reason), d.reason
    both = Monitor.load(failing, budget=False, halt_on="failure")
    assert both.rule.off("success") == "halt_on=failure"
    assert threshold_text(NEVER) == "off" and threshold_text(0.9) == "0.9"
    assert threshold_text(0.95, ".2f") == "0.95" and threshold_text(None) == "off"


def test_replay_is_the_live_loop_on_a_finished_run(tiny):
    path, _, trajs, tasks = tiny
    mon = Monitor.load(path, budget=False)
    t = trajs[2]
    replayed = mon.replay(t, tasks[t.task_id])
    assert len(replayed) == len(t.steps) - 1
    fed = mon.spawn()
    fed.start_context(RunContext.of(t, tasks[t.task_id], as_of=""), t.run_id)
    live = [fed.observe(s) for s in t.steps[:-1]]
    assert [d.to_dict() for d in replayed] == [d.to_dict() for d in live]
    with_table = Monitor.load(
        path, budget=False, tasks=tasks
    )  # the task, by id, from the monitor's table
    assert [d.p_success for d in with_table.replay(t)] == [d.p_success for d in replayed]

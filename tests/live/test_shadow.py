"""Shadow mode (``MonitorConfig.mode = "shadow"``): the monitor decides and records at every step and halts nothing;
its decisions are the live monitor's, step by step, its first would-be halt where the live one halts.

The unit tests use a constant model; the integration test replays real runs of every SWE-bench agent through the
shipped model (``models/swebench``; a model trained the same way on a bounded sample where it is absent)."""

from __future__ import annotations

import dataclasses

import pytest
from _monitor_helpers import ALWAYS_SUCCEED, constant_model, make_runs, make_tasks

from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import models_dir
from earlyeval.core.decision import Decision
from earlyeval.integrations.base import EarlyStopper
from earlyeval.live.monitor import Monitor
from earlyeval.live.replay import replay

SHADOW_ONLY = ("halt", "outcome", "reason", "shadow", "would_halt", "would_outcome")


def _same_but_halting(live: Decision, shadow: Decision) -> None:
    """Every field equal but those that say whether the run was halted (and the reason's shadow prefix)."""
    a, b = dataclasses.asdict(live), dataclasses.asdict(shadow)
    assert {k: v for k, v in a.items() if k not in SHADOW_ONLY} == {
        k: v for k, v in b.items() if k not in SHADOW_ONLY
    }
    assert not shadow.halt and shadow.shadow and shadow.outcome is None
    assert shadow.would_halt == live.halt and shadow.would_outcome == live.outcome
    assert shadow.reason == (
        f"shadow (nothing halts): would {live.reason}" if live.halt else live.reason
    )


def _pair_of(path, **settings):
    return Monitor.load(path, **settings), Monitor.load(path, mode="shadow", **settings)


def test_a_shadow_monitor_halts_nothing_and_records_the_live_decisions(tmp_path):
    model = constant_model(tmp_path / "m", 0.8, ALWAYS_SUCCEED)
    tasks = make_tasks(12)
    live, shadow = _pair_of(model, halt_on="both")
    halted = 0
    for t in make_runs(12, seed=1):
        ds_live = live.replay(t, tasks.get(t.task_id))
        ds_shadow = shadow.replay(t, tasks.get(t.task_id))
        for a, b in zip(ds_live, ds_shadow):
            _same_but_halting(a, b)
        halted += any(d.halt for d in ds_live)
        assert not any(d.halt for d in ds_shadow)
    assert halted > 0  # the live monitor halted: the comparison is not vacuous


def test_an_early_stopper_in_shadow_mode_never_stops_and_records_where_it_would_have(tmp_path):
    model = constant_model(tmp_path / "m", 0.8, ALWAYS_SUCCEED)
    tasks = make_tasks(12)
    (t,) = make_runs(1, seed=2)
    stoppers = {
        m: EarlyStopper(Monitor.load(model, halt_on="both", mode=m)) for m in ("halt", "shadow")
    }
    for es in stoppers.values():
        es.start(tasks.get(t.task_id), t.run_id)
        for st in t.steps:
            es.observe(st)
    live, shadow = stoppers["halt"], stoppers["shadow"]
    assert live.halted is not None and shadow.halted is None and shadow.would_halt is not None
    w, h = shadow.would_halt, live.halted
    assert (w.outcome, w.step_index, w.n_steps, w.exit_status) == (
        h.outcome,
        h.step_index,
        h.n_steps,
        h.exit_status,
    )
    assert shadow.n_steps == len(t.steps) and shadow.summary()["would_halt"] is not None


def test_the_mode_is_a_checked_setting():
    from earlyeval.config.monitor_config import MonitorConfig
    from earlyeval.core.errors import SettingError

    assert MonitorConfig(mode="shadow").mode == "shadow"
    with pytest.raises(SettingError, match="mode"):
        MonitorConfig(mode="dry-run")


@pytest.mark.integration
def test_shadow_and_live_decide_alike_step_by_step_on_real_runs():
    from test_monitor_budget_real import (
        _ingested,
    )  # a bounded ingest where nothing is ingested (CI)

    mdir = models_dir("swebench")
    if not (mdir / "manifest.json").exists():
        pytest.skip("needs models/swebench (make train BENCH=swebench)")
    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")
    trajs, tasks = _ingested("swebench")
    cat = load_catalog("swebench")
    agents = sorted({t.agent for t in trajs})
    sample = [t for a in agents for t in [x for x in trajs if x.agent == a][:6]]
    for halt_on in ("both", "failure"):
        live, shadow = _pair_of(mdir, halt_on=halt_on, budget=False)
        halted = 0
        for t in sample:
            task = tasks.get(t.task_id)
            ds_live = live.replay(t, task, as_of=None)
            ds_shadow = shadow.replay(t, task, as_of=None)
            assert len(ds_live) == len(ds_shadow)
            for a, b in zip(ds_live, ds_shadow):
                _same_but_halting(a, b)
            r_live = replay(live, t, task, None)
            r_shadow = replay(shadow, t, task, None)
            # the same record (a shadow halt is recorded as the would-be halt), but its wording
            assert {k: v for k, v in r_live.items() if k not in ("shadow", "reason")} == {
                k: v for k, v in r_shadow.items() if k not in ("shadow", "reason")
            }
            halted += r_live["halted"]
        assert halted > 0, (halt_on, len(sample), cat.bench)

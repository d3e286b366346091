"""Issue 29: a warm start on one spawned monitor must not change the monitors spawned after it from another one.

``warm_start`` on B: B and the monitors B spawns from then on use the warm start; the parent, B's siblings and
what they spawn keep the model's own calibration and thresholds."""

from __future__ import annotations

import numpy as np
from _monitor_helpers import make_runs, make_tasks, train_bundle

from earlyeval.config.monitor_config import MonitorConfig
from earlyeval.features import RunContext
from earlyeval.fitting.warm import warm_start
from earlyeval.live.monitor import Monitor


def _probs(mon: Monitor, traj, tasks) -> np.ndarray:
    mon.start_context(RunContext.of(traj, tasks.get(traj.task_id)), traj.run_id)
    return np.asarray([mon.observe(s).p_success for s in traj.steps[:-1]], dtype=float)


def test_a_warm_start_on_one_spawned_monitor_leaves_the_others_alone():
    tasks = make_tasks(12)
    trajs = make_runs(60, seed=0)
    bundle, _, _ = train_bundle(
        trajs, tasks, thresholds={"success": 0.8, "failure": 0.8, "min_halt_step": 1}
    )
    parent = Monitor(bundle, MonitorConfig(budget=False))
    sibling = parent.spawn()
    warmed = parent.spawn()
    # Platt refitted: other probabilities
    warmed.use_warm_start(warm_start(warmed, make_runs(30, seed=5), tasks, recalibrate=True))
    probe = make_runs(3, seed=9)[0]
    own = _probs(parent, probe, tasks)
    warm = _probs(warmed, probe, tasks)
    assert np.max(np.abs(warm - own)) > 1e-6, (
        "the warm start must change the probabilities for this test to tell"
    )
    later = [parent.spawn(), sibling.spawn(), sibling]
    for m in later:
        assert (
            m.thresholds
            == parent.thresholds
            == {"success": 0.8, "failure": 0.8, "min_halt_step": 1}
        )
        np.testing.assert_allclose(_probs(m, probe, tasks), own, rtol=0, atol=1e-12)
    child = warmed.spawn()  # spawned by the warmed monitor after its warm start: inherits it
    assert child.thresholds == warmed.thresholds
    np.testing.assert_allclose(_probs(child, probe, tasks), warm, rtol=0, atol=1e-12)

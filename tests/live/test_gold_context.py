"""Gold context is per run: a later run of the same task id with another reference patch is featurized with its
own patch, across spawned monitors; a patch given as bytes is decoded explicitly or refused, never taken as is;
``Decision.context_source`` says where the patch came from."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from _monitor_helpers import make_runs, save_tiny

from earlyeval.live.monitor import Monitor


@pytest.fixture(scope="module")
def gold_model(tmp_path_factory):
    path, _, _, tasks = save_tiny(
        tmp_path_factory.mktemp("gold") / "m", families=("behaviour", "gold", "prior"), n=60
    )
    return path, tasks


def _gold_rows(mon: Monitor, run, task) -> np.ndarray:
    """The gold family's columns of every prefix of ``run`` fed through ``start(task=...)``/``observe``."""
    mon.start(task=task, run_id=run.run_id)
    cols = [
        i
        for i, n in enumerate(mon.loaded.feature_names)
        if n.startswith(("gold_", "edits_in_gold", "f2p_", "diff_gold"))
    ]
    rows = []
    for s in run.steps[:-1]:
        mon.observe(s)
        rows.append(mon.run.last_features[cols].copy())
    return np.asarray(rows)


def test_a_later_run_of_the_same_id_gets_its_own_patch_across_spawned_monitors(gold_model):
    path, tasks = gold_model
    run = next(t for t in make_runs(20, seed=3) if t.task_id == "repo__repo-2" and len(t.steps) > 5)
    real = tasks["repo__repo-2"]
    other = tasks["repo__repo-7"]
    variant = dataclasses.replace(
        real,
        gold_patch=other.gold_patch,
        test_patch=other.test_patch,
        fail_to_pass=other.fail_to_pass,
    )
    assert variant.gold_patch != real.gold_patch
    base = Monitor.load(path, budget=False)
    alone = _gold_rows(Monitor.load(path, budget=False).spawn(), run, real)
    _gold_rows(base.spawn(), run, variant)  # the same id, another reference patch, first
    after = _gold_rows(base.spawn(), run, real)
    with_variant = _gold_rows(Monitor.load(path, budget=False).spawn(), run, variant)
    # the two patches give other features
    assert not np.array_equal(alone, with_variant, equal_nan=True)
    # a cache keyed by task id would give `with_variant` here
    np.testing.assert_array_equal(after, alone)


def test_bytes_are_decoded_explicitly_and_said(gold_model):
    path, tasks = gold_model
    real = tasks["repo__repo-2"]
    run = make_runs(20, seed=3)[2]
    mon = Monitor.load(path, budget=False)
    ref = _gold_rows(Monitor.load(path, budget=False), run, real)
    got = _gold_rows(mon, run, {**real.to_dict(), "gold_patch": real.gold_patch.encode("utf-8")})
    np.testing.assert_array_equal(got, ref)
    d = mon.observe(run.steps[0])
    assert d.context_source["gold_patch"] == "start(task) (decoded from UTF-8 bytes)"
    assert any("decoded from UTF-8 bytes" in w for w in mon.run.warnings)


@pytest.mark.parametrize("bad", [b"\xff\xfe not utf-8", 12345, ["diff --git a/x b/x"]])
def test_a_patch_that_is_not_text_is_refused_and_the_table_patch_is_used(gold_model, bad):
    path, tasks = gold_model
    real = tasks["repo__repo-2"]
    run = make_runs(20, seed=3)[2]
    given = {"task_id": real.task_id, "prompt": real.prompt, "gold_patch": bad}
    # with a task table: the refused patch never overrides the table's real one
    with_table = Monitor.load(path, budget=False, tasks=tasks)
    ref = _gold_rows(Monitor.load(path, budget=False), run, real)
    np.testing.assert_array_equal(_gold_rows(with_table, run, given), ref)
    d = with_table.observe(run.steps[0])
    assert (
        d.context_source["gold_patch"].startswith("task table (")
        and "refused" in d.context_source["gold_patch"]
    )
    # without one: absent, the gold features are NaN and the run is not "full" context
    alone = Monitor.load(path, budget=False)
    rows = _gold_rows(alone, run, given)
    assert np.isnan(rows[:, :3]).all()
    d = alone.observe(run.steps[0])
    assert d.context != "full" and not d.halt
    assert (
        d.context_source["gold_patch"].startswith("absent (")
        and "refused" in d.context_source["gold_patch"]
    )


def test_context_source_of_a_replayed_run_and_of_a_completed_task(gold_model):
    path, tasks = gold_model
    run = make_runs(20, seed=3)[2]
    mon = Monitor.load(path, budget=False, tasks=tasks)
    mon.start(task={"task_id": run.task_id, "prompt": "fix it"}, run_id=run.run_id)
    d = mon.observe(run.steps[0])
    assert d.context_source == {
        "gold_patch": "task table",
        "test_patch": "task table",
        "fail_to_pass": "task table",
    }
    mon.start(task=None)
    assert mon.observe(run.steps[0]).context_source["gold_patch"] == "absent"
    from earlyeval.features import RunContext

    mon.start_context(RunContext.of(run, tasks[run.task_id]), run.run_id)
    assert mon.observe(run.steps[0]).context_source["gold_patch"] == "run context"

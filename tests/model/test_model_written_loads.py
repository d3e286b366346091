"""Issue 29 item 6: a model directory its own loader refuses is never written (``save_model_dir`` loads the
staged directory before it swaps it in), so ``train`` cannot exit 0 with a model every ``score -m`` refuses."""

from __future__ import annotations

import dataclasses

import pytest
from _monitor_helpers import make_runs, make_tasks, train_bundle
from synth import SMALL_LGBM, make_dataset, make_trajectories

from earlyeval.app.stages import budget as budget_stage
from earlyeval.app.stages import evaluate as evaluate_stage
from earlyeval.app.stages import train as train_stage
from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.errors import CatalogError, ModelDirError
from earlyeval.model.modeldir import load_model_dir, save_model_dir


@pytest.fixture(scope="module")
def bundle():
    b, _, _ = train_bundle(make_runs(40, 0), make_tasks(12), families=("behaviour",))
    return b


def test_a_model_its_loader_refuses_is_never_written(bundle, tmp_path):
    path = save_model_dir(bundle, tmp_path / "m")  # a good model first: it must stay
    before = {p.name: p.read_bytes() for p in path.iterdir()}
    bad = dataclasses.replace(
        bundle, thresholds={"success": 0.5, "failure": 0.9, "min_halt_step": 1}
    )
    with pytest.raises(
        ModelDirError,
        match=r"'thresholds.success': 0.5 is out of range.*the loader refuses the model just fitted",
    ):
        save_model_dir(bad, path)
    assert {p.name: p.read_bytes() for p in path.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no staged directory left beside it
    assert load_model_dir(path).thresholds == bundle.thresholds
    with pytest.raises(ModelDirError, match="thresholds.success"):
        save_model_dir(bad, tmp_path / "fresh")
    assert not (tmp_path / "fresh").exists()


def test_train_never_writes_a_model_its_loader_refuses(tmp_path, monkeypatch):
    """The threshold rule giving success=0.5 (what a small catalog gave): train fails naming the field."""
    trajs, tasks = make_trajectories(6)
    ds = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)
    # no step-1 halts: the step-1 check passes
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=2,
        n_jobs=1,
        lgbm_params=dict(SMALL_LGBM),
        inner_folds=6,
        warm_repeats=1,
        min_halt_step=2,
    )
    real = train_stage.choose_thresholds
    monkeypatch.setattr(
        train_stage, "choose_thresholds", lambda *a, **k: {**real(*a, **k), "success": 0.5}
    )
    with pytest.raises(ModelDirError, match=r"thresholds.success"):
        train_stage.train_bench("synth", tmp_path / "m", cfg, budget=False, ds=ds)
    assert not (tmp_path / "m").exists()


def test_evaluate_on_too_little_data_is_one_error_naming_the_catalog():
    """8 runs of 4 agents: the LOAO's fit cannot split them; the error names the catalog and the counts."""
    trajs, tasks = make_trajectories(2)
    ds = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=2,
        n_jobs=1,
        lgbm_params=dict(SMALL_LGBM),
        inner_folds=6,
        warm_repeats=1,
    )
    with pytest.raises(
        CatalogError,
        match=r"field 'runs': too little data to evaluate synth: 8 labelled runs of 4 agents, "
        r"\d+ successes \(ValueError: .*\); add runs or agents to the catalog",
    ) as e:
        evaluate_stage.evaluate_bench("synth", cfg, ds=ds)
    assert "\n" not in str(e.value)


def test_budget_on_too_little_data_is_one_error_naming_the_catalog(monkeypatch):
    """Toolathlon's case (two agents: one held out, one calibration fold, no run left to fit P(success) on): the
    fit's ValueError reaches the user as the one-line CatalogError evaluate gives, not as scikit-learn's."""
    trajs, tasks = make_trajectories(2)
    ds = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)

    def no_rows(*a, **k):
        raise ValueError(
            "Found array with 0 sample(s) (shape=(0, 68)) while a minimum of 1 is required."
        )

    monkeypatch.setattr(budget_stage, "run_budget", no_rows)
    with pytest.raises(
        CatalogError,
        match=r"field 'runs': too little data to evaluate swebench: 8 labelled runs of 4 "
        r"agents, \d+ successes \(ValueError: Found array with 0 sample",
    ) as e:
        budget_stage.budget_bench("swebench", ds=ds)
    assert "\n" not in str(e.value)


def test_train_on_too_little_data_is_one_error_naming_the_catalog(tmp_path, monkeypatch):
    """Issue 29 item 6 (the fault suite's "train on a catalog of 2 runs"): a fit that cannot split what the catalog
    gives (scikit-learn's 0-sample ValueError, as a two-run catalog gives) is evaluate's one-line CatalogError naming
    the catalog; before, train printed scikit-learn's "Found array with 0 sample(s)" as the whole message."""
    trajs, tasks = make_trajectories(2)
    ds = make_dataset(["behaviour"], trajs=trajs, tasks=tasks)
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=2,
        n_jobs=1,
        lgbm_params=dict(SMALL_LGBM),
        inner_folds=6,
        warm_repeats=1,
    )

    def no_rows(*a, **k):
        raise ValueError(
            "Found array with 0 sample(s) (shape=(0, 68)) while a minimum of 1 is required."
        )

    monkeypatch.setattr(train_stage, "choose_thresholds", no_rows)
    with pytest.raises(
        CatalogError,
        match=r"field 'runs': too little data to train synth: 8 labelled runs of 4 agents, "
        r"\d+ successes \(ValueError: Found array with 0 sample",
    ) as e:
        train_stage.train_bench("synth", tmp_path / "m", cfg, budget=False, ds=ds)
    assert "\n" not in str(e.value) and not (tmp_path / "m").exists()

"""The progress bars' totals: ``evaluate.planned_fits`` counts, before any fit, exactly the models that
``run_loao`` and ``train_bench`` then fit (the same ``inner_plan``), for every shape of inner hold-out."""

from __future__ import annotations

import dataclasses
import json

import pytest
from synth import SMALL_LGBM, make_dataset, make_trajectories

from earlyeval.app.stages.train import train_bench
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.fit_plan import FITS_PLANNED, planned_fits
from earlyeval.evaluation.protocols import evaluate_fits, protocol_configs
from earlyeval.evaluation.protocols import with_loso as add_loso

SCAFFOLD = {"agent-a": "s1", "agent-b": "s1", "agent-c": "s2", "agent-d": "s3"}


def _dataset(small: set[str]):
    trajs, tasks = make_trajectories(24)
    trajs = [
        dataclasses.replace(
            t, meta={**t.meta, "scaffold": SCAFFOLD[t.agent], "small": t.agent in small}
        )
        for t in trajs
    ]
    return make_dataset(["behaviour"], trajs=trajs, tasks=tasks)


def _fits(fn) -> list[str]:
    msgs: list[str] = []
    fn(msgs.append)
    return msgs


@pytest.mark.parametrize(
    "inner_holdout,inner_folds,small,with_loso",
    [
        ("agent", 6, set(), True),  # inner leave-one-agent-out, LOSO of the two s1 agents
        ("scaffold", 6, {"agent-d"}, True),  # scaffold mates left out too; a small group
        ("agent", 2, set(), False),  # more inner agents than folds: leave-k-groups-out
        (
            "agent",
            6,
            {"agent-c", "agent-d"},
            True,
        ),  # two large agents: the validation-split fallback
    ],
)
def test_planned_fits_are_the_fits_made(inner_holdout, inner_folds, small, with_loso):
    ds = _dataset(small)
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=10,
        n_jobs=1,
        lgbm_params=dict(SMALL_LGBM),
        inner_folds=inner_folds,
        inner_holdout=inner_holdout,
        warm_repeats=1,
    )
    made = _fits(
        lambda p: add_loso(ds, cfg, run_loao(ds, cfg, p)) if with_loso else run_loao(ds, cfg, p)
    )
    assert all(m.startswith("fit without") for m in made)
    assert len(made) == len(set(made)) == planned_fits(ds, cfg, with_loso=with_loso) > 0


def test_train_and_evaluate_announce_their_totals(tmp_path):
    ds = _dataset({"agent-d"})
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=10,
        n_jobs=1,
        lgbm_params=dict(SMALL_LGBM),
        inner_folds=6,
        inner_holdout="scaffold",
        warm_repeats=1,
    )
    msgs = _fits(
        lambda p: train_bench("synth", tmp_path / "m", cfg, progress=p, budget=False, ds=ds)
    )
    # the shipped fits, then the forecast's leave-one-agent-out unless the workspace has it cached (a second
    # training on the same data and settings fits it no more)
    forecast = planned_fits(ds, cfg, with_loso=False)
    total = int(msgs[0].removeprefix(FITS_PLANNED))
    assert total in (
        planned_fits(ds, cfg, train=True),
        planned_fits(ds, cfg, train=True) + forecast,
    )
    assert sum(m.startswith("fit without") for m in msgs) == total
    # the manifest records every training run's fingerprint, and two trainings on the same data write the same one
    m1 = json.loads((tmp_path / "m" / "manifest.json").read_text())
    assert len(m1["training"]["content"]["runs"]) == len(ds.trajs)
    again = _fits(
        lambda p: train_bench("synth", tmp_path / "m2", cfg, progress=p, budget=False, ds=ds)
    )
    assert json.loads((tmp_path / "m2" / "manifest.json").read_text()) == m1
    # 2 inner + the full fit, the forecast read from its cache
    assert sum(m.startswith("fit without") for m in again) == planned_fits(ds, cfg, train=True) == 3
    assert again[0] == f"{FITS_PLANNED}3"
    # evaluate's total adds up the LOAO of the headline and of every protocol and baseline it runs beside it
    assert evaluate_fits(ds, cfg) == planned_fits(ds, cfg) + sum(
        planned_fits(ds, c) for c in protocol_configs(cfg).values()
    )
    abl = [("min_steps_5", {"min_steps": 5})]
    assert evaluate_fits(ds, cfg, abl) == evaluate_fits(ds, cfg) + planned_fits(
        ds, cfg, with_loso=False, with_small=False
    )

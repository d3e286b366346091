"""Synthetic runs for the budget tests (fitting, evaluation, live and report): four agents with token counts
known, missing at one step, or missing throughout, and two small agents; the outcome and budget settings sized for
a fast fit."""

from __future__ import annotations

import numpy as np

from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.trajectory import Action, Step, Trajectory

KINDS = [
    ("bash", "ls -la", "view"),
    ("bash", "grep -rn foo .", "search"),
    ("bash", "sed -i s/a/b/ x.py", "edit"),
    ("bash", "pytest tests", "test"),
]


def budget_run(
    agent: str, i: int, rng: np.random.Generator, tokens: str, small: bool = False
) -> Trajectory:
    T = int(rng.integers(3, 15))
    y = int(rng.random() < (0.8 if T < 8 else 0.25))
    steps = []
    for k in range(T):
        tool, text, kind = KINDS[int(rng.integers(0, len(KINDS)))]
        known = tokens == "all" or (tokens == "hole" and not (i % 3 == 0 and k == T // 2))
        steps.append(
            Step(
                index=k,
                action=text,
                kind=kind,
                observation=f"out {k} " + "x" * int(rng.integers(1, 50)),
                input_tokens=int(1000 + 300 * k) if known and tokens != "none" else None,
                output_tokens=int(rng.integers(20, 200)) if known and tokens != "none" else None,
                cost_usd=float(0.001 * (k + 1)) if tokens == "all" else None,
                actions=[Action(tool, text, kind)],
            )
        )
    return Trajectory(
        f"{agent}/{i}", agent, "synth", f"task{i % 12}", steps, y, meta={"small": small}
    )


def budget_runs(seed: int = 0) -> list[Trajectory]:
    rng = np.random.default_rng(seed)
    trajs = []
    for agent, tokens in (("alpha", "all"), ("beta", "all"), ("gamma", "hole"), ("delta", "none")):
        trajs += [budget_run(agent, i, rng, tokens) for i in range(28)]
    for agent in ("tiny1", "tiny2"):
        trajs += [budget_run(agent, i, rng, "all", small=True) for i in range(6)]
    return trajs


def budget_cfgs() -> tuple[EvalConfig, BudgetConfig]:
    cfg = EvalConfig(
        families=["behaviour"],
        min_steps=3,
        holdout_min_runs=20,
        n_jobs=1,
        lgbm_params={
            "n_estimators": 20,
            "learning_rate": 0.1,
            "num_leaves": 7,
            "min_child_samples": 10,
        },
    )
    bcfg = BudgetConfig(
        lgbm_params={
            "n_estimators": 15,
            "learning_rate": 0.2,
            "num_leaves": 7,
            "min_child_samples": 10,
            "max_bin": 31,
        },
        max_folds=2,
        taus=(0.0, 0.1, 0.2, 0.3),
        n_example_runs=2,
        n_workers=1,
    )
    return cfg, bcfg

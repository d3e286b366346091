"""Evidence adds to the task prior, never subtracts: on a synthetic benchmark whose trajectories carry no signal
(outcomes depend on the task alone), the guarded model ranks every held-out agent at least as well as the
prior-only baseline, and the guard is what makes it so."""

from __future__ import annotations

import numpy as np
import pytest
from synth import SMALL_LGBM, make_dataset

from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.trajectory import Action, Task, Trajectory, make_step
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.guard import guard_config
from earlyeval.fitting.metrics import auroc

AGENTS = ("agent-a", "agent-b", "agent-c", "agent-d", "agent-e")


def hunk(i: int, j: int) -> str:
    return (
        f"@@ -{10 + 20 * j},3 +{10 + 20 * j},3 @@ def f{i}_{j}(x):\n"
        f"     a = 1\n-    return x + {j}\n+    return x + {j} + a\n     b = 2\n"
    )


def task(i: int, n_hunks: int) -> Task:
    gold = f"diff --git a/pkg/m{i}.py b/pkg/m{i}.py\n--- a/pkg/m{i}.py\n+++ b/pkg/m{i}.py\n"
    gold += "".join(hunk(i, j) for j in range(n_hunks))
    return Task(
        task_id=f"task-{i}", prompt=f"fix pkg/m{i}.py", gold_patch=gold, meta={"split": "lite"}
    )


def noise_run(agent: str, t: Task, rng: np.random.Generator, success: bool) -> Trajectory:
    """Steps drawn the same way whatever the outcome: nothing in the run tells success from failure."""
    T = int(rng.integers(4, 12))
    steps = []
    for k in range(T):
        r = rng.random()
        if r < 0.3:
            act, obs = Action("bash", f"sed -i 's/x/y/' pkg/m{rng.integers(0, 40)}.py"), "ok"
        elif r < 0.5:
            act, obs = (
                Action("bash", "python -m pytest -q"),
                f"{rng.integers(0, 3)} failed, {rng.integers(1, 9)} passed in 0.1s",
            )
        else:
            act, obs = (
                Action("bash", f"cat pkg/m{rng.integers(0, 40)}.py"),
                "def f(x):\n    return x",
            )
        steps.append(make_step(k, [act], thought="", observation=obs))
    return Trajectory(
        run_id=f"{agent}/{t.task_id}",
        agent=agent,
        bench="synth",
        task_id=t.task_id,
        steps=steps,
        outcome=int(success),
        prompt=t.prompt,
        meta={"scaffold": agent, "model": "m", "split": "lite"},
    )


@pytest.fixture(scope="module")
def no_signal():
    rng = np.random.default_rng(11)
    tasks = {t.task_id: t for t in (task(i, 1 + i % 5) for i in range(40))}
    trajs = []
    for a in AGENTS:
        skill = rng.normal(0, 0.3)
        for t in tasks.values():
            n = len(t.gold_patch.split("@@ -")) - 1
            # harder (bigger gold patch) tasks fail more
            p = 1 / (1 + np.exp(-(1.2 - 0.8 * (n - 1) + skill)))
            trajs.append(noise_run(a, t, rng, bool(rng.random() < p)))
    return trajs, tasks


def config(**kw) -> EvalConfig:
    base = dict(
        families=["behaviour", "gold"],
        min_steps=3,
        holdout_min_runs=20,
        lgbm_params=SMALL_LGBM,
        warm_repeats=1,
        n_jobs=1,
        seed=0,
        inner_folds=6,
    )
    base.update(kw)
    return EvalConfig(**base)


def held_out_aurocs(res) -> dict[str, float]:
    out = {}
    for a in res.holdout:
        y, ps, _, w = res.sets[a].prefix_arrays()
        out[a] = auroc(y, ps, w)
    return out


def test_the_guarded_model_never_ranks_below_the_prior_only_baseline(no_signal):
    trajs, tasks = no_signal
    ds = make_dataset(["behaviour", "gold"], trajs=trajs, tasks=tasks)
    guarded = run_loao(ds, config(prior_guard=True), with_small=False)
    # the report's prior_only baseline
    baseline = run_loao(ds, guard_config(config()), with_small=False)
    plain = run_loao(ds, config(), with_small=False)
    g, b, p = held_out_aurocs(guarded), held_out_aurocs(baseline), held_out_aurocs(plain)
    for a in AGENTS:
        assert g[a] >= b[a] - 1e-12, (a, g[a], b[a], guarded.model_choice[a])
    # the guard chose: it kept the task-level model wherever the noise features ranked the inner agents worse
    chosen = [c["chosen"] for c in guarded.model_choice.values()]
    assert chosen.count("task-level features only") >= 3
    # positive control: unguarded, the noise features cost ranking on some held-out agent
    assert any(p[a] < b[a] - 0.005 for a in AGENTS), (p, b)


def test_the_guard_keeps_the_model_when_the_trajectory_carries_signal():
    from synth import make_trajectories

    trajs, tasks = make_trajectories(
        n_tasks=30, seed=3, rates={a: 0.4 for a in ("agent-a", "agent-b", "agent-c", "agent-d")}
    )
    ds = make_dataset(["behaviour", "gold"], trajs=trajs, tasks=tasks)
    res = run_loao(ds, config(prior_guard=True), with_small=False)
    assert all(c["chosen"] == "model" for c in res.model_choice.values()), res.model_choice

"""Small synthetic benchmarks for fast tests of the modelling pipeline.

Each agent has its own action style (so text features can tell agents apart);
successful runs tend to edit a gold file and end with passing tests, failed
runs wander and hit errors, so the signal is learnable but not perfect.
"""

from __future__ import annotations

import numpy as np

from earlyeval.config.catalog import Catalog, RunSpec
from earlyeval.core.trajectory import Action, Task, Trajectory, make_step
from earlyeval.evaluation.dataset import Dataset
from earlyeval.features import Featurizer, RunContext, build_family, fold_free
from earlyeval.tables.prefixes import prefix_table

GOLD = """diff --git a/pkg/mod{i}.py b/pkg/mod{i}.py
--- a/pkg/mod{i}.py
+++ b/pkg/mod{i}.py
@@ -10,7 +10,7 @@ def compute_{i}(x):
     a = 1
     b = 2
     c = 3
-    return x + a
+    return x + a + b + {fix}
     d = 4
     e = 5
     f = 6
"""


def gold_patch(i: int, fix: str = "c_{i}") -> str:
    """The one-hunk gold patch of synthetic task i; ``fix`` is the name the corrected line adds."""
    return GOLD.format(i=i, fix=fix.format(i=i))


def make_tasks(n: int) -> dict[str, Task]:
    return {
        f"task-{i}": Task(
            task_id=f"task-{i}",
            prompt=f"Fix compute_{i} in pkg/mod{i}.py: it ignores b and c.",
            gold_patch=gold_patch(i),
            fail_to_pass=[f"test_compute_{i}"],
            meta={"split": "lite"},
        )
        for i in range(n)
    }


def make_run(
    agent: str, style: str, task: Task, rng: np.random.Generator, success: bool, idx: int
) -> Trajectory:
    i = int(task.task_id.split("-")[1])
    T = int(rng.integers(6, 16))
    steps = []
    for k in range(T):
        if success and k == T - 3:
            acts = [
                Action("bash", f"sed -i 's/return x + a/return x + a + b + c_{i}/' pkg/mod{i}.py")
            ]
            obs = "<returncode>0</returncode>"
        elif success and k == T - 2:
            acts = [Action("bash", f"python -m pytest tests/test_mod{i}.py -k test_compute_{i}")]
            obs = "===== 3 passed in 0.12s ====="
        elif k == T - 1:
            acts = [Action("submit", "")]
            obs = "submitted"
        elif not success and rng.random() < 0.4:
            acts = [Action("bash", f"python -m pytest tests/test_other{k}.py")]
            obs = "Traceback (most recent call last):\n  File x\nValueError: boom\n===== 1 failed, 2 passed in 0.3s ====="
        else:
            acts = [Action("bash", f"{style} pkg/mod{rng.integers(0, 30)}.py")]
            obs = f"{style} output line {k}"
        steps.append(
            make_step(
                k,
                acts,
                thought=f"{style} thinking {k}",
                observation=obs,
                input_tokens=100 * (k + 1) if agent != "agent-c" else None,
                output_tokens=20 if agent != "agent-c" else None,
            )
        )
    return Trajectory(
        run_id=f"{agent}/{task.task_id}",
        agent=agent,
        bench="synth",
        task_id=task.task_id,
        steps=steps,
        outcome=int(success),
        prompt=task.prompt,
        meta={"scaffold": agent, "model": "m-" + agent, "split": "lite"},
    )


STYLES = {"agent-a": "cat", "agent-b": "nl -ba", "agent-c": "head -n 40", "agent-d": "grep -n def"}


def make_trajectories(
    n_tasks: int = 40,
    agents: dict[str, str] | None = None,
    seed: int = 0,
    rates: dict[str, float] | None = None,
) -> tuple[list[Trajectory], dict[str, Task]]:
    rng = np.random.default_rng(seed)
    tasks = make_tasks(n_tasks)
    agents = agents or STYLES
    rates = rates or {}
    trajs = []
    for a, style in agents.items():
        for j, t in enumerate(tasks.values()):
            ok = bool(rng.random() < rates.get(a, 0.4))
            trajs.append(make_run(a, style, t, rng, ok, j))
    return trajs, tasks


def make_dataset(
    families: list[str],
    n_tasks: int = 40,
    seed: int = 0,
    rates: dict[str, float] | None = None,
    trajs: list[Trajectory] | None = None,
    tasks: dict[str, Task] | None = None,
) -> Dataset:
    if trajs is None:
        trajs, tasks = make_trajectories(n_tasks, seed=seed, rates=rates)
    cat = Catalog(
        bench="synth",
        path=None,
        runs=[
            RunSpec(name=a, folder=a, agent=a, scaffold=a, model="m", format="x")
            for a in dict.fromkeys(t.agent for t in trajs)
        ],
    )
    contexts = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    ds = Dataset("synth", cat, trajs, tasks, contexts, prefix_table(trajs, min_steps=2))
    for fam in fold_free(families):
        fz = Featurizer([build_family(fam)])
        ds.blocks[fam] = fz.prefix_matrix(trajs, contexts)
        ds.block_names[fam] = fz.names
    return ds


SMALL_LGBM = {
    "n_estimators": 30,
    "learning_rate": 0.1,
    "num_leaves": 7,
    "min_child_samples": 5,
    "subsample": 1.0,
    "subsample_freq": 0,
    "colsample_bytree": 1.0,
    "reg_lambda": 1.0,
}


def loao_baseline(cfg, trajs: list[Trajectory], tasks: dict[str, Task]):
    """(dataset, cfg, run_loao result) of synthetic runs: the reference a leakage test perturbs."""
    from earlyeval.evaluation.evaluate import run_loao

    ds = make_dataset(cfg.families, trajs=trajs, tasks=tasks)
    return ds, cfg, run_loao(ds, cfg)

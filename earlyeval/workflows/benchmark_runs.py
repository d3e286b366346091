"""What the latency benchmark replays: a sample of every agent's runs, a synthetic long run of real steps, and a
run that edits a new file every step (the worst case for per-step work that grows with the run)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from earlyeval.core.trajectory import Action, Step, Trajectory, make_step


def sample_runs(
    trajs: list[Trajectory], per_agent: int, seed: int = 0, long_steps: int = 100
) -> list[Trajectory]:
    """Per agent, its longest runs (half the quota) and random others: late steps and typical steps;
    plus every run of at least ``long_steps`` steps, the few that show step 100."""
    rng = np.random.default_rng(seed)
    by: dict[str, list[Trajectory]] = defaultdict(list)
    for t in trajs:
        if len(t.steps) >= 2:
            by[t.agent].append(t)
    out = []
    for agent in sorted(by):
        ts = sorted(by[agent], key=lambda t: (-len(t.steps), t.run_id))
        longest = ts[: per_agent // 2]
        rest = ts[per_agent // 2 :]
        k = min(per_agent - len(longest), len(rest))
        pick = [rest[i] for i in sorted(rng.choice(len(rest), k, replace=False))] if k > 0 else []
        out += longest + pick
    chosen = {t.run_id for t in out}
    out += [t for t in trajs if len(t.steps) >= long_steps and t.run_id not in chosen]
    return out


def synthetic_long_run(trajs: list[Trajectory], n_steps: int) -> Trajectory:
    """Real steps, cycled from the longest runs and re-indexed, into one run of ``n_steps`` steps."""
    src = [s for t in sorted(trajs, key=lambda t: -len(t.steps))[:5] for s in t.steps[:-1]]
    steps = []
    for i in range(n_steps):
        s = src[i % len(src)]
        steps.append(Step.from_dict({**s.to_dict(), "index": i}))
    base = max(trajs, key=lambda t: len(t.steps))
    return Trajectory(
        run_id="synthetic/long",
        agent="synthetic (cycled real steps)",
        bench=base.bench,
        task_id=base.task_id,
        steps=steps,
        outcome=None,
        meta=dict(base.meta),
        prompt=base.prompt,
    )


def new_file_run(base: Trajectory, n_steps: int) -> Trajectory:
    """A run of ``n_steps`` edits, each of a file (and identifiers) never seen before: the worst case for
    any per-step work that grows with the run (sets of edited files, identifiers, per-file counters)."""
    steps = [
        make_step(
            i,
            [
                Action(
                    "bash",
                    f"sed -i 's/old_{i}/fix_value_{i}(x_{i})/' src/pkg_{i % 97}/module_{i}.py",
                )
            ],
            thought=f"edit module {i}",
            observation="",
            input_tokens=1000 + i,
            output_tokens=50,
            error=False,
        )
        for i in range(n_steps)
    ]
    return Trajectory(
        run_id="synthetic/new-file-every-step",
        agent="synthetic (new file every step)",
        bench=base.bench,
        task_id=base.task_id,
        steps=steps,
        outcome=None,
        meta=dict(base.meta),
        prompt=base.prompt,
    )

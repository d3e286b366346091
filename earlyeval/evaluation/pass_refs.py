"""The pass references of offline runs: each agent's runs replayed as one simulated pass (issue 28 item 2).

Training reads the pass features the way a live pass serves them: per agent, its runs in the seeded pass order
(``benchpass.pass_order``) on ``workers`` simulated workers, none halted, and run i's reference is the audit
sample's runs (``benchpass.audited``) delivered before run i started (``benchpass.run_on_workers``): the same
scheduler, order and audit draw as ``score --pass`` and the pass simulator.  Label-free; each agent reads only
its own runs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from earlyeval.core.trajectory import Trajectory
from earlyeval.features.passref import PassReference, RunProfile, profile_of
from earlyeval.live.benchpass import AUDIT_SHARE, audited, pass_order, run_on_workers

SEED, WORKERS = 0, 8  # the simulated training pass of every agent


def reference_sets(
    run_ids: Sequence[str],
    steps: Sequence[int],
    seed: int = SEED,
    workers: int = WORKERS,
    audit_share: float = AUDIT_SHARE,
) -> list[list[int]]:
    """Per run (indices into ``run_ids``), the audited runs delivered before it started, in delivery order,
    for one agent's pass with no halts (each run lasts its ``steps``)."""
    aud = [audited(seed, r, audit_share) for r in run_ids]
    delivered: list[int] = []
    refs: list[list[int]] = [[] for _ in run_ids]

    def run(i: int, k: int, start: int) -> int:
        refs[i] = list(delivered)
        return max(int(steps[i]), 1)

    def deliver(i: int) -> None:
        if aud[i]:
            delivered.append(i)

    run_on_workers(pass_order(list(run_ids), seed), workers, run, deliver)
    return refs


def training_references(
    trajs: Sequence[Trajectory],
    profiles: Sequence[RunProfile] | None = None,
    seed: int = SEED,
    workers: int = WORKERS,
    audit_share: float = AUDIT_SHARE,
) -> list[PassReference | None]:
    """Per run, its ``PassReference`` in its agent's simulated pass (None while fewer than MIN_REFERENCE)."""
    profiles = list(profiles) if profiles is not None else [profile_of(t) for t in trajs]
    by_agent: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(trajs):
        by_agent[t.agent].append(i)
    out: list[PassReference | None] = [None] * len(trajs)
    for idx in by_agent.values():
        # each run lasts its length T, as in the simulator and ``score --pass`` (a profile counts the T-1 scored steps)
        refs = reference_sets(
            [trajs[i].run_id for i in idx],
            [len(trajs[i].steps) for i in idx],
            seed,
            workers,
            audit_share,
        )
        for j, ref in zip(idx, refs):
            out[j] = PassReference.of(profiles[idx[k]] for k in ref)
    return out

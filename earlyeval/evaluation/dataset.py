"""Loading a benchmark for modelling: labelled trajectories, tasks, contexts and
the fold-independent feature blocks of every prefix, computed once.

Fold-free families are computed here once, fold-fitted ones per fold by ``evaluate``; each run's context carries
its catalog date. Why: docs/architecture.md, "Feature families" (computed once or per fold).
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from earlyeval.config.catalog import Catalog, data_root, load_catalog
from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.evaluation.pass_refs import training_references
from earlyeval.features import Featurizer, PriorTable, RunContext, build_family, fold_free
from earlyeval.features.evidence import evidence_rule, prefix_gates
from earlyeval.features.text import TokenCache
from earlyeval.tables.prefixes import prefix_table
from earlyeval.tables.store import read_ingested_tasks, read_ingested_trajectories

log = logging.getLogger(__name__)
CURRENT_POOL = "prior@current_pool"  # the prior block without a date cutoff
PASS = "pass"  # the family whose rows read the agent's other runs (evaluation.pass_refs)


@dataclass
class Dataset:
    bench: str
    catalog: Catalog
    trajs: list[Trajectory]  # labelled only
    tasks: dict[str, Task]
    contexts: list[RunContext]
    prefixes: pd.DataFrame  # every prefix t = 1..T-1 of every labelled run with T >= 2
    # family -> rows aligned with `prefixes`
    blocks: dict[str, np.ndarray] = field(default_factory=dict)
    block_names: dict[str, list[str]] = field(default_factory=dict)
    prior_table: PriorTable | None = None
    _token_cache: object | None = None
    _gates: dict[str, list[np.ndarray]] = field(default_factory=dict)

    def gates(self, rule: str) -> list[np.ndarray]:
        """Per run, its prefixes' gates under the success evidence rule ``rule`` (computed once per rule)."""
        if rule not in self._gates:
            r = evidence_rule(rule)
            self._gates[rule] = [prefix_gates(r, t.steps) for t in self.trajs]
        return self._gates[rule]

    def token_cache(self, obs_chars: int = 1500):
        """One tokenization of every step, shared by all folds (see features.text.TokenCache)."""
        if self._token_cache is None or self._token_cache.obs_chars != obs_chars:
            self._token_cache = TokenCache(obs_chars)
        return self._token_cache

    @property
    def agents(self) -> list[str]:
        return list(dict.fromkeys(t.agent for t in self.trajs))

    def runs_of(self, agents: set[str]) -> np.ndarray:
        return np.asarray(
            [i for i, t in enumerate(self.trajs) if t.agent in agents], dtype=np.int64
        )

    def n_runs(self, agent: str) -> int:
        return sum(1 for t in self.trajs if t.agent == agent)

    def large_agents(self, min_runs: int) -> list[str]:
        """Agents held out on their own: at least ``min_runs`` labelled runs and not flagged ``small`` in
        the catalog (``is_small``).  The one definition; ``holdout_units`` groups the rest."""
        return [a for a in self.agents if self.n_runs(a) >= min_runs and not self.is_small(a)]

    def is_small(self, agent: str) -> bool:
        """Every run of the agent comes from a catalog entry flagged ``small``."""
        return all(bool(t.meta.get("small", False)) for t in self.trajs if t.agent == agent)

    def holdout_units(self, min_runs: int) -> list["HoldoutUnit"]:
        """The held-out units of leave-one-agent-out: each large agent alone (``large_agents``), then
        every other agent together as one group (too few runs, or flagged ``small``), if any."""
        large = self.large_agents(min_runs)
        units = [HoldoutUnit(a, [a]) for a in large]
        small = [a for a in self.agents if a not in large]
        if small:
            units.append(HoldoutUnit(SMALL_GROUP, small, True))
        return units


SMALL_GROUP = "small-runs"  # the name of the unit of small agents held out together


@dataclass
class HoldoutUnit:
    """A held-out unit: one large agent, or all small agents together."""

    name: str
    agents: list[str]
    small: bool = False


def load_dataset(
    bench: str,
    families: list[str],
    root: Path | None = None,
    progress: bool = True,
    trajs: list[Trajectory] | None = None,
    tasks: dict[str, Task] | None = None,
    whole: bool = True,
    prior_table: PriorTable | None = None,
) -> Dataset:
    """Read the ingested benchmark (``earlyeval ingest`` output) and featurize the fold-free families.
    ``whole=False`` (a partition of the runs): the pass family, which reads each agent's other runs, is left
    to ``add_pass_block`` over all of them. ``prior_table``: the public history already read (a dataset of
    other runs of the same benchmark, as the fidelity checks build), else read from the data root."""
    # resolves every entry: an unknown family is an error, never a silent drop
    free = fold_free(families)
    cat = load_catalog(bench)
    if trajs is None:
        trajs = read_ingested_trajectories(bench)
    if tasks is None:
        tasks = read_ingested_tasks(bench)
    trajs = [t for t in trajs if t.outcome is not None]
    # the catalog is the one source of a run's date (also for parquet ingested before runs had dates)
    dates = {r.name: r.date for r in cat.runs}
    for t in trajs:
        if dates.get(str(t.meta.get("run", ""))):
            t.meta["date"] = dates[str(t.meta["run"])]
    if prior_table is None and "prior" in families and cat.priors.get("path"):
        prior_table = PriorTable.load(data_root(root) / cat.priors["path"])
    contexts = [RunContext.of(t, tasks.get(t.task_id)) for t in trajs]
    prefixes = prefix_table(trajs, min_steps=2)
    ds = Dataset(bench, cat, trajs, tasks, contexts, prefixes, prior_table=prior_table)
    for fam in (f for f in free if f != PASS):
        fz = Featurizer([build_family(fam, prior_table=prior_table)])
        ds.blocks[fam] = fz.prefix_matrix(
            trajs, contexts, progress=progress, desc=f"features: {fam}"
        )
        ds.block_names[fam] = fz.names
    if "prior" in ds.blocks:
        today = [dataclasses.replace(c, as_of="") for c in contexts]
        fz = Featurizer([build_family("prior", prior_table=prior_table)])
        ds.blocks[CURRENT_POOL] = fz.prefix_matrix(
            trajs, today, progress=progress, desc="features: prior (current pool)"
        )
        ds.block_names[CURRENT_POOL] = fz.names
    if whole and PASS in free:  # last, as dataset_from_parts adds it over every partition's runs
        add_pass_block(ds, progress)
    return ds


def add_pass_block(ds: Dataset, progress: bool = False) -> None:
    """The pass family's block: each run's context given its reference in its agent's simulated pass."""
    refs = training_references(ds.trajs)
    ds.contexts[:] = [dataclasses.replace(c, pass_reference=r) for c, r in zip(ds.contexts, refs)]
    fz = Featurizer([build_family(PASS)])
    ds.blocks[PASS] = fz.prefix_matrix(
        ds.trajs, ds.contexts, progress=progress, desc="features: pass"
    )
    ds.block_names[PASS] = fz.names

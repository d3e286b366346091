"""Where a verb's stages run: one typed protocol, chosen once at the verb's entry (``earlyeval.app.cli``), with
two implementations: ``InProcess`` here and ``earlyeval.scale.backend.DaskBackend`` on a dask.distributed
cluster (``--scheduler``).  The stages (``app/pipeline.py``, ``run_loao``) call the protocol and never ask which
one they have; as in LightGBM, the distributed path is the same interface, not a branch in the core."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.catalog import Catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.budget_shipped import fit_shipped
from earlyeval.evaluation.dataset import Dataset, load_dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.ingest import ingest_catalog
from earlyeval.tables.store import write_trajectories

Progress = Callable[[str], None]


class Ingested(Protocol):
    """A finished ingest not yet in place: its per-run reports, every trajectory's record (in dataset order),
    and ``commit(dest)``, which puts the trajectories at ``dest`` in one step."""

    reports: Sequence[Any]
    records: Sequence[Any]

    def commit(self, dest: Path) -> Path: ...


@runtime_checkable
class Backend(Protocol):
    """What the pipeline's stages ask of where they run."""

    def ingest(
        self,
        cat: Catalog,
        root: Path,
        dest: Path,
        max_files: int | None = None,
        progress: bool = True,
    ) -> Ingested: ...

    def dataset(
        self, bench: str, families: list[str], root: str | Path | None = None
    ) -> Dataset: ...

    def featurize(
        self, bench: str, families: list[str], root: str | Path | None = None
    ) -> None: ...

    def featurized(
        self, bench: str, families: list[str], root: str | Path | None = None
    ) -> Dataset: ...

    def runners(self, ds: Dataset) -> Callable[..., FoldRunner]: ...

    def train_runner(
        self, ds: Dataset, cfg: EvalConfig, progress: Progress | None = None
    ) -> FoldRunner: ...

    def shipped_budget(
        self, ds: Dataset, cfg: EvalConfig, bcfg: BudgetConfig, progress: Progress | None = None
    ) -> dict[str, Any] | None: ...

    def replay(
        self,
        model_dir: str | Path,
        thresholds: Any = None,
        halt_on: str = "both",
        warm_rule: str = "certify",
    ) -> Callable[..., list[dict[str, Any]]] | None: ...


@dataclass
class IngestedInProcess:
    """An in-process ingest: the trajectories themselves are the records; ``commit`` writes them as one file."""

    reports: list[Any]
    records: list[Any]

    def commit(self, dest: Path) -> Path:
        return write_trajectories(self.records, dest)


class InProcess:
    """Every stage in this process (the default; nothing of dask is imported)."""

    def ingest(
        self,
        cat: Catalog,
        root: Path,
        dest: Path,
        max_files: int | None = None,
        progress: bool = True,
    ) -> IngestedInProcess:
        trajs, reports = ingest_catalog(cat, root, show_progress=progress, max_files=max_files)
        return IngestedInProcess(reports=reports, records=trajs)

    def dataset(self, bench: str, families: list[str], root: str | Path | None = None) -> Dataset:
        return load_dataset(bench, families, root)

    def featurize(self, bench: str, families: list[str], root: str | Path | None = None) -> None:
        """The featurize stage alone (``bench-scale``): in this process nothing outlives it."""
        load_dataset(bench, families, root, progress=False)

    def featurized(
        self, bench: str, families: list[str], root: str | Path | None = None
    ) -> Dataset:
        """The dataset for a stage after featurize (``bench-scale``): in this process, featurized again."""
        return load_dataset(bench, families, root, progress=False)

    def runners(self, ds: Dataset) -> Callable[..., FoldRunner]:
        """``run_loao``'s runners: a FoldRunner fitting in this process."""

        def runner(
            ds: Dataset, cfg: EvalConfig, progress: Progress | None = None, **_plan: Any
        ) -> FoldRunner:
            return FoldRunner(ds, cfg, progress)

        return runner

    def train_runner(
        self, ds: Dataset, cfg: EvalConfig, progress: Progress | None = None
    ) -> FoldRunner:
        return FoldRunner(ds, cfg, progress)

    def shipped_budget(
        self, ds: Dataset, cfg: EvalConfig, bcfg: BudgetConfig, progress: Progress | None = None
    ) -> dict[str, Any] | None:
        """``train``'s budget estimators (``budget_shipped.fit_shipped``), fitted here."""
        return fit_shipped(ds, cfg, bcfg, progress=progress)

    def replay(
        self,
        model_dir: str | Path,
        thresholds: Any = None,
        halt_on: str = "both",
        warm_rule: str = "certify",
    ) -> None:
        """None: ``score_runs`` replays the runs through its own Monitor, in this process."""
        return None


__all__ = ["Backend", "InProcess", "Ingested", "IngestedInProcess"]

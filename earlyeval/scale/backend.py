"""The pipeline's stages on a cluster: what ``earlyeval ingest|train|evaluate|score --scheduler`` hand the
stages in ``app/pipeline.py`` (and ``score_runs``) instead of doing the work in this process.

``DaskBackend`` (a ``workflows.backend.Backend``) holds the client and the dataset it featurized, its feature blocks
left in the parts (train's tasks read them; evaluate scatters the dataset, blocks as a reference);
``open_backend`` connects for the duration of a verb.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Callable, Iterator

from distributed import Client

from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.catalog import Catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.scale.cluster import connect, result_of
from earlyeval.scale.features import PartsRef, dataset_from_parts, featurize, featurize_parts
from earlyeval.scale.folds import run_folds, runner_factory
from earlyeval.scale.ingest import CHUNK_FILES, IngestedParts, ingest_parts
from earlyeval.scale.replay import replay_runs
from earlyeval.scale.spec import SchedulerSpec
from earlyeval.scale.train import TrainRunner, fit_budget_of_parts, train_plan
from earlyeval.workflows.backend import Backend, InProcess


class DaskBackend:
    """The pipeline's stages on one ``dask.distributed`` client: ``workflows.backend.Backend`` (see the module doc)."""

    def __init__(
        self,
        client: Client,
        *,
        chunk_files: int = CHUNK_FILES,
        progress: Callable[[str], None] | None = None,
    ):
        self.client = client
        self.chunk_files = chunk_files
        self.progress = progress
        self._ds: Dataset | None = None
        self._ds_future: Any = None
        self.fold_runners: list[
            FoldRunner
        ] = []  # every runner handed out (their ``misses``: fits not planned)

    def ingest(
        self,
        cat: Catalog,
        root: Path,
        dest: Path,
        max_files: int | None = None,
        progress: bool = True,
    ) -> IngestedParts:
        """The runs read in parallel tasks into parts beside ``dest`` (progress: this backend's own callback)."""
        return ingest_parts(
            self.client,
            cat,
            root,
            dest,
            chunk_files=self.chunk_files,
            max_files=max_files,
            progress=self.progress,
        )

    def dataset(self, bench: str, families: list[str], root: str | Path | None = None) -> Dataset:
        """Featurized by partition (``scale.features``), then sent once to every worker."""
        ds = featurize(self.client, bench, families, root, progress=self.progress)
        self._ds, self._ds_future = ds, None
        return ds

    def dataset_of_parts(
        self, bench: str, families: list[str], root: str | Path | None = None
    ) -> Dataset:
        """The dataset an earlier featurize left in ``features/<bench>/`` (``scale.features.dataset_from_parts``),
        sent once to every worker."""
        ds = dataset_from_parts(bench, families, root)
        self._ds, self._ds_future = ds, None
        return ds

    def featurize(self, bench: str, families: list[str], root: str | Path | None = None) -> None:
        """The featurize stage alone: the feature parts written to ``features/<bench>/`` (``bench-scale``)."""
        featurize_parts(self.client, bench, families, root)

    def featurized(
        self, bench: str, families: list[str], root: str | Path | None = None
    ) -> Dataset:
        return self.dataset_of_parts(bench, families, root)

    def _future(self, ds: Dataset) -> Any:
        if (
            ds is not self._ds or self._ds_future is None
        ):  # its blocks travel as their parts' reference (PartBlocks)
            self._ds, self._ds_future = ds, self.client.scatter(ds, broadcast=True, hash=False)
        return self._ds_future

    def runners(self, ds: Dataset) -> Callable[..., FoldRunner]:
        """``run_loao``'s ``runners``: each LOAO's folds as tasks first (``scale.folds``)."""
        make = runner_factory(self.client, ds, self._future(ds))

        def runners(*args: Any, **kwargs: Any) -> FoldRunner:
            runner = make(*args, **kwargs)
            self.fold_runners.append(runner)
            return runner

        return runners

    def train_runner(
        self, ds: Dataset, cfg: EvalConfig, progress: Callable[[str], None] | None = None
    ) -> FoldRunner:
        """``train_bench``'s runner: inner folds as tasks reading the feature parts themselves, the shipped fit
        with lightgbm.dask over the parts (``scale.train``); the driver never reads the feature matrix."""
        ref = getattr(ds.blocks, "ref", None)
        if not isinstance(ref, PartsRef):
            raise ValueError(
                "train on a cluster reads the feature parts: give it the dataset this backend featurized"
            )
        results = run_folds(self.client, ref, cfg, train_plan(ds, cfg), progress)
        runner = TrainRunner(ds, cfg, progress, results, self.client, ref)
        self.fold_runners.append(runner)
        return runner

    def shipped_budget(
        self,
        ds: Dataset,
        cfg: EvalConfig,
        bcfg: BudgetConfig,
        progress: Callable[[str], None] | None = None,
    ) -> dict[str, Any] | None:
        """``train``'s budget estimators fitted by one task on the dataset the worker reads from the parts (the
        same code and data as in the driver: the driver never reads the feature matrix); in the driver for a
        dataset not made of parts."""
        ref = getattr(ds.blocks, "ref", None)
        if not isinstance(ref, PartsRef):
            return InProcess().shipped_budget(ds, cfg, bcfg, progress)
        if progress:
            progress("budget: fitted on a worker")
        fut = self.client.submit(fit_budget_of_parts, ref, cfg, bcfg, pure=False)
        return result_of(fut, "the budget estimators")

    def replay(
        self,
        model_dir: str | Path,
        thresholds: Any = None,
        halt_on: str = "both",
        warm_rule: str = "certify",
    ) -> Callable[..., list[dict[str, Any]]]:
        """``score_runs``'s ``replay_all``: the runs replayed through the Monitor on the workers."""

        def replay_all(
            trajs: Any,
            tasks: Any,
            as_of: Any,
            same_agent: Any,
            warm: Any,
            *,
            pin: dict[str, Any] | None = None,
        ) -> list[dict[str, Any]]:
            return replay_runs(
                self.client,
                model_dir,
                thresholds,
                warm,
                trajs,
                tasks,
                as_of,
                same_agent,
                progress=self.progress,
                halt_on=halt_on,
                warm_rule=warm_rule,
                pin=pin,
            )

        return replay_all


@contextlib.contextmanager
def open_backend(
    spec: SchedulerSpec | None, progress: Callable[[str], None] | None = None
) -> Iterator[Backend]:
    """A ``DaskBackend`` on ``spec`` for the block, or ``InProcess`` when ``spec`` is None."""
    if spec is None:
        yield InProcess()
        return
    with connect(spec) as client:
        yield DaskBackend(client, progress=progress)

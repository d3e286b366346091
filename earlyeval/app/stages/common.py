"""What the stages share: the one-line error of a fit the catalog gives too little data for."""

from __future__ import annotations

from earlyeval.core.errors import CatalogError
from earlyeval.evaluation.dataset import Dataset


def too_little_data(ds: Dataset, bench: str, e: Exception, verb: str = "evaluate") -> CatalogError:
    """The one-line error of an evaluation (or a ``train``) that cannot fit on what the catalog gives, naming it."""
    y = [t.outcome for t in ds.trajs if t.outcome is not None]
    where = getattr(getattr(ds, "catalog", None), "path", None) or bench
    return CatalogError(
        str(where),
        "runs",
        f"too little data to {verb} {bench}: {len(y)} labelled runs of "
        f"{len(set(t.agent for t in ds.trajs))} agents, {sum(y)} successes ({type(e).__name__}: "
        f"{str(e).splitlines()[0] if str(e) else ''}); add runs or agents to the catalog",
    )

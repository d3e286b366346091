"""The optional extras (pyproject.toml) and the check a folder of the offline stack makes when it is imported, so
that a core install (the Monitor in an agent loop) that reaches for it gets one line naming the extra to install."""

from __future__ import annotations

import importlib.util

from earlyeval.core.errors import MissingExtraError

# extra -> the importable modules it provides (tests/core/test_extras.py keeps this equal to pyproject.toml)
EXTRAS: dict[str, tuple[str, ...]] = {
    "train": ("sklearn", "scipy", "pandas", "pyarrow", "joblib", "markupsafe"),
    "cli": ("typer", "atif"),
    "plots": ("matplotlib",),
    "dask": ("dask", "distributed"),
}


def require(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise ``MissingExtraError`` naming ``extra`` unless its modules (or ``modules`` of it) can be imported."""
    wanted = EXTRAS[extra] if modules is None else modules
    missing = [m for m in wanted if not _importable(m)]
    if missing:
        raise MissingExtraError(what, extra, missing)


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (
        ImportError,
        ValueError,
    ):  # a parent that fails to import, or a module set to None in sys.modules
        return False

"""A benchmark's evaluation settings (``EvalConfig``) from its catalog, below the pipeline so that
sweep, transfer and routing can read them without importing the application layer."""

from __future__ import annotations

from typing import Any

from earlyeval.config.catalog import load_catalog
from earlyeval.config.eval_config import EvalConfig


def eval_config(bench: str, **overrides: Any) -> EvalConfig:
    """The catalog's record ([settings] and families), with the given fields (None: the catalog's) replaced and
    checked as the record checks them (a ``SettingError`` naming the field)."""
    return load_catalog(bench).config.replace(
        **{k: v for k, v in overrides.items() if v is not None}
    )

"""The forecast ``train`` makes, cached in the workspace: the same data, settings and package version give the same
leave-one-agent-out, so a second ``train`` reuses it (``reports/<bench>/forecast.json``, written atomically)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from earlyeval.config.workspace import reports_dir
from earlyeval.core.atomic import write_json
from earlyeval.core.version import __version__
from earlyeval.evaluation.dataset import Dataset

CACHE = "forecast.json"


def forecast_key(ds: Dataset, cfg: Any) -> str:
    """A hash of what the forecast depends on: every labelled run's id, outcome and length, the settings and the
    package version (a changed run, setting or release recomputes it)."""
    h = hashlib.sha256()
    h.update(json.dumps(cfg.to_dict(), sort_keys=True, default=str).encode())
    h.update(__version__.encode())
    for t in ds.trajs:
        steps = "".join(f"{s.kind}:{len(s.action)}:{len(s.observation)};" for s in t.steps)
        h.update(f"{t.run_id}|{t.agent}|{t.outcome}|{t.meta.get('date', '')}|{steps}\n".encode())
    return h.hexdigest()


def read_forecast_cache(bench: str, key: str) -> dict[str, Any] | None:
    """The cached forecast made under ``key`` (None when there is none, or it was made under another key)."""
    p = reports_dir(bench, create=False) / CACHE
    try:
        got = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    return got if isinstance(got, dict) and got.get("key") == key else None


def write_forecast_cache(bench: str, fc: dict[str, Any]) -> None:
    write_json(fc, reports_dir(bench) / CACHE)

"""Where earlyeval reads and writes: the workspace.

A workspace is a folder holding ``data/<bench>/`` (normalized runs), ``features/``,
``models/`` and ``reports/``.  It is the current directory, or ``$EARLYEVAL_HOME``,
or ``--workspace`` (``set_workspace``), in that order of precedence from last to
first; it never depends on where the package is installed.  The shared runs are
read from ``--data-root``, else ``$EARLYEVAL_DATA``, else ``<workspace>/../shared/data``.
"""

from __future__ import annotations

import os
from pathlib import Path

_explicit: Path | None = None


def set_workspace(path: str | Path | None) -> None:
    """Pin the workspace for this process (the CLI's ``--workspace``); None unpins it."""
    global _explicit
    _explicit = Path(path).expanduser().resolve() if path else None


def workspace_root() -> Path:
    """--workspace, else $EARLYEVAL_HOME, else the current directory."""
    if _explicit is not None:
        return _explicit
    env = os.environ.get("EARLYEVAL_HOME")
    return Path(env).expanduser().resolve() if env else Path.cwd().resolve()


def explicit_workspace() -> Path | None:
    """--workspace, else $EARLYEVAL_HOME; None when the workspace is only the current directory (a lookup that
    must give one answer wherever it runs never falls back on that)."""
    if _explicit is not None:
        return _explicit
    env = os.environ.get("EARLYEVAL_HOME")
    return Path(env).expanduser().resolve() if env else None


def data_root(explicit: str | Path | None = None) -> Path:
    """The shared, read-only runs: --data-root, else $EARLYEVAL_DATA, else ../shared/data beside the workspace."""
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get("EARLYEVAL_DATA")
    if env:
        return Path(env).expanduser().resolve()
    # resolved as the other two are: a symlinked ../shared must name the runs' files by one path, whoever reads them
    # (an in-process ingest and a cluster's chunks recorded two spellings of source_file)
    return (workspace_root().parent / "shared" / "data").resolve()


def is_bench_name(bench: object) -> bool:
    """A benchmark name is one plain path component: ``--bench ../..`` never reaches outside the workspace."""
    return (
        isinstance(bench, str)
        and bool(bench)
        and not bench.startswith(".")
        and not any(c in bench for c in ("/", "\\", "\0"))
    )


def _bench(bench: str) -> str:
    if not is_bench_name(bench):
        raise ValueError(
            f"--bench {bench!r}: not a benchmark name (one plain name such as swebench, no path)"
        )
    return bench


def data_dir(bench: str) -> Path:
    """Normalized runs of one benchmark (``data/<bench>/``); also where a workspace's own catalogs live (``data/<bench>.toml``)."""
    return workspace_root() / "data" / _bench(bench)


def features_dir(bench: str) -> Path:
    return workspace_root() / "features" / _bench(bench)


def models_dir(bench: str) -> Path:
    return workspace_root() / "models" / _bench(bench)


def reports_dir(bench: str, create: bool = True) -> Path:
    d = workspace_root() / "reports" / _bench(bench)
    if create:
        d.mkdir(parents=True, exist_ok=True)
    return d

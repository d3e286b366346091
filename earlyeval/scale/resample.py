"""Larger benchmarks made of the real runs, for measuring how the stages scale (``earlyeval bench-scale``).

Replicated copies (symlinks, new run ids, the same labels and features): fit for measuring time and memory, and
only that. How they are made: docs/scale.md, "Measured: time and memory against the number of runs".
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from earlyeval.config.catalog import catalog_path


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML for {type(v).__name__}")


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else _toml_value(k)


def to_toml(doc: dict[str, Any]) -> str:
    """A catalog document as TOML: top-level values, then tables, then arrays of tables (inline below them)."""
    lines = [
        f"{_key(k)} = {_toml_value(v)}"
        for k, v in doc.items()
        if not isinstance(v, (dict, list))
        or (isinstance(v, list) and not all(isinstance(x, dict) for x in v))
    ]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{_key(k)}]"]
            lines += [
                f"{_key(a)} = {_toml_value(b)}" for a, b in v.items() if not isinstance(b, dict)
            ]
            for a, b in v.items():
                if isinstance(b, dict):
                    lines += ["", f"[{_key(k)}.{_key(a)}]"] + [
                        f"{_key(c)} = {_toml_value(d)}" for c, d in b.items()
                    ]
    for k, v in doc.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for item in v:
                lines += ["", f"[[{_key(k)}]]"] + [
                    f"{_key(a)} = {_toml_value(b)}" for a, b in item.items()
                ]
    return "\n".join(lines) + "\n"


def replicate(bench: str, src_root: Path, dest_root: Path, workspace: Path, copies: int) -> Path:
    """A data root under ``dest_root`` and a catalog in ``workspace`` with ``copies`` copies of every run of
    ``bench`` (see the module doc); the workspace catalog's path."""
    if copies < 1:
        raise ValueError(f"copies must be >= 1, not {copies}")
    raw = tomllib.loads(catalog_path(bench).read_text(encoding="utf-8"))
    src_root, dest_root = Path(src_root).resolve(), Path(dest_root)
    runs = []
    linked: set[Path] = set()
    for r in raw.get("runs", []):
        folder = Path(r["folder"])
        name = r.get("name") or folder.name
        for k in range(copies):
            suffix = f"~c{k:03d}"
            link = dest_root / folder.parent / (folder.name + suffix)
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                os.symlink(src_root / folder, link, target_is_directory=True)
            runs.append(
                {**r, "name": name + suffix, "folder": str(folder.parent / (folder.name + suffix))}
            )
        linked.add(folder.parent)
    for entry in [
        *raw.get("tasks", []),
        raw.get("priors", {}),
    ]:  # task tables and public history: the real files
        if entry.get("path"):
            p = Path(entry["path"])
            link = dest_root / p
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                os.symlink(src_root / p, link)
    doc = {**raw, "runs": runs}
    out = Path(workspace) / "data" / f"{bench}.toml"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        f"# {copies} replicated copies of every run of the packaged {bench} catalog "
        f"(earlyeval.scale.resample: symlinks to the real runs, new run names and ids)\n"
        + to_toml(doc)
    )
    return out

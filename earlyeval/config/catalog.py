"""Benchmark catalogs: ``<bench>.toml``, shipped in ``earlyeval/catalogs/`` (package data).

A workspace may declare its own benchmark, or override a shipped one, in
``<workspace>/data/<bench>.toml``; that file wins over the packaged catalog.

A benchmark is a catalog plus, at most, an ingestor.  The catalog says, per run
folder, which agent it is (scaffold x model), its native format, where its labels
are, its split, and its price; and, for the benchmark, where the tasks and the
public outcome history are.  Nothing about a benchmark is hard-coded elsewhere.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from earlyeval.core.errors import CatalogError
from earlyeval.config.workspace import data_root, is_bench_name, workspace_root

__all__ = ["Catalog", "LabelSpec", "RunSpec", "available_benches", "catalog_path", "data_root", "load_catalog"]
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass
class LabelSpec:
    format: str  # sb-cli | instance-reports | harness-lists | resolved-list | openhands-md | inline | csv-summary
    path: str  # glob relative to the run folder
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunSpec:
    """One run folder (or file set) of one agent."""

    name: str  # unique key in the catalog, the run folder's name by default
    folder: str  # relative to the data root
    agent: str
    scaffold: str
    model: str
    format: str
    split: str = ""
    glob: str = "**/*"
    labels: list[LabelSpec] = field(default_factory=list)
    public_submissions: list[str] = field(default_factory=list)
    small: bool = False  # too small to be a held-out agent on its own
    price: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    date: str = ""  # "YYYY-MM-DD" the run was made: its priors see only public history dated before it


@dataclass
class Catalog:
    bench: str
    path: Path
    runs: list[RunSpec]
    tasks: list[dict[str, Any]] = field(default_factory=list)  # [{format, path, split}]
    priors: dict[str, Any] = field(default_factory=dict)  # {format, path}
    families: list[str] = field(default_factory=lambda: ["behaviour", "text"])
    settings: dict[str, Any] = field(default_factory=dict)  # min_steps, holdout_min_runs, ...

    def run(self, name: str) -> RunSpec:
        for r in self.runs:
            if r.name == name or r.agent == name:
                return r
        raise KeyError(name)

    @property
    def agents(self) -> list[str]:
        seen: list[str] = []
        for r in self.runs:
            if r.agent not in seen:
                seen.append(r.agent)
        return seen


def _packaged_catalogs() -> dict[str, Path]:
    root = resources.files("earlyeval") / "catalogs"
    return {p.name[:-5]: Path(str(p)) for p in root.iterdir() if p.name.endswith(".toml")}


def _workspace_catalogs() -> dict[str, Path]:
    d = workspace_root() / "data"
    return {p.stem: p for p in sorted(d.glob("*.toml"))} if d.is_dir() else {}


def available_benches() -> dict[str, Path]:
    """Every catalog this process can load, by name: the packaged ones, overridden by the workspace's."""
    return {**_packaged_catalogs(), **_workspace_catalogs()}


def catalog_path(bench: str) -> Path:
    if not is_bench_name(bench):
        raise CatalogError(bench, "--bench", f"not a benchmark name; available: {', '.join(sorted(available_benches()))}")
    found = available_benches().get(bench)
    if found is None:
        raise CatalogError(f"{bench}.toml", "<file>",
                           f"no such catalog; available: {', '.join(sorted(available_benches()))} "
                           "(a new benchmark is declared in <workspace>/data/<bench>.toml)")
    return found


def load_catalog(bench_or_path: str | Path) -> Catalog:
    p = Path(bench_or_path)
    if not p.suffix:
        p = catalog_path(str(bench_or_path))
    if not p.exists():
        raise CatalogError(str(p), "<file>", "no such catalog file")
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(str(p), "<toml>", str(e)) from e
    bench = raw.get("bench")
    if not isinstance(bench, str):
        raise CatalogError(str(p), "bench", "missing or not a string")
    defaults = raw.get("defaults", {})
    runs = []
    for i, r in enumerate(raw.get("runs", [])):
        r = {**defaults, **r}
        for key in ("folder", "agent", "format"):
            if key not in r:
                raise CatalogError(str(p), f"runs[{i}].{key}", "missing")
        labels = r.get("labels", [])
        if isinstance(labels, dict):
            labels = [labels]
        lspecs = []
        for j, l in enumerate(labels):
            if "format" not in l:
                raise CatalogError(str(p), f"runs[{i}].labels[{j}].format", "missing")
            lspecs.append(LabelSpec(format=l["format"], path=l.get("path", ""), options={k: v for k, v in l.items() if k not in ("format", "path")}))
        known = {"name", "folder", "agent", "scaffold", "model", "format", "split", "glob", "labels", "public_submissions", "small",
                 "price", "date"}
        date = r.get("date", "")
        if hasattr(date, "isoformat"):  # TOML's bare 2024-06-17 is a date
            date = date.isoformat()
        if date and not _DATE.fullmatch(str(date)):
            raise CatalogError(str(p), f"runs[{i}].date", f"{date!r} is not a YYYY-MM-DD date")
        runs.append(
            RunSpec(
                name=r.get("name") or Path(r["folder"]).name,
                folder=r["folder"],
                agent=r["agent"],
                scaffold=r.get("scaffold", r["agent"]),
                model=r.get("model", ""),
                format=r["format"],
                split=r.get("split", ""),
                glob=r.get("glob", "**/*"),
                labels=lspecs,
                public_submissions=list(r.get("public_submissions", [])),
                small=bool(r.get("small", False)),
                price=dict(r.get("price", {})),
                options={k: v for k, v in r.items() if k not in known},
                date=str(date),
            )
        )
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise CatalogError(str(p), "runs[].name", "run names must be unique")
    return Catalog(
        bench=bench,
        path=p,
        runs=runs,
        tasks=list(raw.get("tasks", [])),
        priors=dict(raw.get("priors", {})),
        families=list(raw.get("families", ["behaviour", "text"])),
        settings=dict(raw.get("settings", {})),
    )

"""Benchmark catalogs: ``<bench>.toml``, shipped in ``earlyeval/catalogs/`` (package data).

``<workspace>/data/<bench>.toml`` declares a benchmark or overrides a shipped one. What a catalog says (per run
folder: agent, format, labels, split, price; nothing hard-coded elsewhere): docs/architecture.md, "Pipeline".
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from earlyeval.config import file_schemas, schema
from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.workspace import data_root, is_bench_name, workspace_root
from earlyeval.core.errors import CatalogError

__all__ = [
    "Catalog",
    "LabelSpec",
    "RunSpec",
    "available_benches",
    "catalog_path",
    "data_root",
    "load_catalog",
]


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
    date: str = (
        ""  # "YYYY-MM-DD" the run was made: its priors see only public history dated before it
    )


@dataclass
class Catalog:
    bench: str
    path: Path
    runs: list[RunSpec]
    tasks: list[dict[str, Any]] = field(default_factory=list)  # [{format, path, split}]
    priors: dict[str, Any] = field(default_factory=dict)  # {format, path}
    families: list[str] = field(default_factory=lambda: ["behaviour", "text"])
    settings: dict[str, Any] = field(default_factory=dict)  # the [settings] table as written
    config: EvalConfig = field(default_factory=EvalConfig)  # the train/evaluate record it builds

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
        raise CatalogError(
            bench,
            "--bench",
            f"not a benchmark name; available: {', '.join(sorted(available_benches()))}",
        )
    found = available_benches().get(bench)
    if found is None:
        raise CatalogError(
            f"{bench}.toml",
            "<file>",
            f"no such catalog; available: {', '.join(sorted(available_benches()))} "
            "(a new benchmark is declared in <workspace>/data/<bench>.toml)",
        )
    return found


def _toml(p: Path) -> dict[str, Any]:
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise CatalogError(str(p), "<file>", f"not UTF-8 text ({e})") from e
    except OSError as e:
        raise CatalogError(str(p), "<file>", f"cannot read ({e.strerror or e})") from e
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise CatalogError(str(p), "<toml>", str(e)) from e
    except RecursionError as e:  # tomllib recurses once per nesting level
        raise CatalogError(str(p), "<toml>", "nested too deeply") from e


# [settings] keys only a family reads: given without the family (neither in ``families`` nor in
# ``model_families``), no model and no ablation ever reads them
FAMILY_SETTINGS = {"peer_prior": "peer_prior"}


def _read_by_a_family(
    settings: dict[str, Any], families: list[str], config: EvalConfig, err: Any
) -> None:
    for key, family in FAMILY_SETTINGS.items():
        if key in settings and family not in families and family not in config.families:
            raise err(
                f"settings.{key}",
                f"is read only by the {family!r} family, which neither 'families' nor "
                "'settings.model_families' names: it would never apply",
            )


def load_catalog(bench_or_path: str | Path) -> Catalog:
    """Read and validate a catalog (``config.file_schemas.CATALOG``, its [settings] as ``EvalConfig``): every key is checked for its type and range, and
    the first bad one is a ``CatalogError`` naming the file and the key (``runs[3].small``)."""
    p = Path(bench_or_path)
    if not p.suffix:
        p = catalog_path(str(bench_or_path))
    if not p.is_file():
        raise CatalogError(str(p), "<file>", "no such catalog file")
    err = lambda key, why: CatalogError(str(p), key, why)  # noqa: E731
    raw = schema.check(file_schemas.CATALOG, _toml(p), err)
    families = list(raw.get("families", ["behaviour", "text"]))
    config = EvalConfig.of_catalog(raw.get("settings", {}), families, err)
    _read_by_a_family(raw.get("settings", {}), families, config, err)
    defaults = raw.get("defaults", {})
    runs = []
    for i, r0 in enumerate(raw.get("runs", [])):
        r = schema.check(file_schemas.RUN, {**defaults, **r0}, err, key=f"runs[{i}]")
        labels = r.get("labels", [])
        if isinstance(labels, dict):
            labels = [labels]
        lspecs = [
            LabelSpec(
                format=l["format"],
                path=l.get("path", ""),
                options={k: v for k, v in l.items() if k not in ("format", "path")},
            )
            for l in labels
        ]
        options = {k: v for k, v in r.items() if k in file_schemas.RUN_OPTIONS and k != "options"}
        options.update(r.get("options", {}))
        runs.append(
            RunSpec(
                name=r.get("name") or Path(r["folder"]).name,
                folder=r["folder"],
                agent=r["agent"],
                scaffold=r.get("scaffold") or r["agent"],
                model=r.get("model", ""),
                format=r["format"],
                split=r.get("split", ""),
                glob=r.get("glob", "**/*"),
                labels=lspecs,
                public_submissions=list(r.get("public_submissions", [])),
                small=r.get("small", False),
                price=dict(r.get("price", {})),
                options=options,
                date=r.get("date", ""),
            )
        )
    names = [r.name for r in runs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise CatalogError(
            str(p),
            f"runs[{names.index(dup[0])}].name",
            f"run names must be unique ({dup[0]!r} is used twice)",
        )
    return Catalog(
        bench=raw["bench"],
        path=p,
        runs=runs,
        tasks=list(raw.get("tasks", [])),
        priors=dict(raw.get("priors", {})),
        families=families,
        settings=dict(raw.get("settings", {})),
        config=config,
    )

"""``earlyeval score``'s reading of a folder: the catalog entries (or a generic one) that describe it, its
format(s) (``--format auto`` reads each format's files as that format), its runs read once (ingest's skips; a
copy in two formats' files counted once) and the output folder checked before the model is loaded."""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from earlyeval.config.catalog import RunSpec, available_benches, load_catalog
from earlyeval.config.catalog import data_root as _data_root
from earlyeval.config.workspace import workspace_root
from earlyeval.core.content import copy_key
from earlyeval.core.errors import CatalogError
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest import copy_of, discover, ingest_run
from earlyeval.ingest.detect import generic_spec
from earlyeval.workflows.score_checks import (
    MIXED,
    catalog_hint,
    check_destination,
    detect_formats,
    label_spec,
    nothing_read,
    output_dir,
)
from earlyeval.workflows.score_options import ScoreOptions

log = logging.getLogger("earlyeval.workflows.score")


def run_specs(
    runs_path: Path,
    fmt: str,
    labels: str | None = None,
    agent: str | None = None,
    root: Path | None = None,
) -> list[RunSpec]:
    """The catalog entries that describe ``runs_path`` (with ``labels``/``agent`` overrides), else a generic one.
    ``root``: the data root catalog folders are relative to (default ``data_root()``)."""
    p = Path(runs_path).resolve()
    root = _data_root(root)
    # an unknown label format: a ValueError, before any read
    lspec = label_spec(labels) if labels else None
    specs = _catalog_specs(p, fmt, root)
    if not specs:  # no catalog entry: the format's own glob and labels (ingest.format_facts)
        specs = [generic_spec(p, fmt, agent)]
    out = []
    for s in specs:
        s.folder = (
            str((root / s.folder).resolve()) if not Path(s.folder).is_absolute() else s.folder
        )
        if lspec:
            s.labels = [lspec]
        if agent:
            s.agent = agent
        out.append(s)
    return out


def _catalog_specs(p: Path, fmt: str, root: Path | None = None) -> list[RunSpec]:
    """Catalog runs whose folder (or file) is ``p`` under ``root``, in format ``fmt`` ("auto": any)."""
    root = _data_root(root)
    found = []
    for toml in sorted(available_benches().values()):
        try:
            cat = load_catalog(toml)
        except (
            CatalogError
        ) as e:  # a bad catalog never stops scoring runs it does not describe: said, skipped
            log.warning("earlyeval score: catalog skipped (it cannot describe these runs): %s", e)
            continue
        for s in cat.runs:
            if s.format != fmt and fmt != "auto":
                continue
            folder = (root / s.folder).resolve()
            if folder == p or (
                p.is_file() and folder == p.parent and (p.name == s.glob or p.match(s.glob))
            ):
                found.append(
                    dataclasses.replace(
                        s,
                        options={**s.options, "bench": cat.bench},
                        glob=p.name if p.is_file() else s.glob,
                    )
                )
    return found


def read_runs(
    specs: list[RunSpec], progress: bool = False
) -> tuple[list[Trajectory], list[dict[str, Any]], list[dict[str, Any]]]:
    """Trajectories of every spec via ``ingest.ingest_run``; (trajectories, skipped files, per-spec ingest reports).
    ``progress``: a bar per spec with its number of files (hence an ETA), on a terminal only."""
    from tqdm.auto import tqdm

    trajs: list[Trajectory] = []
    skipped: list[dict[str, Any]] = []
    reports = []
    for s in specs:
        total = len(discover(Path(s.folder), s)) if progress and Path(s.folder).exists() else None
        with tqdm(
            total=total,
            desc=f"score: read {s.name[:40]}",
            unit="file",
            disable=None if progress else True,
            leave=False,
        ) as bar:
            ts, rep = ingest_run(s, s.options.get("bench", "score"), Path("/"), progress=bar)
            trajs += ts
        skipped += [{**x, "run": s.name} for x in rep.skipped]
        reports.append(rep.to_dict())
    return trajs, skipped, reports


@dataclasses.dataclass
class RunsRead:
    """The runs as read: their format (``MIXED`` for several; ``formats``: runs read per format; ``detection``:
    what --format auto read, or None), the output folder, specs and trajectories."""

    fmt: str
    detected: bool
    dest: Path
    specs: list[RunSpec]
    hint: str | None
    trajs: list[Trajectory]
    skipped: list[dict[str, Any]]
    reports: list[dict[str, Any]]
    formats: dict[str, int] = dataclasses.field(default_factory=dict)
    detection: dict[str, Any] | None = None


def read_folder(runs_path: str | Path, o: ScoreOptions, root: Path, progress: bool) -> RunsRead:
    """The format(s), the output folder checked (another scoring there: refused before the read) and the runs
    read, before the model is loaded: a wrong --format fails fast.  --format auto on a folder of several
    formats reads each format's files as that format (``_mixed_specs``)."""
    fmt, found, p = o.fmt, None, Path(runs_path)
    if o.fmt == "auto":
        found = detect_formats(p, _catalog_specs(p.resolve(), "auto", root), progress=progress)
        fmt = next(iter(found.units)) if len(found.units) == 1 else MIXED
        log.info(
            "--format auto: %s",
            ", ".join(f"{f} ({len(u)} files)" for f, u in sorted(found.units.items())),
        )
    dest = output_dir(p, Path(o.out) if o.out else None, workspace_root() / "reports" / "score")
    check_destination(dest, p, fmt, o.force)
    specs = (
        _mixed_specs(p, found.units, o, root)
        if fmt == MIXED
        else run_specs(p, fmt, o.labels, o.agent, root=root)
    )
    hint = (
        None
        if any(s.options.get("bench") for s in specs)
        else catalog_hint(p, "auto" if fmt == MIXED else fmt, root)
    )
    if hint:
        log.warning("%s", hint)
    trajs, skipped, reports = read_runs(specs, progress=progress)
    trajs, copies = _first_copies(
        trajs
    )  # a run in two formats' files: once (each spec's copies: ingest)
    skipped = (found.skipped if found else []) + _once(skipped) + copies
    if not trajs:
        raise nothing_read(
            p,
            fmt if fmt != MIXED else f"auto ({', '.join(sorted(found.units))})",
            specs,
            reports,
            skipped,
        )
    by_run = {s.name: s.format for s in specs}
    formats = dict(sorted(Counter(by_run.get(str(t.meta.get("run")), fmt) for t in trajs).items()))
    return RunsRead(
        fmt,
        found is not None,
        dest,
        specs,
        hint,
        trajs,
        skipped,
        reports,
        formats,
        found.summary() if found else None,
    )


def _first_copies(trajs: list[Trajectory]) -> tuple[list[Trajectory], list[dict[str, Any]]]:
    """The runs of the folder with a copy (the same content in files of two formats) counted once
    (``ingest.copy_of``: the skip and the warning name both files)."""
    seen: dict[str, str] = {}
    kept, skips = [], []
    for t in trajs:
        dup = copy_of(copy_key(t), str(t.meta.get("source_file", "?")), seen, "score: ")
        if dup is None:
            kept.append(t)
        else:
            skips.append({**dup, "run": t.meta.get("run")})
    return kept, skips


def _once(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each skip once: two formats' specs over one folder both name a dangling link in it."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for x in entries:
        key = tuple(sorted((k, str(v)) for k, v in x.items() if k != "run"))
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


def _mixed_specs(
    p: Path, units: dict[str, list[Path]], o: ScoreOptions, root: Path
) -> list[RunSpec]:
    """One generic spec per format found, named ``<folder>[<format>]`` (its agent too, unless --agent) and
    reading only the files detected as that format (``options["files"]``: its glob may list the others')."""
    out = []
    for fmt, us in sorted(units.items()):
        for s in run_specs(p, fmt, o.labels, o.agent, root=root):
            if not s.options.get(
                "bench"
            ):  # a generic spec: one per format, so that run ids stay apart
                s.name = s.scaffold = f"{p.resolve().name}[{fmt}]"
                s.agent = o.agent or s.name
            s.options = {**s.options, "files": [str(u) for u in us]}
            out.append(s)
    return out

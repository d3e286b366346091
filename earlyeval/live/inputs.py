"""What a live loop hands the Monitor, made safe: a step or task given as an object or a dict.

``clean_step`` is the Monitor's gate: a step with a field of the wrong type is refused whole
(``BadStep``), impossible usage becomes None (unknown), before any feature state sees it.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
from pathlib import Path
from typing import Any, Mapping

from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.tasks_jsonl import is_jsonl, read_tasks_jsonl
from earlyeval.core.trajectory import Action, Step, Task, cost_value, make_step, token_count

_TASK_ALIASES = {
    "instance_id": "task_id",
    "problem_statement": "prompt",
    "patch": "gold_patch",
    "FAIL_TO_PASS": "fail_to_pass",
    "PASS_TO_PASS": "pass_to_pass",
}


def as_task(task: Task | Mapping[str, Any] | None, run_id: str | None = None) -> Task | None:
    """A Task from a Task, a dict of Task fields, or a SWE-bench instance dict."""
    if task is None or isinstance(task, Task):
        return task
    if not isinstance(task, Mapping):
        raise TypeError(f"task must be a Task, a dict or None, not {type(task).__name__}")
    d = {_TASK_ALIASES.get(k, k): v for k, v in task.items()}
    d.setdefault("task_id", run_id or "")
    # the values as given: ``clean_task`` checks each field's type and says what it refused or decoded
    return Task(
        task_id=d["task_id"],
        prompt=d.get("prompt") or "",
        gold_patch=d.get("gold_patch"),
        test_patch=d.get("test_patch"),
        fail_to_pass=d.get("fail_to_pass"),
        pass_to_pass=d.get("pass_to_pass"),
        meta=d["meta"] if d.get("meta") is not None else {},
    )


def complete_task(task: Task | None, table: Mapping[str, Task] | None) -> Task | None:
    """The task with what it lacks (gold patch, tests, meta such as split) filled in from ``table``, by id."""
    if task is None or not table or task.task_id not in table:
        return task
    ref = table[task.task_id]
    return Task(
        task_id=task.task_id,
        prompt=task.prompt or ref.prompt,
        gold_patch=task.gold_patch or ref.gold_patch,
        test_patch=task.test_patch or ref.test_patch,
        fail_to_pass=task.fail_to_pass or ref.fail_to_pass,
        pass_to_pass=task.pass_to_pass or ref.pass_to_pass,
        meta={**ref.meta, **task.meta},
    )


_TASK_TEXT = ("prompt", "gold_patch", "test_patch")
_TASK_LISTS = ("fail_to_pass", "pass_to_pass")


def clean_task(task: Task | None) -> tuple[Task | None, dict[str, str]]:
    """The task with every text field text, and a note per field that was not: bytes are decoded as UTF-8
    (said), undecodable bytes and any other type are refused (the field becomes absent, said), so that
    nothing but a real patch text is ever taken as the run's reference.  A non-text task id is a ``TypeError``."""
    if task is None:
        return None, {}
    task_id: object = task.task_id  # as given: a caller's dict may hold anything
    if not isinstance(task_id, str):
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task = dataclasses.replace(task, task_id=str(task_id))
        else:
            raise TypeError(f"task_id is {type(task_id).__name__}, not text")
    notes: dict[str, str] = {}
    changes: dict[str, Any] = {}
    for f in _TASK_TEXT:
        v = getattr(task, f)
        if v is None or isinstance(v, str):
            continue
        absent = "" if f == "prompt" else None
        if isinstance(v, (bytes, bytearray)):
            try:
                changes[f] = bytes(v).decode("utf-8")
                notes[f] = "decoded from UTF-8 bytes"
            except UnicodeDecodeError:
                changes[f] = absent
                notes[f] = "bytes that are not UTF-8: refused, taken as absent"
        else:
            changes[f] = absent
            notes[f] = f"{type(v).__name__}, not text: refused, taken as absent"
    for f in _TASK_LISTS:
        v = getattr(task, f)
        if isinstance(v, str):  # SWE-bench's FAIL_TO_PASS is a JSON text of a list
            try:
                v = changes[f] = json.loads(v)
            except ValueError:
                pass
        if v is not None and not (isinstance(v, list) and all(isinstance(x, str) for x in v)):
            changes[f] = None
            notes[f] = f"{type(v).__name__}, not a list of test names: refused, taken as absent"
    meta: object = task.meta
    if not isinstance(meta, dict):
        changes["meta"] = {}
        notes["meta"] = f"{type(meta).__name__}, not a mapping: refused"
    return (dataclasses.replace(task, **changes) if changes else task), notes


def task_sources(
    given: Task | None, completed: Task | None, notes: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Where each reference field of the run's task came from: "start(task)" (what the loop gave), "task table"
    (filled in by id from ``Monitor(tasks=...)``) or "absent"; with the cleaning note when there was one."""
    out = {}
    for f in ("gold_patch", "test_patch", "fail_to_pass"):
        src = (
            "start(task)"
            if given is not None and getattr(given, f)
            else ("task table" if completed is not None and getattr(completed, f) else "absent")
        )
        note = (notes or {}).get(f)
        out[f] = f"{src} ({note})" if note else src
    return out


def task_table(tasks: Mapping[str, Task] | str | Path | None) -> dict[str, Task]:
    if tasks is None:
        return {}
    if isinstance(tasks, (str, Path)):
        path = Path(tasks)
        if not path.exists():
            raise FileNotFoundError(
                f"task table {path} does not exist (written by `earlyeval ingest --bench B`)"
            )
        if is_jsonl(
            path
        ):  # a runtime without pyarrow reads this one (ingest writes it beside the parquet)
            return read_tasks_jsonl(path)
        from earlyeval.tables.store import (
            read_tasks,  # here: pyarrow only for a Monitor handed a parquet task table
        )

        return read_tasks(path)
    return dict(tasks)


def as_step(step: Step | Mapping[str, Any], index: int) -> Step:
    """A Step from a Step or a dict.  A dict with ``kind`` or ``actions`` is a serialized
    Step; otherwise ``action`` (run with ``tool``, a shell command by default) is
    classified by the shared taxonomy, as ``EarlyStopper.after_step`` does."""
    if isinstance(step, Step):
        # cleaning fixes fields on a copy, never on the caller's Step
        return dataclasses.replace(step)
    if not isinstance(step, Mapping):
        raise BadStep(f"step must be a Step or a dict, not {type(step).__name__}")
    d = dict(step)
    d.setdefault("index", index)
    idx = d["index"]
    if isinstance(idx, bool) or not isinstance(idx, numbers.Integral) or idx < 0:
        raise BadStep(f"field 'index' is {idx!r}, not a step number (an integer >= 0)")
    if d.get("actions") is not None and not isinstance(d["actions"], list):
        raise BadStep(f"field 'actions' is {type(d['actions']).__name__}, not a list")
    if "kind" in d or d.get("actions"):
        st = Step.from_dict(d)
        for f in (
            "action",
            "kind",
            "thought",
            "observation",
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "cost_usd",
            "error",
        ):
            if (
                d.get(f) is not None
            ):  # as given: clean_step checks (and flags) what from_dict would coerce quietly
                setattr(st, f, d[f])
        return st
    action = d.get("action") or ""
    for f in ("action", "tool", "thought", "observation", "final_answer"):
        if d.get(f) is not None and not isinstance(d[f], str):
            raise BadStep(f"field '{f}' is {type(d[f]).__name__}, not text")
    acts = [Action(tool=str(d.get("tool", "bash")), text=str(action))] if action else []
    return make_step(
        int(d["index"]),
        acts,
        thought=d.get("thought") or "",
        observation=d.get("observation") or "",
        input_tokens=d.get("input_tokens"),
        output_tokens=d.get("output_tokens"),
        cached_tokens=d.get("cached_tokens"),
        cost_usd=d.get("cost_usd"),
        error=d.get("error"),
        final_answer=d.get("final_answer"),
    )


class BadStep(EarlyEvalError, ValueError):
    """A step the monitor cannot read (a field of the wrong type): skipped, the run goes on."""


_TEXT_FIELDS = ("action", "kind", "thought", "observation")
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cached_tokens")


_STEP_KEYS = frozenset(
    {
        "index",
        "action",
        "tool",
        "thought",
        "observation",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "cost_usd",
        "error",
        "final_answer",
        "kind",
        "actions",
    }
)


def clean_step(step: Step | Mapping[str, Any], index: int) -> tuple[Step, list[str]]:
    """The step as the featurizer may see it, and what was made unknown on the way.

    Raises ``BadStep`` (naming the field) for a step that is not a Step or a dict, or whose text
    fields or actions are not text: such a step is skipped whole, before any state sees it.  Usage
    that is impossible (``token_count`` / ``cost_value``: NaN, negative, absurd, not a number) and an
    ``error`` that is not a bool become None -- unknown -- and are listed in the returned flags."""
    try:
        st = as_step(step, index)
    except BadStep:
        raise
    except Exception as e:
        raise BadStep(f"{type(e).__name__}: {e}") from e
    flags: list[str] = []
    if isinstance(step, Mapping):
        unknown = sorted(str(k) for k in step if k not in _STEP_KEYS)
        if unknown:  # a typo ("observaton") would otherwise drop a field without a word
            flags.append(
                f"unknown step field(s) {unknown[:5]} ignored (known: {', '.join(sorted(_STEP_KEYS))})"
            )
    for f in _TEXT_FIELDS:
        v = getattr(st, f)
        if v is None:
            setattr(st, f, "")
        elif not isinstance(v, str):
            raise BadStep(f"field '{f}' is {type(v).__name__}, not text")
    if not isinstance(st.actions, list):
        raise BadStep(f"field 'actions' is {type(st.actions).__name__}, not a list")
    for k, a in enumerate(st.actions):
        if not isinstance(a, Action) or not all(
            isinstance(getattr(a, n), str) for n in ("tool", "text", "kind")
        ):
            raise BadStep(f"field 'actions[{k}]' is not an Action of text fields")
    for f in _USAGE_FIELDS:
        v = getattr(st, f)
        if v is not None and (type(v) is not int or token_count(v) is None):
            c = token_count(v)
            if c is None:
                flags.append(f"{f}={v!r} is not a possible token count: taken as unknown (None)")
            setattr(st, f, c)
    if st.cost_usd is not None and (
        type(st.cost_usd) is not float or cost_value(st.cost_usd) is None
    ):
        cost = cost_value(st.cost_usd)
        if cost is None:
            flags.append(
                f"cost_usd={st.cost_usd!r} is not a possible cost: taken as unknown (None)"
            )
        st.cost_usd = cost
    error: object = st.error
    if error is not None and not isinstance(error, bool):
        flags.append(f"error={error!r} is not a bool: taken as unknown (None)")
        st.error = None
    return st, flags


def _index_of(step: Any, default: int) -> int:
    try:
        i = step.index if isinstance(step, Step) else step.get("index", default)
        return int(i)
    except Exception:
        return default

"""Toolathlon trajectories (``trajs/<model>_<task>.json``, one run of one task per file).

OpenAI-style messages: one step per assistant message with its MCP tool results; the label is ``pass`` (the
evaluator's ``failure`` log is never read). Details: docs/formats.md, "Toolathlon".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.render import content_text, tool_call_text
from earlyeval.core.trajectory import Action, Step, Trajectory
from earlyeval.ingest.chat import PendingTurn, chat_steps
from earlyeval.ingest.common import run_trajectory
from earlyeval.ingest.sniff import Heads

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.json*"
INLINE_LABELS = True


_RETURN_CODE = re.compile(r"===\s*EXECUTION INFO\s*===.*?Return code:\s*(-?\d+)", re.S)


def task_id_of(path: Path, spec: RunSpec) -> str:
    """``<model>_<task>.json[.gz]`` -> ``<task>``; model names hold no underscore."""
    stem = strip_gz(path.name)
    if stem.endswith(".json"):
        stem = stem[: -len(".json")]
    if spec.model and stem.startswith(spec.model + "_"):
        return stem[len(spec.model) + 1 :]
    return stem.split("_", 1)[1] if "_" in stem else stem


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise IngestError(f, "<root>", f"expected an object, got {type(d).__name__}")
    if "pass" not in d:
        raise IngestError(f, "pass", "missing: no label")
    p = d["pass"]
    if p is not None and not isinstance(p, bool):
        raise IngestError(f, "pass", f"expected true, false or null, got {type(p).__name__}")
    outcome = None if p is None else int(p)
    messages = require(d, "messages", list, f)
    if not messages:
        raise IngestError(f, "messages", "empty dialogue")
    steps, prompt = _steps(messages, f)
    if not steps:
        raise IngestError(f, "messages", "no assistant message: the agent never acted")
    task_id = task_id_of(path, spec)
    # ``failure`` is deliberately absent: it is the evaluator's verdict log
    yield run_trajectory(
        spec, bench, f, task_id, steps, prompt=prompt, outcome=outcome, graded=p is not None
    )


def mcp_result(content: Any) -> tuple[str, bool | None]:
    """Text of an MCP tool result and its error mark (True, or None when unmarked)."""
    text = content_text(content)
    if not isinstance(content, str):
        return text, None
    error: bool | None = None
    try:
        j = json.loads(content)
    except (json.JSONDecodeError, ValueError):
        j = None
    if isinstance(j, dict) and j.get("type") == "text" and isinstance(j.get("text"), str):
        text = j["text"]
        if j.get("error") is True or j.get("isError") is True:
            error = True
    elif isinstance(j, list) and j and all(isinstance(x, dict) and "type" in x for x in j):
        text = content_text(j)
        if any(x.get("error") is True for x in j):
            error = True
    rc = _RETURN_CODE.search(text)
    if rc and int(rc.group(1)) != 0:
        error = True
    return text, error


def _steps(messages: list, f: str) -> tuple[list[Step], str]:
    return chat_steps(
        messages,
        f,
        "messages",
        turn=lambda m, mw, text: _turn(m, f, mw),
        tool_result=lambda m, pending, content: mcp_result(content),
    )


def _turn(m: dict, f: str, mw: str) -> PendingTurn:
    calls = m.get("tool_calls") or []
    if not isinstance(calls, list):
        raise IngestError(f, f"{mw}.tool_calls", f"expected a list, got {type(calls).__name__}")
    actions: list[Action] = []
    ids: set[str] = set()
    for k, tc in enumerate(calls):
        cw = f"{mw}.tool_calls[{k}]"
        if not isinstance(tc, dict):
            raise IngestError(f, cw, f"expected an object, got {type(tc).__name__}")
        fn = tc.get("function")
        if not isinstance(fn, dict):
            raise IngestError(f, f"{cw}.function", "missing or not an object")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise IngestError(f, f"{cw}.function.name", "missing or not a string")
        args = fn.get("arguments")
        if args is not None and not isinstance(args, (str, dict)):
            raise IngestError(
                f, f"{cw}.function.arguments", f"expected a JSON string, got {type(args).__name__}"
            )
        actions.append(
            Action(tool=name, text=tool_call_text(name, args if args is not None else {}))
        )
        if isinstance(tc.get("id"), str):
            ids.add(tc["id"])
    text = content_text(m.get("content"))
    # a turn with tool calls: its text is the thought; without: the text is what it did
    return PendingTurn(
        actions=actions,
        call_ids=ids,
        thought=text if actions else "",
        final_answer="" if actions else text,
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): the evaluator's ``pass`` beside the ``messages``."""
    h = heads.of(path)
    return h.root == "{" and h.has("pass", "messages")

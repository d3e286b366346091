"""OpenHands ``llm_completions`` chats (CodeActAgent, native tool calling) as steps: one step per assistant message
with its tool calls and the tool messages that answer them.  docs/formats.md, "OpenHands llm_completions".
"""

from __future__ import annotations

import re
from typing import Any

from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import require
from earlyeval.core.render import EDITOR_TOOLS, content_text, tool_call_text
from earlyeval.core.trajectory import Action, make_step
from earlyeval.steps.calls import tool_calls

_EXIT = re.compile(r"\[Command finished with exit code (-?\d+)\]")


def render_tool_call(name: str, arguments: Any) -> Action:
    """One native tool call as an Action (text: the shared ``earlyeval.core.render.tool_call_text``)."""
    return Action(tool=name, text=tool_call_text(name, arguments))


def tool_error(name: str, text: str) -> bool | None:
    """Error flag of one tool result, where the output says."""
    m = _EXIT.search(text)
    if m:
        return int(m.group(1)) != 0
    if name in EDITOR_TOOLS:
        return text.lstrip().startswith("ERROR")
    return None


def _check_answer(step: dict[str, Any], call_id: Any, file: str, where: str) -> None:
    """A tool message answers a call the assistant message before it made, once; else an IngestError naming it
    (a message that names no call is read as the step's: which call it answers cannot be checked)."""
    if not step["calls"]:
        raise IngestError(
            file, where, "a tool message after an assistant message that made no call"
        )
    if call_id is None:
        return
    ids = {c[0] for c in step["calls"] if c[0]}
    if ids and call_id not in ids:
        raise IngestError(
            file,
            f"{where}.tool_call_id",
            f"answers call {call_id!r}, which the assistant message before it did not make",
        )
    if call_id in step["answered"]:
        raise IngestError(file, f"{where}.tool_call_id", f"a second answer to call {call_id!r}")
    step["answered"].add(call_id)


def steps_from_chat(messages: list, file: str, field: str = "messages") -> tuple[list, str, int]:
    """(steps, prompt, number of auto-continue user prompts) of a native tool-calling chat."""
    prompt = ""
    pending: list[dict[str, Any]] = []
    nudges = 0
    for i, m in enumerate(messages):
        where = f"{field}[{i}]"
        role = require(m, "role", str, file, where)
        if role == "system":
            continue
        if role == "user":
            if not pending and not prompt:
                prompt = content_text(m.get("content"))
            else:
                nudges += 1
            continue
        if role == "assistant":
            calls = [(c.id or "", c.name, c.arguments) for c in tool_calls(m, file, where)]
            pending.append(
                {
                    "thought": content_text(m.get("content")).strip(),
                    "calls": calls,
                    "obs": [],
                    "err": [],
                    "answered": set(),
                }
            )
            continue
        if role == "tool":
            if not pending:
                raise IngestError(file, where, "tool message before any assistant message")
            step = pending[-1]
            tid = m.get("tool_call_id")
            _check_answer(step, tid, file, where)
            names = {c[0]: c[1] for c in step["calls"]}
            name = names.get(tid) or m.get("name") or (step["calls"][0][1] if step["calls"] else "")
            text = content_text(m.get("content"))
            step["obs"].append(text)
            step["err"].append(tool_error(name, text))
            continue
        raise IngestError(file, f"{where}.role", f"unknown role {role!r}")
    steps = []
    for k, p in enumerate(pending):
        errs = [e for e in p["err"] if e is not None]
        steps.append(
            make_step(
                k,
                [render_tool_call(name, args) for _, name, args in p["calls"]],
                thought=p["thought"],
                observation="\n".join(p["obs"]),
                error=any(errs) if errs else None,
            )
        )
    return steps, prompt, nudges

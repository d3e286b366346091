"""Toolathlon conversations as steps: OpenAI-style messages, one step per assistant message with its MCP tool
results (their error marks and the command's return code).  docs/formats.md, "Toolathlon".
"""

from __future__ import annotations

import json
import re
from typing import Any

from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step
from earlyeval.steps.calls import tool_calls
from earlyeval.steps.chat import PendingTurn, chat_steps

_RETURN_CODE = re.compile(r"===\s*EXECUTION INFO\s*===.*?Return code:\s*(-?\d+)", re.S)


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


def dialogue_steps(messages: list, f: str) -> tuple[list[Step], str]:
    return chat_steps(
        messages,
        f,
        "messages",
        turn=lambda m, mw, text: _turn(m, f, mw),
        tool_result=lambda m, pending, content: mcp_result(content),
        answer_key="tool_call_id",
    )


def _turn(m: dict, f: str, mw: str) -> PendingTurn:
    calls = tool_calls(m, f, mw)
    actions = [c.action(absent={}) for c in calls]
    ids = {c.id for c in calls if c.id is not None}
    text = content_text(m.get("content"))
    # a turn with tool calls: its text is the thought; without: the text is what it did
    return PendingTurn(
        actions=actions,
        call_ids=ids,
        thought=text if actions else "",
        final_answer="" if actions else text,
    )

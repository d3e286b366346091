"""The one rendering of message content and tool calls into the text a Step carries.

Every ingestor and every live adapter goes through ``content_text`` and ``tool_call_text``, so a tool call is the
same text live as in the training data (the features read that text). How each kind of tool is rendered:
docs/formats.md, "Tool calls and message content as text".
"""

from __future__ import annotations

import json
from typing import Any

# tools that edit or view files with (command, path, ...) arguments
EDITOR_TOOLS = frozenset(
    {
        "str_replace_editor",
        "str_replace_based_edit_tool",
        "file_editor",
        "edit_file",
        "editor",
        "text_editor",
    }
)
EDITOR_EXTRA = ("view_range", "insert_line", "old_str", "new_str", "file_text")

# tools whose command-line argument is the action (rendered as the bare command)
SHELL_TOOLS = frozenset({"bash", "", "shell", "execute_bash", "terminal", "cmd", "bash_session"})
SHELL_ARG_KEYS = ("command", "cmd", "keystrokes")

# tools whose one text argument is the action, by the keys it may have
TEXT_TOOLS: dict[str, tuple[str, ...]] = {
    "finish": ("message", "final_thought"),
    "think": ("thought",),
    "execute_ipython_cell": ("code",),
    "python": ("code",),
}

_IMAGE_PARTS = ("image", "image_url", "input_image")
_AUDIO_PARTS = ("audio", "input_audio")
_TEXT_PARTS = (None, "text", "input_text", "output_text")


def content_text(content: Any) -> str:
    """A message content as text (see the module doc); ``None`` is ``""``."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        return content["text"] if isinstance(content.get("text"), str) else str(content)
    if isinstance(content, (list, tuple)):
        return "\n".join(_part_text(p) for p in content)
    text = getattr(content, "text", None)  # one content object
    return text if isinstance(text, str) else str(content)


def _part_text(p: Any) -> str:
    if isinstance(p, str):
        return p
    if isinstance(p, dict):
        typ, text = p.get("type"), p.get("text")
    else:
        typ, text = getattr(p, "type", None), getattr(p, "text", None)
    if typ in _TEXT_PARTS and isinstance(text, str):
        return text
    if typ in _IMAGE_PARTS:
        return "[image]"
    if typ in _AUDIO_PARTS:
        return "[audio]"
    return text if isinstance(text, str) else str(p)


# nesting a tool call's arguments are rendered to: deeper levels are shown as a marker, so that arguments nested
# 100,000 deep are rendered (and their step scored) instead of raising RecursionError
MAX_ARG_DEPTH = 64
DEEPER = "[nested deeper than 64 levels]"


def parse_arguments(arguments: Any) -> Any:
    """Tool-call arguments as an object when they are (or encode) one; else as given (a text nested past the
    parser's depth too: it is then rendered as the text it is)."""
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except (json.JSONDecodeError, ValueError, RecursionError):
            return arguments
        return parsed if isinstance(parsed, dict) else arguments
    return arguments


def _bounded(x: Any, depth: int = 0) -> Any:
    """``x`` with every container deeper than ``MAX_ARG_DEPTH`` replaced by ``DEEPER`` (recursion bounded by
    that depth): what ``json.dumps`` can always render."""
    if isinstance(x, dict):
        return (
            DEEPER if depth >= MAX_ARG_DEPTH else {k: _bounded(v, depth + 1) for k, v in x.items()}
        )
    if isinstance(x, (list, tuple)):
        return DEEPER if depth >= MAX_ARG_DEPTH else [_bounded(v, depth + 1) for v in x]
    return x


def _dumps(x: Any, **kw: Any) -> str:
    """``json.dumps``, with nesting past ``MAX_ARG_DEPTH`` shown as a marker instead of a RecursionError."""
    try:
        return json.dumps(x, **kw)
    except RecursionError:
        return json.dumps(_bounded(x), **kw)


def tool_call_text(tool: str, arguments: Any) -> str:
    """The Action.text of one tool call (rules in the module doc)."""
    args = parse_arguments(arguments)
    if args is None:
        return ""
    if isinstance(args, str):
        return args
    if not isinstance(args, dict):
        return _dumps(args, ensure_ascii=False)
    if tool in EDITOR_TOOLS:
        text = f"{args.get('command', '')} {args.get('path', '')}".strip()
        for k in EDITOR_EXTRA:
            if args.get(k) is not None:
                v = args[k] if isinstance(args[k], str) else _dumps(args[k])
                text += f"\n{k}: {v}"
        return text
    keys = SHELL_ARG_KEYS if tool in SHELL_TOOLS else TEXT_TOOLS.get(tool)
    if keys is not None:
        for k in keys:
            if isinstance(v := args.get(k), str):
                return v
        if not args:
            return ""
    return _dumps(args, ensure_ascii=False)


__all__ = [
    "EDITOR_TOOLS",
    "SHELL_TOOLS",
    "TEXT_TOOLS",
    "content_text",
    "parse_arguments",
    "tool_call_text",
]

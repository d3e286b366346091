"""Tool-call arguments nested past any sensible depth are rendered, bounded, never a RecursionError (issue 43
item 6): the step they belong to is scored with what could be read."""

from __future__ import annotations

import json

from earlyeval.core.render import DEEPER, MAX_ARG_DEPTH, tool_call_text


def _nested(n: int) -> dict:
    d: dict = {}
    cur = d
    for _ in range(n):
        cur["a"] = {}
        cur = cur["a"]
    return d


def test_an_object_nested_100000_deep_is_rendered_to_its_bound():
    text = tool_call_text("bash", _nested(100_000))
    assert DEEPER in text and text.count('{"a": ') == MAX_ARG_DEPTH
    assert json.loads(text) is not None  # still JSON


def test_a_text_nested_past_the_parser_is_the_text_it_is():
    deep = "[" * 100_000 + "]" * 100_000
    assert tool_call_text("bash", deep) == deep
    assert tool_call_text(
        "str_replace_editor", {"command": "view", "path": "p", "view_range": _nested(5000)}
    )


def test_shallow_arguments_render_as_before():
    assert tool_call_text("bash", {"command": "ls"}) == "ls"
    assert tool_call_text("x", {"a": [1, {"b": 2}]}) == '{"a": [1, {"b": 2}]}'

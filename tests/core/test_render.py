"""The one rendering of tool calls and message content (earlyeval/core/render.py), on the cases each format produces."""

from __future__ import annotations

from dataclasses import dataclass

from earlyeval.core.render import content_text, tool_call_text


def test_editor_call_keeps_the_training_form_with_its_edit_lines():
    args = (
        '{"path": "/repo/a.py", "new_str": "y = 2", "old_str": "y = 1", "command": "str_replace"}'
    )
    assert (
        tool_call_text("str_replace_editor", args)
        == "str_replace /repo/a.py\nold_str: y = 1\nnew_str: y = 2"
    )
    assert (
        tool_call_text("text_editor", {"command": "view", "path": "/a.py", "view_range": [1, 9]})
        == "view /a.py\nview_range: [1, 9]"
    )
    assert (
        tool_call_text("file_editor", {"command": "create", "path": "/b.py", "file_text": "x\n"})
        == "create /b.py\nfile_text: x\n"
    )


def test_shell_tools_give_the_command_line_whatever_rides_along():
    assert (
        tool_call_text(
            "execute_bash", {"command": "pytest -q", "timeout": 30, "security_risk": "LOW"}
        )
        == "pytest -q"
    )
    assert tool_call_text("bash", '{"cmd": "ls"}') == "ls"
    assert tool_call_text("terminal", {"keystrokes": "q"}) == "q"
    assert tool_call_text("bash", {}) == ""
    assert tool_call_text("bash", {"timeout": 5}) == '{"timeout": 5}'


def test_text_tools_give_their_text_argument():
    assert tool_call_text("finish", {"message": "done"}) == "done"
    assert tool_call_text("finish", {}) == ""
    assert tool_call_text("think", {"thought": "hmm"}) == "hmm"
    assert tool_call_text("python", {"code": "print(1)"}) == "print(1)"


def test_other_tools_are_compact_json_in_their_own_key_order():
    assert tool_call_text("get_user", {"user_id": "u1", "a": 1}) == '{"user_id": "u1", "a": 1}'
    assert tool_call_text("get_user", '{"user_id": "é"}') == '{"user_id": "é"}'
    assert tool_call_text("now", {}) == "{}"
    # a lone argument is not unwrapped: "get_customer 555" would lose what the value is
    assert (
        tool_call_text("get_customer_by_phone", {"phone_number": "555"})
        == '{"phone_number": "555"}'
    )
    # a "command" key on a tool that is not a shell is an argument like any other
    assert tool_call_text("terminal-run_command", {"command": "ls"}) == '{"command": "ls"}'


def test_arguments_that_are_not_an_object_stay_as_sent():
    assert tool_call_text("x", "not json {") == "not json {"
    assert tool_call_text("x", "[1,2]") == "[1,2]"
    assert tool_call_text("x", None) == ""
    assert tool_call_text("x", [1, 2]) == "[1, 2]"


@dataclass
class _Part:  # an SDK TextContent / inspect ContentText / ContentImage
    type: str
    text: str | None = None


def test_content_text_reads_every_text_part_and_marks_media():
    parts = [
        {"type": "text", "text": "a"},
        {"type": "input_text", "text": "b"},
        {"type": "output_text", "text": "c"},
        {"type": "image_url", "image_url": {"url": "data:..."}},
        {"type": "input_audio", "input_audio": {}},
        "d",
    ]
    assert content_text(parts) == "a\nb\nc\n[image]\n[audio]\nd"
    assert content_text([_Part("text", "x"), _Part("image")]) == "x\n[image]"
    assert content_text({"text": "t"}) == "t"
    assert content_text(None) == "" and content_text("s") == "s"

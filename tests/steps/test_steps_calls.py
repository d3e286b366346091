"""The one reading of an OpenAI-style ``tool_calls`` list (``earlyeval.steps.calls``), used by the SWE-agent 1.x,
OpenHands completions, tau2 and Toolathlon readers: valid calls come back raw, anything else is refused naming
the call's field."""

from __future__ import annotations

import pytest

from earlyeval.core.errors import IngestError
from earlyeval.steps.calls import RawCall, tool_calls


def test_nested_and_flat_calls_come_back_raw():
    m = {
        "tool_calls": [
            {"id": "a", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
            {"id": 7, "function": {"name": "finish", "arguments": {"message": "done"}}},
            {"function": {"name": "think"}},
        ]
    }
    assert tool_calls(m, "f.json", "messages[3]") == [
        RawCall("a", "bash", '{"command": "ls"}'),
        RawCall(None, "finish", {"message": "done"}),  # an id that is not a string is no id
        RawCall(None, "think", None),
    ]
    flat = {"tool_calls": [{"id": "c1", "name": "get_order", "arguments": {"id": 3}}]}
    assert tool_calls(flat, "f.json", "m", nested=False) == [RawCall("c1", "get_order", {"id": 3})]
    assert tool_calls({}, "f.json", "m") == [] and tool_calls({"tool_calls": None}, "f", "m") == []


def test_a_call_without_arguments_renders_as_its_format_first_read_it():
    call = RawCall(None, "list_files", None)
    assert call.action().text == "" and call.action(absent={}).text == "{}"
    assert RawCall(None, "bash", {"command": "ls -la"}).action().text == "ls -la"


@pytest.mark.parametrize(
    "calls, field",
    [
        ("ls", "messages[1].tool_calls"),
        (["ls"], "messages[1].tool_calls[0]"),
        ([{"id": "a"}], "messages[1].tool_calls[0].function"),
        ([{"function": {"name": ""}}], "messages[1].tool_calls[0].function.name"),
        ([{"function": {"name": 3}}], "messages[1].tool_calls[0].function.name"),
        (
            [{"function": {"name": "bash", "arguments": [1]}}],
            "messages[1].tool_calls[0].function.arguments",
        ),
    ],
)
def test_a_malformed_call_is_refused_naming_its_field(calls, field):
    with pytest.raises(IngestError) as e:
        tool_calls({"tool_calls": calls}, "run.json", "messages[1]")
    assert e.value.file == "run.json" and e.value.field == field


def test_flat_calls_name_their_own_fields():
    with pytest.raises(IngestError) as e:
        tool_calls({"tool_calls": [{"name": "x", "arguments": 3}]}, "f", "m", nested=False)
    assert e.value.field == "m.tool_calls[0].arguments"

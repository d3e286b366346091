"""OpenHands SDK events of an ``llm_completions`` conversation, built twice: on the stand-ins (Python 3.11, no SDK)
and on the real ``openhands.sdk`` classes (Python >= 3.12, the ``make test-openhands`` stage)."""

from __future__ import annotations

import re

from _openhands_standin import (
    ActionEvent,
    MessageToolCall,
    Observation,
    ObservationEvent,
    TextContent,
)

_EXIT = re.compile(r"\[Command finished with exit code (-?\d+)\]")


class StandinEvents:
    """Event factory on the stand-ins (tests/_openhands_standin.py)."""

    def text(self, text: str):
        return TextContent(text)

    def action(self, tool: str, call_id: str, response_id: str, arguments: str, thought: list):
        return ActionEvent(
            tool, call_id, response_id, MessageToolCall(call_id, tool, arguments), thought
        )

    def observation(
        self, tool: str, call_id: str, text: str, exit_code: int | None, is_error: bool | None
    ):
        return ObservationEvent(
            tool,
            call_id,
            Observation(content=[TextContent(text)], exit_code=exit_code, is_error=is_error),
        )


class SdkEvents:
    """Event factory on the real openhands-sdk classes (Python >= 3.12)."""

    def __init__(self):
        from openhands.sdk import Observation as SdkObservation
        from openhands.sdk import TextContent as SdkText
        from openhands.sdk.event import ActionEvent as SdkAction
        from openhands.sdk.event import ObservationEvent as SdkObsEvent
        from openhands.sdk.llm import MessageToolCall as SdkCall

        class ToolObservation(
            SdkObservation
        ):  # a tool's observation: the SDK's fields plus an exit code
            exit_code: int | None = None

        self.Text, self.Action, self.ObsEvent, self.Call, self.Obs = (
            SdkText,
            SdkAction,
            SdkObsEvent,
            SdkCall,
            ToolObservation,
        )

    def text(self, text: str):
        return self.Text(text=text)

    def action(self, tool: str, call_id: str, response_id: str, arguments: str, thought: list):
        return self.Action(
            tool_name=tool,
            tool_call_id=call_id,
            llm_response_id=response_id,
            thought=thought,
            action=None,
            tool_call=self.Call(id=call_id, name=tool, arguments=arguments, origin="completion"),
        )

    def observation(
        self, tool: str, call_id: str, text: str, exit_code: int | None, is_error: bool | None
    ):
        obs = self.Obs.from_text(text, is_error=bool(is_error), exit_code=exit_code)
        return self.ObsEvent(
            tool_name=tool, tool_call_id=call_id, observation=obs, action_id=f"action-{call_id}"
        )


def tool_result(tool: str, text: str) -> tuple[int | None, bool | None]:
    """(exit code, error flag) an SDK observation carries for a tool result."""
    m = _EXIT.search(text)
    if m:
        return int(m.group(1)), None
    if tool == "str_replace_editor":
        return None, text.lstrip().startswith("ERROR")
    return None, None


def content(m: dict) -> str:
    c = m.get("content")
    return (
        c
        if isinstance(c, str)
        else "\n".join(p.get("text", "") for p in c or [] if isinstance(p, dict))
    )


def conversation(d: dict) -> list[dict]:
    """The agent's side of a completions file: its messages after the prompt, then the final response."""
    return [m for m in d["messages"] if m["role"] not in ("system", "user")] + [
        {**d["response"]["choices"][0]["message"], "role": "assistant"}
    ]


def all_turns_call_tools(d: dict) -> bool:
    """A turn without a tool call is an agent MessageEvent in the SDK, which ends the run: such runs are left out."""
    return all(m.get("tool_calls") for m in conversation(d) if m["role"] == "assistant")


def events_of(messages: list[dict], make) -> tuple[list, list[int]]:
    """SDK events of a completions conversation, and the index of each assistant turn that the callback scores."""
    events, scored = [], []
    turn = -1
    pending: dict[str, int] = {}
    answered: dict[int, set] = {}
    calls_of: dict[int, list] = {}
    for k, m in enumerate(messages):
        if m["role"] == "assistant":
            turn += 1
            rid = f"resp-{k}"
            calls = m.get("tool_calls") or []
            calls_of[turn] = [c["function"]["name"] for c in calls]
            answered[turn] = set()
            for j, tc in enumerate(calls):
                fn = tc["function"]
                thought = [make.text(content(m))] if j == 0 and content(m) else []
                events.append(make.action(fn["name"], tc["id"], rid, fn["arguments"], thought))
                pending[tc["id"]] = turn
        elif m["role"] == "tool":
            tid = m["tool_call_id"]
            tt = pending[tid]
            tool = m.get("name") or calls_of[tt][0]
            events.append(make.observation(tool, tid, content(m), *tool_result(tool, content(m))))
            answered[tt].add(tid)
    for tt, names in calls_of.items():
        if names and len(answered[tt]) == len(names) and not all(n == "finish" for n in names):
            scored.append(tt)
    return events, scored


def response_id(ev) -> str | None:
    """The LLM response an event belongs to (ActionEvents only)."""
    return getattr(ev, "llm_response_id", None)

"""SWE-agent records as steps: a 0.x ``trajectory`` entry, a 1.x assistant turn with its tool calls, and a live
run's ``StepOutput``.

Command lines are split into the interface command and its arguments; a 1.x run with function calling has its
steps from ``history``'s assistant turns, each paired with the ``trajectory`` entry that executed it.
docs/formats.md, "SWE-agent".
"""

from __future__ import annotations

import re
from typing import Any

from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import require
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Action, Step, make_step
from earlyeval.steps.calls import tool_calls

# SWE-agent 0.x default interface (config/commands/*.sh) and its forced exits
ACI_COMMANDS: frozenset[str] = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "create",
        "edit",
        "find_file",
        "search_file",
        "search_dir",
        "submit",
        "exit_cost",
        "exit_context",
        "exit_format",
        "exit_api",
        "exit_error",
    }
)

# SWE-agent 1.x tool bundles add these; live runs (integrations.swe_agent) parse command lines with both sets
SWE_AGENT_COMMANDS: frozenset[str] = ACI_COMMANDS | {
    "str_replace_editor",
    "exit",
    "exit_forfeit",
    "review_on_submit_m",
    "filemap",
    "view_image",
}

_HEAD = re.compile(r"(\S+)[ \t]*\n?(.*)", re.S)
_EXIT = re.compile(r"\b(exit_[a-z_]+)\b")
LIVE = "<live SWE-agent run>"


def action_from_command(command: str, commands: frozenset[str] = ACI_COMMANDS) -> Action:
    """One SWE-agent command line as an Action (interface command or bash)."""
    cmd = command.strip()
    m = _HEAD.match(cmd)
    if m and m.group(1) in commands:
        return Action(tool=m.group(1), text=m.group(2))
    return Action(tool="bash", text=cmd)


def parse_entries(
    entries: list, file: str, commands: frozenset[str] = ACI_COMMANDS
) -> list[dict[str, Any]]:
    """Validated ``trajectory`` entries as {action, thought, observation}."""
    out = []
    for i, s in enumerate(entries):
        where = f"trajectory[{i}]"
        action = require(s, "action", str, file, where)
        thought = s.get("thought")
        obs = s.get("observation")
        if thought is not None and not isinstance(thought, str):
            raise IngestError(
                file, f"{where}.thought", f"expected str, got {type(thought).__name__}"
            )
        if obs is not None and not isinstance(obs, str):
            raise IngestError(
                file, f"{where}.observation", f"expected str, got {type(obs).__name__}"
            )
        out.append(
            {
                "action": action_from_command(action, commands),
                "thought": (thought or "").strip(),
                "observation": obs or "",
            }
        )
    return out


def entry_steps(entries: list, file: str, commands: frozenset[str] = ACI_COMMANDS) -> list[Step]:
    """The steps of a run without function calling: one per ``trajectory`` entry."""
    return [
        make_step(i, [r["action"]], thought=r["thought"], observation=r["observation"])
        for i, r in enumerate(parse_entries(entries, file, commands))
    ]


def call_actions(message: dict[str, Any], file: str, where: str) -> list[Action]:
    """The Actions of one message's ``tool_calls`` (a history turn, or a live StepOutput's)."""
    return [c.action() for c in tool_calls(message, file, where)]


def _pair_turns(turns: list[tuple[int, Any]], entries: list, file: str) -> list[int]:
    """The ``trajectory`` entry of each assistant turn, paired by the action string from the end."""
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise IngestError(
                file, f"trajectory[{i}]", f"expected an object, got {type(e).__name__}"
            )
    paired: list[int] = []
    end = len(entries)
    for j, m in reversed(turns):
        action = m.get("action", "")
        if not isinstance(action, str):
            raise IngestError(
                file, f"history[{j}].action", f"expected str, got {type(action).__name__}"
            )
        i = end - 1
        while i >= 0 and entries[i].get("action") != action:
            i -= 1
        if i < 0:
            raise IngestError(
                file,
                f"history[{j}].action",
                "no trajectory entry before the next turn's holds this action",
            )
        paired.append(i)
        end = i
    paired.reverse()
    return paired


def steps_from_tool_calls(
    history: list, entries: list, info: dict[str, Any], file: str
) -> tuple[list[Step], int]:
    """Steps of a 1.x function-calling run (module doc) and the number of refused (re-asked) turns."""
    turns = [
        (j, m)
        for j, m in enumerate(history)
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    paired = _pair_turns(turns, entries, file)
    exit_m = _EXIT.search(str(info.get("exit_status") or ""))
    steps: list[Step] = []
    for k, ((j, m), i) in enumerate(zip(turns, paired)):
        acts = call_actions(m, file, f"history[{j}]")
        text = content_text(m.get("content")).strip()
        if not acts and k == len(turns) - 1 and exit_m:
            acts = [Action(tool=exit_m.group(1), text="")]  # the forced exit, as 0.x logs it
        obs = entries[i].get("observation")
        if obs is not None and not isinstance(obs, str):
            raise IngestError(
                file, f"trajectory[{i}].observation", f"expected str, got {type(obs).__name__}"
            )
        thought = m.get("thought")
        steps.append(
            make_step(
                len(steps),
                acts,
                thought=thought.strip() if isinstance(thought, str) else "",
                observation=obs or "",
                final_answer=text if not acts else None,
            )
        )
    return steps, len(entries) - len(paired)


def step_output_actions(step: Any) -> list[Action]:
    """The Actions of a live run's ``StepOutput``: its tool calls (function calling), read as a history turn's,
    else its command line parsed as a ``trajectory`` entry's."""
    acts = call_actions({"tool_calls": getattr(step, "tool_calls", None)}, LIVE, "step")
    if acts:
        return acts
    cmd = (getattr(step, "action", "") or "").strip()
    return [action_from_command(cmd, SWE_AGENT_COMMANDS)] if cmd else []

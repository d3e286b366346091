"""CodeR records as steps: one step per sub-agent turn (a SWE-agent ``trajectory`` entry), its sub-agent named
from the aligned ``history``, and a delegating ``plan`` turn's answer moved to where it arrived, so that a prefix
never sees how a plan ended.  docs/formats.md, "CodeR".
"""

from __future__ import annotations

from typing import Any

from earlyeval.core.errors import IngestError
from earlyeval.core.trajectory import Step, make_step
from earlyeval.steps.swe_agent import ACI_COMMANDS, parse_entries

CODER_COMMANDS: frozenset[str] = ACI_COMMANDS | {
    "plan",
    "succeed",
    "fail",
    "rover_search_file",
    "rover_search_class",
    "rover_search_method",
    "rover_search_code",
    "rover_search_code_in_file",
    "rover_search_extension",
    "stackoverflow_search",
    "similar_issue_search",
}


def step_roles(history: Any, entries: list, file: str) -> list[str]:
    """The sub-agent of each ``trajectory`` entry, from the aligned ``history``."""
    if not isinstance(history, list):
        raise IngestError(file, "history", f"expected list, got {type(history).__name__}")
    turns = [
        m
        for m in history
        if isinstance(m, dict) and m.get("role") == "assistant" and not m.get("is_demo")
    ]
    if len(turns) != len(entries):
        raise IngestError(
            file,
            "history",
            f"{len(turns)} assistant turns but trajectory has {len(entries)} steps: cannot name the sub-agents",
        )
    roles = []
    for i, (m, s) in enumerate(zip(turns, entries)):
        if m.get("action") != s.get("action"):
            raise IngestError(
                file,
                f"history[assistant {i}].action",
                "differs from trajectory's: the two lists are not aligned",
            )
        roles.append(str(m.get("agent") or "?"))
    return roles


def defer_delegated_observations(raw: list[dict[str, Any]], roles: list[str]) -> None:
    """Move the answer of each delegating top-level turn to when it arrived."""
    if not roles:
        return
    top = roles[0]
    for i in range(len(raw) - 1):
        if roles[i] != top or roles[i + 1] == top:
            continue  # not a delegation: the next turn is the same agent's
        nxt = next((j for j in range(i + 1, len(raw)) if roles[j] == top), None)
        target = (nxt - 1) if nxt is not None else len(raw) - 1
        obs = raw[i]["observation"]
        raw[i]["observation"] = ""
        if obs:
            before = raw[target]["observation"]
            raw[target]["observation"] = f"{before}\n{obs}" if before.strip() else obs


def coder_steps(entries: list, history: Any, file: str) -> tuple[list[Step], list[str]]:
    """(steps, the sub-agent of each) of a CodeR run's ``trajectory`` and ``history``."""
    raw = parse_entries(entries, file, CODER_COMMANDS)
    roles = step_roles(history, entries, file)
    defer_delegated_observations(raw, roles)
    steps = [
        make_step(i, [r["action"]], thought=r["thought"], observation=r["observation"])
        for i, r in enumerate(raw)
    ]
    return steps, roles

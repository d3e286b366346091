"""SWE-agent trajectories (``<instance_id>.traj``, plain or gzipped): 0.x, and 1.x with function calling.

One step per executed turn (0.x: a ``trajectory`` entry; 1.x: an assistant turn of ``history``, the turns the
live hook sees); usage is per instance only. Commands, refused turns and forced exits: docs/formats.md,
"SWE-agent".
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
from earlyeval.core.trajectory import Action, Step, Trajectory, make_step
from earlyeval.ingest.common import dig, run_trajectory
from earlyeval.ingest.sniff import Heads

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.traj*"
INLINE_LABELS = False


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


def task_id_from_name(path: Path) -> str:
    """``astropy__astropy-12907.traj.gz`` -> ``astropy__astropy-12907``."""
    name = strip_gz(path.name)
    while name.endswith((".json", ".traj")):
        name = name.rsplit(".", 1)[0]
    return name


def action_from_command(command: str, commands: frozenset[str] = ACI_COMMANDS) -> Action:
    """One SWE-agent command line as an Action (interface command or bash)."""
    cmd = command.strip()
    m = _HEAD.match(cmd)
    if m and m.group(1) in commands:
        return Action(tool=m.group(1), text=m.group(2))
    return Action(tool="bash", text=cmd)


def first_user_message(history: Any) -> str:
    """The task prompt: the first non-demonstration user message of ``history``."""
    if not isinstance(history, list):
        return ""
    for m in history:
        if isinstance(m, dict) and m.get("role") == "user" and not m.get("is_demo"):
            return content_text(m.get("content"))
    return ""


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


def instance_stats(info: dict[str, Any]) -> dict[str, Any]:
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    return {
        "exit_status": info.get("exit_status"),
        "instance_cost": stats.get("instance_cost"),
        "tokens_sent": stats.get("tokens_sent"),
        "tokens_received": stats.get("tokens_received"),
        "api_calls": stats.get("api_calls"),
    }


def uses_tool_calls(history: Any) -> bool:
    """SWE-agent 1.x with function calling: some assistant message of ``history`` made a tool call."""
    return isinstance(history, list) and any(
        isinstance(m, dict) and m.get("role") == "assistant" and m.get("tool_calls")
        for m in history
    )


def _turn_actions(m: dict[str, Any], file: str, where: str) -> list[Action]:
    calls = m.get("tool_calls") or []
    if not isinstance(calls, list):
        raise IngestError(file, f"{where}.tool_calls", f"expected list, got {type(calls).__name__}")
    acts = []
    for c, tc in enumerate(calls):
        fn = tc.get("function") if isinstance(tc, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(name, str) or not name:
            raise IngestError(
                file, f"{where}.tool_calls[{c}].function.name", "missing or not a string"
            )
        acts.append(Action(tool=name, text=tool_call_text(name, fn.get("arguments"))))
    return acts


def steps_from_tool_calls(
    history: list, entries: list, info: dict[str, Any], file: str
) -> tuple[list[Step], int]:
    """Steps of a 1.x function-calling run (module doc) and the number of refused (re-asked) turns."""
    turns = [
        (j, m)
        for j, m in enumerate(history)
        if isinstance(m, dict) and m.get("role") == "assistant"
    ]
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise IngestError(
                file, f"trajectory[{i}]", f"expected an object, got {type(e).__name__}"
            )
    # pair each turn with its trajectory entry by the action string, from the end
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
    exit_m = _EXIT.search(str(info.get("exit_status") or ""))
    steps: list[Step] = []
    for k, ((j, m), i) in enumerate(zip(turns, paired)):
        acts = _turn_actions(m, file, f"history[{j}]")
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


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    entries = require(d, "trajectory", list, f)
    if not entries:
        raise IngestError(f, "trajectory", "empty list: no agent steps")
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    task_id = task_id_from_name(path)
    history = d.get("history")
    if uses_tool_calls(history):
        steps, requeried = steps_from_tool_calls(history, entries, info, f)
        yield run_trajectory(
            spec,
            bench,
            f,
            task_id,
            steps,
            prompt=first_user_message(history),
            **instance_stats(info),
            swe_agent_version=info.get("swe_agent_version"),
            requeried_turns=requeried,
        )
        return
    v1 = str(info.get("swe_agent_version") or "").startswith("1.")
    raw = parse_entries(entries, f, SWE_AGENT_COMMANDS if v1 else ACI_COMMANDS)
    steps = [
        make_step(i, [r["action"]], thought=r["thought"], observation=r["observation"])
        for i, r in enumerate(raw)
    ]
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=first_user_message(history),
        native_model=replay_model(d.get("replay_config")),
        **instance_stats(info),
    )


def replay_model(replay_config: Any) -> str | None:
    """The model a SWE-agent 1.x run used, as its ``replay_config`` (a JSON string) names it; 0.x files have
    none (and no timestamp either: a 0.x run's date is not in its file)."""
    if isinstance(replay_config, str):
        try:
            replay_config = json.loads(replay_config)
        except ValueError:
            return None
    name = dig(replay_config, "agent", "model", "name")
    return name if isinstance(name, str) and name else None


def history_agents(d: Any) -> set[str]:
    """The ``agent`` tags of a ``.traj`` file's history: one ("primary", "main") in SWE-agent, the sub-agents
    (Manager, Programmer, ...) in CodeR, which is otherwise the same layout."""
    hist = d.get("history") if isinstance(d, dict) else None
    return (
        {str(m["agent"]) for m in hist if isinstance(m, dict) and m.get("agent")}
        if isinstance(hist, list)
        else set()
    )


# the sub-agents of CodeR's history (every one of its 261 real runs starts with the Manager)
CODER_ROLES = frozenset({"Manager", "Reproducer", "Programmer", "Debugger", "Tester"})


def looks_native(path: Path) -> bool:
    """For ``--format auto`` (a CodeR file parses as SWE-agent too): one agent speaks in the history, not a
    CodeR sub-agent (an empty history tells nothing: the folder's other files decide, ``ingest.detect``)."""
    agents = history_agents(load_json(path))
    return len(agents) == 1 and not agents & CODER_ROLES


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): a ``trajectory`` list of action/observation steps (a CodeR
    ``.traj`` too: ``looks_native`` tells the two apart)."""
    h = heads.of(path)
    if h.root != "{":
        return False
    if "trajectory" in h.keys:
        return h.mentions(
            r'"trajectory"\s*:\s*\[\s*(\]|\{\s*"(action|observation|response|thought)")'
        )
    # ``trajectory`` past the prefix: a history of tagged messages first (key order is the writer's)
    layout = {"environment", "history", "info", "replay_config"}
    return "history" in h.keys and set(h.keys) <= layout and h.mentions(r'"agent"\s*:')

"""SWE-agent trajectories (``<instance_id>.traj``, plain or gzipped): 0.x, and 1.x with function calling.

One step per executed turn (0.x: a ``trajectory`` entry; 1.x: an assistant turn of ``history``, the turns the
live hook sees), read by ``earlyeval.steps.swe_agent``; usage is per instance only. Commands, refused turns and forced exits: docs/formats.md,
"SWE-agent".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import dig, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.swe_agent import (
    ACI_COMMANDS,
    SWE_AGENT_COMMANDS,
    entry_steps,
    steps_from_tool_calls,
)

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.traj*"
INLINE_LABELS = False


def task_id_from_name(path: Path) -> str:
    """``astropy__astropy-12907.traj.gz`` -> ``astropy__astropy-12907``."""
    name = strip_gz(path.name)
    while name.endswith((".json", ".traj")):
        name = name.rsplit(".", 1)[0]
    return name


def first_user_message(history: Any) -> str:
    """The task prompt: the first non-demonstration user message of ``history``."""
    if not isinstance(history, list):
        return ""
    for m in history:
        if isinstance(m, dict) and m.get("role") == "user" and not m.get("is_demo"):
            return content_text(m.get("content"))
    return ""


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
    steps = entry_steps(entries, f, SWE_AGENT_COMMANDS if v1 else ACI_COMMANDS)
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

"""SWE-agent 0.x trajectories (``<instance_id>.traj``, plain or gzipped).

Layout: ``{"environment", "trajectory": [{action, observation, response, state,
thought}], "history": [chat messages], "info": {exit_status, submission,
model_stats}}``.

One step = one entry of ``trajectory``: one assistant turn, the single command
it ran (``action``), its reasoning (``thought``) and what the environment
returned (``observation``).  ``trajectory`` already pairs each command with its
answer, so ``history`` is read only for the task prompt (its first non-demo
user message).  Turns the scaffold rejected for their format are not in
``trajectory`` (they show up only as ``model_stats.api_calls`` > steps).

Commands of SWE-agent's interface (``open``, ``goto``, ``edit``,
``search_dir``, ``submit``, ...) become an ``Action`` whose tool is the
command name and whose text is its arguments, so ``classify_action`` decides
the kind by tool name: an ``edit`` whose replacement text mentions pytest is
still an edit.  Anything else is a ``bash`` command.  ``exit_cost`` (and the
other ``exit_*`` pseudo-actions) is the scaffold ending the run at its cost
limit with autosubmission: a step of kind ``submit``.

Usage: the format has only instance totals (``info.model_stats``: cost, tokens
sent/received, API calls); they go to ``meta`` and every per-step token count
and cost is ``None``.  SWE-agent marks no per-step error, so ``error`` is None.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Action, Step, Trajectory, make_step
from earlyeval.ingest.common import run_trajectory

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.traj*"
INLINE_LABELS = False

FORMAT = "swe-agent-traj"

# SWE-agent 0.x default interface (config/commands/*.sh) and its forced exits
ACI_COMMANDS: frozenset[str] = frozenset(
    {
        "open", "goto", "scroll_up", "scroll_down", "create", "edit", "find_file",
        "search_file", "search_dir", "submit", "exit_cost", "exit_context",
        "exit_format", "exit_api", "exit_error",
    }
)

# SWE-agent 1.x tool bundles add these; live runs (integrations.swe_agent) parse command lines with both sets
SWE_AGENT_COMMANDS: frozenset[str] = ACI_COMMANDS | {
    "str_replace_editor", "exit", "exit_forfeit", "review_on_submit_m", "filemap", "view_image",
}

_HEAD = re.compile(r"(\S+)[ \t]*\n?(.*)", re.S)


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


def parse_entries(entries: list, file: str, commands: frozenset[str] = ACI_COMMANDS) -> list[dict[str, Any]]:
    """Validated ``trajectory`` entries as {action, thought, observation}."""
    out = []
    for i, s in enumerate(entries):
        where = f"trajectory[{i}]"
        action = require(s, "action", str, file, where)
        thought = s.get("thought")
        obs = s.get("observation")
        if thought is not None and not isinstance(thought, str):
            raise IngestError(file, f"{where}.thought", f"expected str, got {type(thought).__name__}")
        if obs is not None and not isinstance(obs, str):
            raise IngestError(file, f"{where}.observation", f"expected str, got {type(obs).__name__}")
        out.append({"action": action_from_command(action, commands), "thought": (thought or "").strip(), "observation": obs or ""})
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


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    entries = require(d, "trajectory", list, f)
    if not entries:
        raise IngestError(f, "trajectory", "empty list: no agent steps")
    raw = parse_entries(entries, f)
    steps: list[Step] = [
        make_step(i, [r["action"]], thought=r["thought"], observation=r["observation"]) for i, r in enumerate(raw)
    ]
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    task_id = task_id_from_name(path)
    yield run_trajectory(
        spec, bench, f, task_id, steps,
        prompt=first_user_message(d.get("history")),
        **instance_stats(info),
    )

"""CodeR trajectories (``trajs/<instance_id>.traj``, plain or gzipped).

SWE-agent-like files of a Manager and its sub-agents: one step per sub-agent turn, and a ``plan`` step's
observation is moved to where it arrived, so that a prefix never sees how a plan ended. Why, and the
commands: docs/formats.md, "CodeR".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require
from earlyeval.core.trajectory import Trajectory, make_step
from earlyeval.ingest.common import run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.ingest.swe_agent import (
    ACI_COMMANDS,
    CODER_ROLES,
    first_user_message,
    history_agents,
    instance_stats,
    parse_entries,
    task_id_from_name,
)
from earlyeval.ingest.swe_agent import (
    sniff as swe_sniff,
)

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.traj*"
INLINE_LABELS = False


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


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    entries = require(d, "trajectory", list, f)
    if not entries:
        raise IngestError(f, "trajectory", "empty list: no agent steps")
    raw = parse_entries(entries, f, CODER_COMMANDS)
    roles = step_roles(d.get("history"), entries, f)
    defer_delegated_observations(raw, roles)
    steps = [
        make_step(i, [r["action"]], thought=r["thought"], observation=r["observation"])
        for i, r in enumerate(raw)
    ]
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    task_id = task_id_from_name(path)
    seq: list[str] = []
    for r in roles:
        if not seq or seq[-1] != r:
            seq.append(r)
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=first_user_message(d.get("history")),
        step_roles=roles,
        role_sequence=seq,
        **instance_stats(info),
    )


def looks_native(path: Path) -> bool:
    """For ``--format auto`` (a SWE-agent file parses as CodeR too): several sub-agents speak in the history
    (every one of the 261 real CodeR runs has 2 to 5, starting with the Manager)."""
    agents = history_agents(load_json(path))
    return len(agents) >= 2 or bool(agents & CODER_ROLES)


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto``: SWE-agent's layout (``swe_agent.sniff``); ``looks_native`` tells the two apart."""
    return swe_sniff(path, heads, fmt)

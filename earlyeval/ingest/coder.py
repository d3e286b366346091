"""CodeR trajectories (``trajs/<instance_id>.traj``, plain or gzipped).

SWE-agent-like files of a Manager and its sub-agents: one step per sub-agent turn, and a ``plan`` step's
observation is moved to where it arrived, so that a prefix never sees how a plan ended
(``earlyeval.steps.coder``). Why, and the commands: docs/formats.md, "CodeR".
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.ingest.swe_agent import (
    CODER_ROLES,
    first_user_message,
    history_agents,
    instance_stats,
    task_id_from_name,
)
from earlyeval.ingest.swe_agent import (
    sniff as swe_sniff,
)
from earlyeval.steps.coder import coder_steps

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.traj*"
INLINE_LABELS = False


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    entries = require(d, "trajectory", list, f)
    if not entries:
        raise IngestError(f, "trajectory", "empty list: no agent steps")
    steps, roles = coder_steps(entries, d.get("history"), f)
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

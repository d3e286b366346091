"""mini-swe-agent v1 trajectories (``trajectory_format: mini-swe-agent-1``).

The file's messages become steps in ``earlyeval.steps.mini_swe_agent`` (one step per assistant message and the
message that answers it, per-call usage, live-swe-agent's reflection prompt cut): docs/formats.md,
"mini-swe-agent v1".
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import dig, first_day, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.mini_swe_agent import steps_from_messages

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.traj.json*"
INLINE_LABELS = False


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    messages = require(d, "messages", list, f)
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    task_id = d.get("instance_id")
    if not isinstance(task_id, str) or not task_id:
        task_id = strip_gz(path.name).split(".traj")[0].split(".json")[0]
    steps, prompt = steps_from_messages(messages, f)
    stats = info.get("model_stats") or {}
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=prompt,
        # who and when, as the file records them (``earlyeval score``: training overlap, the prior's date)
        native_model=dig(info, "config", "model", "model_name"),
        run_date=first_day(
            dig(m, "extra", "response", "created") for m in messages if isinstance(m, dict)
        ),
        exit_status=info.get("exit_status"),
        instance_cost=stats.get("instance_cost"),
        api_calls=stats.get("api_calls"),
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): mini-swe-agent saves ``info`` first (its exit status and
    submission), then ``messages``; ``trajectory_format`` names it when the prefix reaches it."""
    h = heads.of(path)
    others = (
        "trajectory",
        "transitions",
        "steps",
        "nodes",
        "simulations",
        "pass",
        "response",
        "kwargs",
    )
    if h.root != "{" or any(k in h.keys for k in others):
        return False
    if "trajectory_format" in h.keys and h.mentions(r'"trajectory_format"\s*:\s*"mini-swe-agent'):
        return True
    info_first = h.mentions(
        r'^\s*\{\s*"info"\s*:\s*\{\s*"(exit_status|submission|model_stats|config|mini_version)"'
    )
    return "messages" in h.keys or (h.keys[:1] == ("info",) and info_first)

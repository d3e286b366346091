"""Toolathlon trajectories (``trajs/<model>_<task>.json``, one run of one task per file).

OpenAI-style messages: one step per assistant message with its MCP tool results (``earlyeval.steps.toolathlon``);
the label is ``pass`` (the evaluator's ``failure`` log is never read). Details: docs/formats.md, "Toolathlon".
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.toolathlon import dialogue_steps

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.json*"
INLINE_LABELS = True


def task_id_of(path: Path, spec: RunSpec) -> str:
    """``<model>_<task>.json[.gz]`` -> ``<task>``; model names hold no underscore."""
    stem = strip_gz(path.name)
    if stem.endswith(".json"):
        stem = stem[: -len(".json")]
    if spec.model and stem.startswith(spec.model + "_"):
        return stem[len(spec.model) + 1 :]
    return stem.split("_", 1)[1] if "_" in stem else stem


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise IngestError(f, "<root>", f"expected an object, got {type(d).__name__}")
    if "pass" not in d:
        raise IngestError(f, "pass", "missing: no label")
    p = d["pass"]
    if p is not None and not isinstance(p, bool):
        raise IngestError(f, "pass", f"expected true, false or null, got {type(p).__name__}")
    outcome = None if p is None else int(p)
    messages = require(d, "messages", list, f)
    if not messages:
        raise IngestError(f, "messages", "empty dialogue")
    steps, prompt = dialogue_steps(messages, f)
    if not steps:
        raise IngestError(f, "messages", "no assistant message: the agent never acted")
    task_id = task_id_of(path, spec)
    # ``failure`` is deliberately absent: it is the evaluator's verdict log
    yield run_trajectory(
        spec, bench, f, task_id, steps, prompt=prompt, outcome=outcome, graded=p is not None
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): the evaluator's ``pass`` beside the ``messages``."""
    h = heads.of(path)
    return h.root == "{" and h.has("pass", "messages")

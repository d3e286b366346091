"""OpenHands conversation event streams (V0 events, e.g. a GUI conversation export).

One step per agent action event that acts, with the observations it caused (``earlyeval.steps.openhands_events``);
a message to the user is a step without action, a human's later message is observation. What is a step and what
is bookkeeping: docs/formats.md, "OpenHands V0 event streams".
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, strip_gz
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import first_day, glob_paths, keep_warnings, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.openhands_events import EventFold, fold_steps

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.json*"
INLINE_LABELS = False


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    out = []
    for p in sorted(glob_paths(run_dir, spec.glob)):
        if not p.is_file():
            continue
        name = strip_gz(p.name)
        inner = p.relative_to(run_dir).parts[:-1]
        if (
            not name.endswith(".json")
            or name == "metadata.json"
            or "events" in inner
            or "event_cache" in inner
        ):
            continue
        out.append(p)
    return out


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    events = load_json(path)
    if not isinstance(events, list):
        raise IngestError(f, "<root>", f"expected a list of events, got {type(events).__name__}")
    fold = EventFold(f)
    for i, e in enumerate(events):
        fold.event(i, e)
    if not fold.raw:
        raise IngestError(f, "<events>", "no agent action, message or error event: no agent steps")
    steps = fold_steps(fold)
    task_id = strip_gz(path.name).removesuffix(".json")
    t = run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=fold.prompt,
        llm_models=fold.llm_models,
        run_date=first_day(e.get("timestamp") for e in events if isinstance(e, dict)),
        instance_cost=fold.cost,
        user_messages=fold.user_messages,
        condensations=fold.condensations,
    )
    yield keep_warnings(t, fold.warnings)  # read, but not as written: said, and kept with the run


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): a list of events, the first with ``id``, ``source`` and an
    ``action`` or ``observation``."""
    h = heads.of(path)
    return h.root == "[" and h.has("source") and ("action" in h.keys or "observation" in h.keys)

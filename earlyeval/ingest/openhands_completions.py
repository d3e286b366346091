"""OpenHands ``llm_completions`` logs (CodeActAgent, native tool calling).

The last call's file holds the run: one step per assistant message with its tool calls and their answers
(``earlyeval.steps.openhands_completions``); per-step usage is unknown (only the last call's is in the file).
Details: docs/formats.md, "OpenHands llm_completions".
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import day_of, glob_paths, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.openhands_completions import steps_from_chat

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/llm_completions/*/*.json*"
INLINE_LABELS = False

log = logging.getLogger(__name__)

_TS = re.compile(r"-(\d+(?:\.\d+)?)\.json(?:\.gz)?$")


def _call_ts(p: Path) -> float:
    m = _TS.search(p.name)
    return float(m.group(1)) if m else float("-inf")


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    """The last call file of each instance folder."""
    groups: dict[Path, list[Path]] = defaultdict(list)
    for p in glob_paths(run_dir, spec.glob):
        if p.is_file():
            groups[p.parent].append(p)
    chosen = []
    earlier = 0
    for folder in sorted(groups):
        files = sorted(groups[folder], key=lambda p: (_call_ts(p), p.name))
        chosen.append(files[-1])
        earlier += len(files) - 1
    if earlier:
        log.warning(
            "%s: kept the last call file of %d instances, ignored %d earlier call files (prefixes of the last)",
            spec.name,
            len(chosen),
            earlier,
        )
    return chosen


def _usage(resp: dict[str, Any]) -> dict[str, Any] | None:
    u = resp.get("usage")
    if not isinstance(u, dict):
        return None
    det = u.get("prompt_tokens_details") if isinstance(u.get("prompt_tokens_details"), dict) else {}
    return {
        "input_tokens": u.get("prompt_tokens"),
        "output_tokens": u.get("completion_tokens"),
        "cached_tokens": det.get("cached_tokens"),
    }


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    messages = list(require(d, "messages", list, f))
    resp = d.get("response")
    final = None
    if resp is not None:
        choices = require(resp, "choices", list, f, "response")
        if choices:
            final = require(choices[0], "message", dict, f, "response.choices[0]")
            final = {**final, "role": final.get("role") or "assistant"}
    steps, prompt, nudges = steps_from_chat(messages + ([final] if final else []), f)
    if not steps:
        raise IngestError(f, "messages", "no assistant message: no agent steps")
    task_id = path.parent.name
    earlier = sum(
        1 for p in path.parent.iterdir() if p.is_file() and p != path and _TS.search(p.name)
    )
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=prompt,
        llm_model=resp.get("model") if isinstance(resp, dict) else None,
        run_date=day_of(d.get("timestamp")),  # the call's own time (unix seconds): the run's day
        last_call_cost=d.get("cost") if isinstance(d.get("cost"), (int, float)) else None,
        last_call_usage=_usage(resp) if isinstance(resp, dict) else None,
        auto_continue_prompts=nudges,
        earlier_call_files=earlier,
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): one LLM call as logged, ``messages`` first (then ``response``,
    ``args``, ``kwargs``, ``timestamp``, ``cost``: often past the prefix)."""
    h = heads.of(path)
    return h.root == "{" and h.keys[:1] == ("messages",) and "pass" not in h.keys

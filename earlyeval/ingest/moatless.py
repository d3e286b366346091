"""Moatless Tools trajectories (``trajs/<instance_id>.json``, plain or gzipped), two layouts.

The ``moatless-transitions`` and ``moatless-steps`` layouts: one step per LLM call (``earlyeval.steps.moatless``),
its tool named after what the call did so that ``classify_action`` gives the kind. Both layouts' mapping: docs/formats.md, "Moatless
Tools".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import day_of, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.moatless import opt_cost, steps_from_steps, steps_from_transitions

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/trajs/*.json*"
INLINE_LABELS = False

FORMATS = ("moatless-transitions", "moatless-steps")


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise IngestError(f, "<root>", f"expected an object, got {type(d).__name__}")
    if spec.format == "moatless-steps":
        raw = require(d, "steps", list, f)
        if not raw:
            raise IngestError(f, "steps", "empty list: no agent steps")
        steps = steps_from_steps(raw, f)
        inp = d.get("input") if isinstance(d.get("input"), dict) else {}
        prompt = inp.get("problem_statement") or ""
    elif spec.format == "moatless-transitions":
        raw = require(d, "transitions", list, f)
        steps = steps_from_transitions(raw, f)
        if not steps:
            raise IngestError(f, "transitions", "no transition holds an action: no agent steps")
        prompt = d.get("initial_message") if isinstance(d.get("initial_message"), str) else ""
    else:
        raise IngestError(
            f,
            "format",
            f"moatless ingestor got format '{spec.format}' (known: {', '.join(FORMATS)})",
        )
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    task_id = (
        info.get("instance_id")
        if isinstance(info.get("instance_id"), str)
        else strip_gz(path.name).removesuffix(".json")
    )
    err = info.get("error")
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=prompt,
        total_cost=opt_cost(info.get("total_cost")),
        duration_s=opt_cost(info.get("duration")),
        status=info.get("status"),
        error=err.strip().splitlines()[-1][:300] if isinstance(err, str) and err.strip() else None,
        evaluation_name=info.get("evaluation_name"),
        native_model=_state_model(d.get("transitions")),
        run_date=run_day(info),
    )


_TRACE_TS = re.compile(r"_(\d{8})-\d{6}$")


def run_day(info: dict[str, Any]) -> str | None:
    """The run's day: the timestamp ending ``info.trace_id`` (``..._20240609-123702``), else the date an
    ``evaluation_name`` starts with (``20240616_moatless_...``, SWE-bench's naming); None without either."""
    m = _TRACE_TS.search(str(info.get("trace_id") or ""))
    return day_of(m.group(1)) if m else day_of(info.get("evaluation_name"))


def _state_model(transitions: Any) -> str | None:
    """The model the first transition's state names (``transitions[].state.model``), if any."""
    for tr in transitions if isinstance(transitions, list) else []:
        m = (
            tr.get("state", {}).get("model")
            if isinstance(tr, dict) and isinstance(tr.get("state"), dict)
            else None
        )
        if isinstance(m, str) and m:
            return m
    return None


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): the format's own list (``transitions`` or ``steps``) at the top."""
    h = heads.of(path)
    if h.root != "{" or "schema_version" in h.keys:  # an ATIF trajectory has ``steps`` too
        return False
    return (
        "transitions" in h.keys
        if fmt == "moatless-transitions"
        else ("steps" in h.keys and "transitions" not in h.keys)
    )

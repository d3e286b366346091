"""OpenHands Software Agent SDK (V1) conversations as the SDK persists them: ``base_state.json`` + ``events/``.

Plain JSON, no SDK needed: one step per LLM response, grouped by ``earlyeval.steps.openhands_conversation``'s
``StepFolder``, the live callback's own, so an offline read gives the steps the callback scored. Details:
docs/formats.md, "OpenHands SDK (V1) conversations".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator, Mapping

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json
from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.ingest.common import glob_paths, keep_warnings, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.openhands_conversation import StepFolder, response_usage

DEFAULT_GLOB = "**/base_state.json"
BASE_STATE = "base_state.json"
# the SDK's EVENT_NAME_RE
EVENT_FILE = re.compile(r"^event-(?P<idx>\d{5,})-(?P<id>[0-9a-fA-F\-]{8,})\.json$")


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    """The conversation folders: every folder with a ``base_state.json`` matching the run's glob."""
    return sorted(
        {
            p.parent
            for p in glob_paths(run_dir, spec.glob or DEFAULT_GLOB)
            if p.is_file() and p.name == BASE_STATE
        }
    )


def read_events(conv: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The conversation's events in their order (the index in the file name), each with its file; a bad file
    names itself."""
    d = conv / "events"
    if not d.is_dir():
        raise IngestError(str(d), "events", "missing: no events folder next to base_state.json")
    files, strays = [], []
    for p in d.iterdir():
        m = EVENT_FILE.match(p.name)
        if m:
            files.append((int(m.group("idx")), p))
        elif p.name.startswith("event-"):
            strays.append(p)
    if strays:  # a gzipped, renamed or partial event: read around it, the steps would shift and the last one go
        raise IngestError(
            str(sorted(strays)[0]),
            "events",
            "not an event file name the SDK writes "
            "(event-<index>-<id>.json); the conversation's events would be read out of order or short",
        )
    if not files:
        raise IngestError(str(d), "events", "no event-<index>-<id>.json file")
    files.sort()
    check_event_sequence(d, [i for i, _ in files])
    out = []
    for _, p in files:
        ev = load_json(p)
        if not isinstance(ev, dict) or not isinstance(ev.get("kind"), str):
            raise IngestError(str(p), "kind", "not an SDK event (an object with a string 'kind')")
        out.append((p, ev))
    return out


def check_event_sequence(d: Path, idx: list[int]) -> None:
    """The SDK appends events 0, 1, 2, ...: a repeated or a missing index is a damaged log, refused by name."""
    dup = next((a for a, b in zip(idx, idx[1:]) if a == b), None)
    if dup is not None:
        raise IngestError(
            str(d),
            "events",
            f"two event files of index {dup}: which one the conversation had is unknown",
        )
    gap = 0 if idx[0] != 0 else next((a + 1 for a, b in zip(idx, idx[1:]) if b > a + 1), None)
    if gap is not None:
        raise IngestError(
            str(d),
            "events",
            f"event {gap} is missing (the indices run {idx[0]}..{idx[-1]} with a gap): "
            "a step would be lost or merged without a word",
        )


def _task_id(conv: Path, state: Mapping[str, Any], spec: RunSpec) -> str:
    tags = state.get("tags") if isinstance(state.get("tags"), dict) else {}
    for k in ("instance_id", "task_id"):
        if isinstance(tags.get(k), str) and tags[k]:
            return tags[k]
    try:
        parts = list(conv.relative_to(Path(spec.folder)).parts)
    except ValueError:
        parts = [conv.name]
    hexid = str(state.get("id") or "").replace("-", "")
    if parts and hexid and parts[-1].replace("-", "") == hexid:
        parts = parts[:-1]
    return "/".join(parts) or conv.name


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    conv = Path(path)
    bs = conv / BASE_STATE
    state = load_json(bs)
    if not isinstance(state, dict):
        raise IngestError(str(bs), "<root>", f"expected an object, got {type(state).__name__}")
    stats = state.get("stats") if state.get("stats") is not None else {}
    metrics = stats.get("usage_to_metrics", {}) if isinstance(stats, dict) else None
    if not isinstance(metrics, dict) or not all(isinstance(m, dict) for m in metrics.values()):
        raise IngestError(
            str(bs), "stats.usage_to_metrics", "expected an object of per-LLM metrics"
        )
    folder = StepFolder(lambda ids: response_usage(metrics, ids), source=str(conv / "events"))
    events = read_events(conv)
    steps: list[Step] = []
    for p, ev in events:
        steps += folder.feed(ev, str(p))
    steps += folder.final()
    if not steps:
        raise IngestError(
            str(conv / "events"), "<events>", "no agent action, error or message: no agent steps"
        )
    llm = state.get("agent", {}).get("llm", {}) if isinstance(state.get("agent"), dict) else {}
    model = (
        llm.get("model") if isinstance(llm, dict) and isinstance(llm.get("model"), str) else None
    )
    t = run_trajectory(
        spec,
        bench,
        bs,
        _task_id(conv, state, spec),
        steps,
        prompt=folder.prompt,
        conversation_id=state.get("id"),
        execution_status=state.get("execution_status"),
        llm_model=model,
    )
    stamp = next(
        (
            e["timestamp"]
            for _, e in events
            if isinstance(e.get("timestamp"), str) and len(e["timestamp"]) >= 10
        ),
        None,
    )
    if stamp and stamp[4] == "-" and stamp[7] == "-":
        t.meta["date"] = stamp[:10]
    if not spec.model and model:
        t.meta["model"] = model
    yield keep_warnings(t, folder.warnings)  # read, but not as written: said, and kept with the run


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): a conversation folder, ``base_state.json`` an object beside ``events/``."""
    return path.is_dir() and (path / "events").is_dir() and heads.of(path / BASE_STATE).root == "{"


__all__ = ["DEFAULT_GLOB", "discover", "parse", "read_events", "sniff"]

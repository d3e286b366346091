"""OpenHands Software Agent SDK (V1) conversations as the SDK persists them: ``base_state.json`` + ``events/``.

Plain JSON, no SDK needed: one step per LLM response, grouped by ``StepFolder``, the live callback's own, so
an offline read gives the steps the callback scored. Details: docs/formats.md, "OpenHands SDK (V1)
conversations".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step, Trajectory, call_action, make_step
from earlyeval.ingest.chat import opt_float, opt_int
from earlyeval.ingest.common import glob_paths, run_trajectory
from earlyeval.ingest.sniff import Heads

DEFAULT_GLOB = "**/base_state.json"
BASE_STATE = "base_state.json"
# the SDK's EVENT_NAME_RE
EVENT_FILE = re.compile(r"^event-(?P<idx>\d{5,})-(?P<id>[0-9a-fA-F\-]{8,})\.json$")
OBSERVATION_EVENTS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
FINISH_TOOLS = frozenset({"finish"})
Usage = Callable[[list[str]], Mapping[str, Any]]


def get(obj: Any, key: str, default: Any = None) -> Any:
    """A field of an SDK object or of its JSON form."""
    if isinstance(obj, Mapping):
        return obj.get(key, default)
    return getattr(obj, key, default)


def event_kinds(ev: Any) -> set[str]:
    """An event's class names: the JSON ``kind``, or the object's class and its bases."""
    if isinstance(ev, Mapping):
        return {str(ev.get("kind"))}
    return {c.__name__ for c in type(ev).__mro__}


def call_of(ev: Any) -> tuple[str, Any]:
    """One ``ActionEvent`` as a raw tool call ``(tool, arguments)``: the model's arguments, else the action's fields."""
    args = get(get(ev, "tool_call"), "arguments")
    action = get(ev, "action")
    if args is None and action is not None:
        args = (
            {k: v for k, v in action.items() if k != "kind"}
            if isinstance(action, Mapping)
            else action.model_dump(exclude={"kind"})
        )
    return str(get(ev, "tool_name", "") or ""), args


def observation_text(content: Any) -> str:
    """An observation's text: its text items, concatenated (the SDK's ``Observation.text``)."""
    if isinstance(content, str):
        return content
    return "".join(
        str(get(c, "text"))
        for c in content or ()
        if get(c, "type") == "text" and get(c, "text") is not None
    )


def observation_of(ev: Any) -> tuple[str, bool | None]:
    """(text, error) of one observation event."""
    kinds = event_kinds(ev)
    if "AgentErrorEvent" in kinds:
        return str(get(ev, "error", "")), True
    if "UserRejectObservation" in kinds:
        return f"Action rejected: {get(ev, 'rejection_reason', '')}", None
    obs = get(ev, "observation")
    text = observation_text(get(obs, "content"))
    code = get(obs, "exit_code")
    if isinstance(code, int) and not isinstance(code, bool):
        return text, code != 0
    is_error = get(obs, "is_error")
    return text, (bool(is_error) if is_error is not None else None)


def response_usage(usage_to_metrics: Any, response_ids: Iterable[str]) -> dict[str, Any]:
    """Usage of the LLM responses ``response_ids`` from ``ConversationStats.usage_to_metrics`` (objects or JSON).

    Tokens: the per-call ``token_usages`` records with those ``response_id`` s, summed over the LLMs; unknown
    (None) when none is recorded (a model that reports no usage, the SDK's ``TestLLM``).  Cost: the SDK
    records costs without a response id and only when positive, so a response's cost is known only for an
    LLM whose ``costs`` pair one to one with its ``response_latencies`` (every call cost something)."""
    ids = {str(r) for r in response_ids if r}
    if not ids or not isinstance(usage_to_metrics, Mapping):
        return {}
    tok = [0, 0, 0]
    found = cost_seen = False
    cost, cost_ok = 0.0, True
    for m in usage_to_metrics.values():
        for u in get(m, "token_usages") or ():
            if str(get(u, "response_id", "")) in ids:
                found = True
                for i, k in enumerate(("prompt_tokens", "completion_tokens", "cache_read_tokens")):
                    tok[i] += opt_int(get(u, k)) or 0
        lat = [str(get(x, "response_id", "")) for x in get(m, "response_latencies") or ()]
        mine = [i for i, r in enumerate(lat) if r in ids]
        if mine:
            cost_seen = True
            costs = list(get(m, "costs") or ())
            if len(costs) == len(lat):
                cost += sum(opt_float(get(costs[i], "cost")) or 0.0 for i in mine)
            else:
                cost_ok = False
    out: dict[str, Any] = {}
    if found:
        out.update(input_tokens=tok[0], output_tokens=tok[1], cached_tokens=tok[2])
    if found and cost_seen and cost_ok:
        out["cost_usd"] = cost
    return out


class StepFolder:
    """OpenHands SDK events in, Steps out: the one step definition of the live callback and of this reader.

    ``feed(event)`` returns the steps the event completes (none or one); ``usage(response_ids)`` gives a
    step's usage when it completes.  ``final()`` (offline, after the last event) returns the last
    step a finished conversation has that the live callback never scores (module doc)."""

    def __init__(self, usage: Usage | None = None):
        self.usage = usage or (lambda ids: {})
        self.prompt = ""
        self.n_steps = 0
        self.pending: dict[
            str, dict[str, Any]
        ] = {}  # llm_response_id -> {"actions": [...], "obs": {call_id: ev}}
        self._last: Any = None  # the last finish-only group, or the last agent message

    def feed(self, ev: Any) -> list[Step]:
        kinds = event_kinds(ev)
        if "MessageEvent" in kinds:
            if get(ev, "source") == "user" and not self.prompt:
                self.prompt = content_text(get(get(ev, "llm_message"), "content"))
            elif get(ev, "source") == "agent":
                self._last = ("message", ev)
            return []
        if "ActionEvent" in kinds:
            group = self.pending.setdefault(
                str(get(ev, "llm_response_id")), {"actions": [], "obs": {}}
            )
            group["actions"].append(ev)
            self._last = None
            return []
        if not kinds & OBSERVATION_EVENTS:
            return []
        call_id = get(ev, "tool_call_id")
        for rid, group in self.pending.items():
            if any(get(a, "tool_call_id") == call_id for a in group["actions"]):
                group["obs"][call_id] = ev
                if len(group["obs"]) < len(group["actions"]):
                    return []
                del self.pending[rid]
                if all(get(a, "tool_name", "") in FINISH_TOOLS for a in group["actions"]):
                    self._last = ("group", (rid, group))
                    return []  # the agent finished; nothing left to stop
                return [self._step(rid, group)]
        if "AgentErrorEvent" in kinds:  # a tool call the agent could not even parse
            text, _ = observation_of(ev)
            return [self._emit([], observation=text, error=True)]
        return []

    def final(self) -> list[Step]:
        """After the last event: an unanswered response (with what answered it), else the finish or agent message."""
        if self.pending:
            return [self._step(rid, g) for rid, g in self.pending.items()]
        if self._last is None:
            return []
        what, x = self._last
        if what == "group":
            return [self._step(*x)]
        text = content_text(get(get(x, "llm_message"), "content"))
        return [self._emit([], final_answer=text, usage=self.usage([get(x, "llm_response_id")]))]

    def _step(self, rid: str, group: dict[str, Any]) -> Step:
        actions = group["actions"]
        texts, errors = [], []
        for a in actions:
            ev = group["obs"].get(get(a, "tool_call_id"))
            if ev is not None:
                t, err = observation_of(ev)
                texts.append(t)
                errors.append(err)
        known = [e for e in errors if e is not None]
        thought = "\n".join(
            t for t in (content_text(get(a, "thought")) for a in actions) if t
        ).strip()
        return self._emit(
            [call_of(a) for a in actions],
            thought=thought,
            observation="\n".join(texts).strip(),
            error=any(known) if known else None,
            usage=self.usage([rid]),
        )

    def _emit(
        self,
        calls: list[tuple[str, Any]],
        *,
        thought: str = "",
        observation: str = "",
        error: bool | None = None,
        final_answer: str | None = None,
        usage: Mapping[str, Any] | None = None,
    ) -> Step:
        u = dict(usage or {})
        step = make_step(
            self.n_steps,
            [call_action(t, a) for t, a in calls],
            thought=thought,
            observation=observation,
            error=error,
            final_answer=final_answer,
            input_tokens=u.get("input_tokens"),
            output_tokens=u.get("output_tokens"),
            cached_tokens=u.get("cached_tokens"),
            cost_usd=u.get("cost_usd"),
        )
        self.n_steps += 1
        return step


# ------------------------------------------------------------------ reader


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    """The conversation folders: every folder with a ``base_state.json`` matching the run's glob."""
    return sorted(
        {
            p.parent
            for p in glob_paths(run_dir, spec.glob or DEFAULT_GLOB)
            if p.is_file() and p.name == BASE_STATE
        }
    )


def read_events(conv: Path) -> list[dict[str, Any]]:
    """The conversation's events in their order (the index in the file name); a bad file names itself."""
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
        out.append(ev)
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
    folder = StepFolder(lambda ids: response_usage(metrics, ids))
    events = read_events(conv)
    steps: list[Step] = []
    for ev in events:
        steps += folder.feed(ev)
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
            for e in events
            if isinstance(e.get("timestamp"), str) and len(e["timestamp"]) >= 10
        ),
        None,
    )
    if stamp and stamp[4] == "-" and stamp[7] == "-":
        t.meta["date"] = stamp[:10]
    if not spec.model and model:
        t.meta["model"] = model
    yield t


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): a conversation folder, ``base_state.json`` an object beside ``events/``."""
    return path.is_dir() and (path / "events").is_dir() and heads.of(path / BASE_STATE).root == "{"


__all__ = [
    "DEFAULT_GLOB",
    "sniff",
    "StepFolder",
    "call_of",
    "discover",
    "event_kinds",
    "observation_of",
    "parse",
    "read_events",
    "response_usage",
]

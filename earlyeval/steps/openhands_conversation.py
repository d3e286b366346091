"""OpenHands Software Agent SDK (V1) conversation events as steps: one step per LLM response, grouped by
``StepFolder``, which the live callback (``earlyeval.integrations.openhands``) and the ``openhands-conversation``
reader both feed, so an offline read gives the steps the callback scored.  Events are SDK objects (live) or
their JSON form (the persisted ``events/``).  docs/formats.md, "OpenHands SDK (V1) conversations".
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step, call_action, make_step
from earlyeval.steps.values import opt_float, opt_int

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

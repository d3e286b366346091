"""OpenHands Software Agent SDK (V1) conversation events as steps: one step per LLM response, grouped by
``StepFolder``, which the live callback (``earlyeval.integrations.openhands``) and the ``openhands-conversation``
reader both feed, so an offline read gives the steps the callback scored.  Events are SDK objects (live) or
their JSON form (the persisted ``events/``).  docs/formats.md, "OpenHands SDK (V1) conversations".
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from earlyeval.core.errors import IngestError
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step, call_action, make_step
from earlyeval.steps.values import opt_float, opt_int

OBSERVATION_EVENTS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
# the SDK's events that are never part of a step (openhands-sdk 1.x ``openhands.sdk.event``); ACPToolCallEvent (a
# tool call an ACP server ran, no LLM response of this agent) is not among them: it carries a tool call
BOOKKEEPING_EVENTS = frozenset(
    {
        "SystemPromptEvent",
        "PauseEvent",
        "InterruptEvent",
        "Condensation",
        "CondensationRequest",
        "CondensationSummaryEvent",
        "ConversationStateUpdateEvent",
        "ConversationErrorEvent",
        "LLMCompletionLogEvent",
        "TokenEvent",
        "StreamingDeltaEvent",
        "SecurityAnalysisEvent",
        "HookExecutionEvent",
    }
)
LIVE = "<live OpenHands conversation>"
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


def kind_of(ev: Any) -> str:
    """An event's kind as named in a message: its JSON ``kind``, or its class name."""
    return str(ev.get("kind")) if isinstance(ev, Mapping) else type(ev).__name__


def _event_name(ev: Any) -> str:
    eid = get(ev, "id")
    return f"{eid} " if eid is not None else ""


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

    ``feed(event, where)`` returns the steps the event completes, in order; ``usage(response_ids)`` gives a
    step's usage when it completes.  ``final()`` (offline, after the last event) returns the last step a
    finished conversation has that the live callback never scores (module doc).  An event it cannot place
    (an answer to no call, a second answer, a repeated call or event, a kind it does not know that carries a
    tool call) is an IngestError naming ``where`` (the event's file, or ``source`` live) and the event; what it
    reads safely but not as written (an unknown kind without a tool call, a response left unanswered when the
    next began) is said in ``warnings``."""

    def __init__(self, usage: Usage | None = None, source: str = LIVE):
        self.usage = usage or (lambda ids: {})
        self.source = source
        self.prompt = ""
        self.n_steps = 0
        # llm_response_id -> {"actions": [...], "obs": {call_id: ev}}: responses not yet answered in full
        self.pending: dict[str, dict[str, Any]] = {}
        self.calls: dict[Any, str] = {}  # every tool call id an ActionEvent made -> its response
        self.answered: set[Any] = set()
        self.event_ids: set[str] = set()
        self.warnings: list[str] = []
        self._last: Any = (
            None  # the agent's turn ended: a finish-only response, or an agent message
        )

    def feed(self, ev: Any, where: str | None = None) -> list[Step]:
        where = where or self.source
        kinds = event_kinds(ev)
        self._check_new(ev, where)
        if "MessageEvent" in kinds:
            if get(ev, "source") == "user" and not self.prompt:
                self.prompt = content_text(get(get(ev, "llm_message"), "content"))
            elif get(ev, "source") == "agent":  # a response without tool call: the turn ended
                out = self._unanswered(where) + self._went_on()
                self._last = ("message", ev)
                return out
            return []
        if "ActionEvent" in kinds:
            return self._action(ev, where)
        if kinds & OBSERVATION_EVENTS:
            return self._answer(ev, kinds, where)
        if kinds & BOOKKEEPING_EVENTS:
            return []
        return self._unknown(ev, where)

    def final(self) -> list[Step]:
        """After the last event: an unanswered response (with what answered it), else the finish or agent message."""
        out = [self._step(rid, g) for rid, g in self.pending.items()]
        self.pending = {}
        return out + self._went_on()

    def _check_new(self, ev: Any, where: str) -> None:
        """An event seen before (its ``id``) is a repeat: refused, never read twice."""
        eid = get(ev, "id")
        if eid is None:
            return
        if str(eid) in self.event_ids:
            raise IngestError(where, "id", f"{kind_of(ev)} repeats event {eid}, read before")
        self.event_ids.add(str(eid))

    def _action(self, ev: Any, where: str) -> list[Step]:
        call_id, rid = get(ev, "tool_call_id"), str(get(ev, "llm_response_id"))
        if call_id in self.calls:
            raise IngestError(
                where,
                "tool_call_id",
                f"ActionEvent {_event_name(ev)}repeats tool call {call_id!r} of an earlier action "
                f"(response {self.calls[call_id]}): the conversation would read as one step too many",
            )
        out = self._unanswered(where, keep=rid) + self._went_on()
        self.pending.setdefault(rid, {"actions": [], "obs": {}})["actions"].append(ev)
        self.calls[call_id] = rid
        return out

    def _answer(self, ev: Any, kinds: set[str], where: str) -> list[Step]:
        call_id, kind = get(ev, "tool_call_id"), kind_of(ev)
        if call_id in self.answered:
            raise IngestError(
                where, "tool_call_id", f"{kind} is a second answer to tool call {call_id!r}"
            )
        rid = self.calls.get(call_id)
        if rid is None:
            if "AgentErrorEvent" in kinds:  # a tool call the agent could not even parse
                text, _ = observation_of(ev)
                out = self._unanswered(where) + self._went_on()
                return out + [self._emit([], observation=text, error=True)]
            raise IngestError(
                where,
                "tool_call_id",
                f"{kind} answers no action: no ActionEvent made call {call_id!r}",
            )
        group = self.pending.get(rid)
        if group is None:
            raise IngestError(
                where,
                "tool_call_id",
                f"{kind} answers call {call_id!r} of response {rid}, read as a step before this answer came",
            )
        group["obs"][call_id] = ev
        self.answered.add(call_id)
        if len(group["obs"]) < len(group["actions"]):
            return []
        del self.pending[rid]
        if all(get(a, "tool_name", "") in FINISH_TOOLS for a in group["actions"]):
            self._last = ("group", (rid, group))
            return []  # the agent finished: nothing left to stop, unless the conversation goes on
        return [self._step(rid, group)]

    def _unanswered(self, where: str, keep: str | None = None) -> list[Step]:
        """The responses still waiting for answers when another began (``keep``: the one going on), as the
        steps they are, in order, each said in a warning (the SDK answers every call before its next call)."""
        out = []
        for rid in [r for r in self.pending if r != keep]:
            group = self.pending.pop(rid)
            missing = [get(a, "tool_call_id") for a in group["actions"]]
            missing = [c for c in missing if c not in group["obs"]]
            self.warnings.append(
                f"{where}: response {rid} left call(s) {missing} unanswered when the next response began: "
                "read as a step with the answers it had"
            )
            out.append(self._step(rid, group))
        return out

    def _went_on(self) -> list[Step]:
        """The agent's ended turn (a finish, a message) as a step: the conversation went on (or ended) after it."""
        if self._last is None:
            return []
        what, x = self._last
        self._last = None
        if what == "group":
            return [self._step(*x)]
        text = content_text(get(get(x, "llm_message"), "content"))
        return [self._emit([], final_answer=text, usage=self.usage([get(x, "llm_response_id")]))]

    def _unknown(self, ev: Any, where: str) -> list[Step]:
        """An event of a kind this reader does not know: refused when it carries a tool call or its answer (it
        could be a step), else bookkeeping, said in a warning."""
        kind = kind_of(ev)
        carried = [
            k for k in ("tool_call_id", "llm_response_id", "action", "observation") if get(ev, k)
        ]
        if carried:
            raise IngestError(
                where,
                "kind",
                f"an event of a kind this reader does not know ({kind}) carries {', '.join(carried)}: "
                "it cannot be placed among the steps",
            )
        self.warnings.append(
            f"{where}: an event of a kind this reader does not know ({kind}), with no tool call: "
            "read as bookkeeping, not a step"
        )
        return []

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

"""tau2-bench dialogues as steps: one step per agent turn (the scripted greeting included), with the tool results
it asked for and what the user said next; usage counts the agent's messages only, and a cost that is always 0 is
unknown.  docs/formats.md, "tau2-bench".
"""

from __future__ import annotations

from typing import Any

from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step
from earlyeval.steps.calls import tool_calls
from earlyeval.steps.chat import PendingTurn, chat_steps, join_thought
from earlyeval.steps.values import is_number, opt_int


def cost_source(sims: list) -> str:
    """How the file's agent cost is known: 'per-message-cost', 'raw-billed-cost' or 'none'.

    Decided once per file (one run = one price table): a file whose assistant
    messages all have cost 0 or none did not know the price.
    """
    priced = billed = False
    for s in sims:
        if not isinstance(s, dict) or not isinstance(s.get("messages"), list):
            continue
        for m in s["messages"]:
            if not isinstance(m, dict) or m.get("role") != "assistant":
                continue
            if is_number(m.get("cost")) and m["cost"] > 0:
                priced = True
            if is_number(_raw_usage(m).get("cost")) and _raw_usage(m)["cost"] > 0:
                billed = True
    if priced:
        return "per-message-cost"
    if billed:
        return "raw-billed-cost"
    return "none"


def _raw_usage(m: dict) -> dict:
    rd = m.get("raw_data")
    u = rd.get("usage") if isinstance(rd, dict) else None
    return u if isinstance(u, dict) else {}


def _usage(m: dict, cost_source: str) -> dict[str, Any]:
    """Tokens and cost of one assistant message; None where unknown."""
    out: dict[str, Any] = {
        "input_tokens": None,
        "output_tokens": None,
        "cached_tokens": None,
        "cost_usd": None,
    }
    u = m.get("usage")
    if not isinstance(u, dict) or not u:
        return out  # no metered call (hard-coded greeting, custom agent)
    out["input_tokens"] = opt_int(u.get("prompt_tokens"))
    out["output_tokens"] = opt_int(u.get("completion_tokens"))
    raw = _raw_usage(m)
    det = raw.get("prompt_tokens_details")
    if isinstance(det, dict) and opt_int(det.get("cached_tokens")) is not None:
        out["cached_tokens"] = opt_int(det.get("cached_tokens"))
    elif opt_int(raw.get("cache_read_input_tokens")) is not None:
        out["cached_tokens"] = opt_int(raw.get("cache_read_input_tokens"))
    if cost_source == "per-message-cost" and is_number(m.get("cost")):
        out["cost_usd"] = float(m["cost"])
    elif cost_source == "raw-billed-cost" and is_number(raw.get("cost")):
        out["cost_usd"] = float(raw["cost"])
    return out


def dialogue_steps(messages: list, f: str, where: str, cost_source: str) -> tuple[list[Step], str]:
    def tool_result(
        m: dict, pending: PendingTurn | None, content: Any
    ) -> tuple[str, bool | None] | None:
        requestor = m.get("requestor")
        mine = requestor == "assistant" or (
            requestor is None and pending is not None and m.get("id") in pending.call_ids
        )
        if not mine:
            return None  # the user simulator's own device tools: not seen by the agent
        err = m.get("error")
        return content_text(content), err if isinstance(err, bool) else None

    return chat_steps(
        messages,
        f,
        where,
        turn=lambda m, mw, text: _turn(m, f, mw, text, cost_source),
        tool_result=tool_result,
        # the user acting on its device, not speaking to the agent
        skip_user=lambda m, text: bool(m.get("tool_calls")) and not text,
        answer_key="id",
    )


def _turn(m: dict, f: str, mw: str, text: str, cost_source: str) -> PendingTurn:
    calls = tool_calls(m, f, mw, nested=False)
    actions = [c.action(absent={}) for c in calls]
    ids = {c.id for c in calls if c.id is not None}
    reasoning = m.get("reasoning") if isinstance(m.get("reasoning"), str) else ""
    p = PendingTurn(actions=actions, call_ids=ids, **_usage(m, cost_source))
    if actions:
        p.thought = join_thought(reasoning, text)
    else:
        p.thought = reasoning
        p.final_answer = text
    return p

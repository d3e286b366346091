"""inspect_ai message histories as steps: the chat step definition (``earlyeval.steps.chat``) over
``ChatMessage`` objects, with each assistant message's usage from the model call that produced it.

``inspect_steps`` is what the ``inspect-eval`` reader applies to a log's samples and what the live approver and
``on_continue`` apply to the history inspect hands them.  docs/formats.md, "inspect_ai logs".
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Step, call_action
from earlyeval.steps.chat import PendingTurn, chat_steps, join_thought
from earlyeval.steps.values import opt_float, opt_int

Usage = Callable[[str | None], Any]  # assistant message id -> its ModelUsage (or None)


def usage_by_message(events: Iterable[Any] | None) -> dict[str, Any]:
    """Each assistant message id -> the usage of the model call that produced it (``ModelEvent``s)."""
    out: dict[str, Any] = {}
    for e in events or ():
        if getattr(e, "event", None) != "model":
            continue
        output = getattr(e, "output", None)
        choices = getattr(output, "choices", None) or []
        mid = getattr(getattr(choices[0], "message", None), "id", None) if choices else None
        if mid is not None and getattr(output, "usage", None) is not None:
            out[str(mid)] = output.usage
    return out


def _usage_fields(usage: Any) -> dict[str, Any]:
    if usage is None:
        return {}
    return {
        "input_tokens": opt_int(getattr(usage, "input_tokens", None)),
        "output_tokens": opt_int(getattr(usage, "output_tokens", None)),
        "cached_tokens": opt_int(getattr(usage, "input_tokens_cache_read", None)),
        "cost_usd": opt_float(getattr(usage, "total_cost", None)),
    }


def _turn(
    usage: Mapping[str, Any], ids: list[str | None]
) -> Callable[[dict, str, str], PendingTurn]:
    def turn(m: dict, where: str, _text: str) -> PendingTurn:
        msg = m["msg"]
        ids.append(getattr(msg, "id", None))
        raw = getattr(msg, "tool_calls", None) or []
        calls = [call_action(tc.function, tc.arguments) for tc in raw]
        content = msg.content if isinstance(msg.content, list) else []
        reasoning = "\n".join(
            c.reasoning for c in content if getattr(c, "type", None) == "reasoning" and c.reasoning
        )
        text = msg.text or ""
        return PendingTurn(
            calls,
            call_ids={tc.id for tc in raw if isinstance(getattr(tc, "id", None), str)},
            thought=join_thought(reasoning, text) if calls else reasoning,
            final_answer="" if calls else text,
            **_usage_fields(usage.get(str(ids[-1]))),
        )

    return turn


def _tool_result(m: dict, pending: PendingTurn | None, content: Any) -> tuple[str, bool | None]:
    return content_text(content), getattr(m["msg"], "error", None) is not None


def inspect_steps(
    messages: Sequence[Any],
    usage: Mapping[str, Any] | None = None,
    where: str = "messages",
    file: str = "<live>",
) -> tuple[list[Step], str, list[str | None]]:
    """(steps, prompt, assistant message id of each step) of an inspect message history.

    ``messages``: ``inspect_ai.model.ChatMessage`` objects (a log's ``sample.messages``, or the history
    an approver gets); ``usage``: :func:`usage_by_message` of the sample's events."""
    ids: list[str | None] = []
    view = [
        {
            "role": getattr(m, "role", None),
            "content": getattr(m, "content", None),
            "tool_call_id": getattr(m, "tool_call_id", None),
            "msg": m,
        }
        for m in messages
    ]
    steps, prompt = chat_steps(
        view, file, where, _turn(usage or {}, ids), _tool_result, answer_key="tool_call_id"
    )
    return steps, prompt, ids

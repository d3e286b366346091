"""The step definition of the chat-style formats (tau2, Toolathlon, inspect_ai; ATIF's join): an OpenAI-style
conversation read turn by turn, one step per assistant turn with what answered it.

Their one step definition, which makes ``ingest -> export ATIF -> ingest`` reproduce the same steps:
docs/formats.md, "Chat-style formats".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from earlyeval.core.errors import IngestError
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Action, Step, make_step

# ---------------------------------------------------------------- step building


@dataclass
class PendingTurn:
    """One assistant turn being assembled until the next assistant turn starts."""

    actions: list[Action]
    thought: str = ""
    final_answer: str = ""  # the turn's text when it made no tool call
    call_ids: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)  # the call ids a tool result answered
    observations: list[str] = field(default_factory=list)
    errors: list[bool | None] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None

    def observe(self, text: str, error: bool | None = None, is_result: bool = True) -> None:
        self.observations.append(text)
        if is_result:
            self.errors.append(error)

    def finish(self, index: int) -> Step:
        """The Step; error is True if any tool result was marked failed, False if all were
        marked fine, None when the turn called no tool or the results carry no mark."""
        error: bool | None = None
        if any(e is True for e in self.errors):
            error = True
        elif self.errors and all(e is False for e in self.errors):
            error = False
        return make_step(
            index,
            self.actions,
            thought=self.thought,
            observation="\n".join(self.observations),
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cached_tokens=self.cached_tokens,
            cost_usd=self.cost_usd,
            error=error,
            final_answer=self.final_answer if not self.actions else None,
        )


def chat_steps(
    messages: list,
    f: str,
    where: str,
    turn: Callable[[dict, str, str], PendingTurn],
    tool_result: Callable[[dict, PendingTurn | None, Any], tuple[str, bool | None] | None],
    skip_user: Callable[[dict, str], bool] | None = None,
    answer_key: str | None = None,
) -> tuple[list[Step], str]:
    """Steps and prompt of an OpenAI-style conversation (the step definition in this module's docstring).

    The formats differ only in how an assistant turn is read (``turn``), how a
    tool message becomes an observation (``tool_result``; None = not seen by the
    agent), which user messages are not addressed to the agent (``skip_user``) and
    which key of a tool message names the call it answers (``answer_key``).
    The first user message is the task as the agent heard it; later ones answer a turn.
    A tool result the agent saw that answers no call of the turn before it (or a call
    answered already) is an IngestError naming it: it cannot be placed.
    """
    prompt = ""
    steps: list[Step] = []
    pending: PendingTurn | None = None
    for j, m in enumerate(messages):
        mw = f"{where}[{j}]"
        if not isinstance(m, dict):
            raise IngestError(f, mw, f"expected an object, got {type(m).__name__}")
        role = m.get("role")
        if not isinstance(role, str):
            raise IngestError(f, f"{mw}.role", "missing or not a string")
        content = m.get("content")
        if content is not None and not isinstance(content, (str, list)):
            raise IngestError(
                f, f"{mw}.content", f"expected a string, got {type(content).__name__}"
            )
        if role == "assistant":
            if pending is not None:
                steps.append(pending.finish(len(steps)))
            pending = turn(m, mw, content_text(content))
        elif role == "tool":
            got = tool_result(m, pending, content)
            if got is not None:  # a result the agent saw
                answered(pending, m.get(answer_key) if answer_key else None, f, mw, answer_key)
                pending.observe(*got)  # type: ignore[union-attr]  # answered() refused None
        elif role == "user":
            text = content_text(content)
            if skip_user is not None and skip_user(m, text):
                continue
            if not prompt:
                prompt = text
            if pending is not None:
                pending.observe(text, is_result=False)
        elif role != "system":
            raise IngestError(f, f"{mw}.role", f"unknown role '{role}'")
    if pending is not None:
        steps.append(pending.finish(len(steps)))
    return steps, prompt


def answered(pending: PendingTurn | None, call_id: Any, f: str, mw: str, key: str | None) -> None:
    """Check that a tool result answers a call of the turn before it, once (``call_id``: the call it names,
    None when the format names none); record the answer.  Else an IngestError naming the message."""
    if pending is None:
        raise IngestError(f, mw, "a tool result before any assistant turn: it answers no call")
    if not pending.actions:
        raise IngestError(
            f, mw, "a tool result after a turn that made no tool call: it answers no call"
        )
    if call_id is None:
        return
    field_name = f"{mw}.{key}"
    if pending.call_ids and call_id not in pending.call_ids:
        raise IngestError(
            f,
            field_name,
            f"answers call {call_id!r}, which the turn before it did not make "
            f"(its calls: {', '.join(sorted(pending.call_ids))})",
        )
    if call_id in pending.answered:
        raise IngestError(f, field_name, f"a second answer to call {call_id!r}")
    pending.answered.add(call_id)


def join_thought(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)

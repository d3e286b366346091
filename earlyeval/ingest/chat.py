"""Helpers shared by the chat-style ingestors (tau2, Toolathlon, ATIF) and the ATIF exporter.

Their one step definition and reward rule, which make ``ingest -> export ATIF -> ingest`` reproduce the same steps
and label: docs/formats.md, "Chat-style formats".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Action, Step, make_step

# Default success rule for graded rewards: success iff reward >= 1 - 1e-6.
DEFAULT_SUCCESS_MIN_REWARD = 1.0 - 1e-6
SUCCESS_OPTION = "success_min_reward"


def is_number(v: Any) -> bool:
    """A real int/float (bool is not a number here)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def opt_int(v: Any) -> int | None:
    """An int token count, or None when absent / not an integer."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def opt_float(v: Any) -> float | None:
    if is_number(v) and not (isinstance(v, float) and math.isnan(v)):
        return float(v)
    return None


# ---------------------------------------------------------------- labels


def success_min_reward(spec: RunSpec) -> float:
    """The catalog's success threshold for graded rewards.

    Looked up in the inline label spec (``labels = [{ format = "inline",
    success_min_reward = 0.5 }]``), then in the run's options (a run key or a
    ``[defaults]`` key); default ``1 - 1e-6`` (success iff the reward is 1).
    """
    for ls in spec.labels:
        if ls.format == "inline" and SUCCESS_OPTION in ls.options:
            return float(ls.options[SUCCESS_OPTION])
    if SUCCESS_OPTION in spec.options:
        return float(spec.options[SUCCESS_OPTION])
    return DEFAULT_SUCCESS_MIN_REWARD


def reward_outcome(reward: Any, threshold: float, file: str, field_name: str) -> int:
    """Map a numeric reward to an outcome: 1 iff reward >= threshold."""
    if not is_number(reward):
        raise IngestError(file, field_name, f"expected a number, got {type(reward).__name__}")
    r = float(reward)
    if math.isnan(r):
        raise IngestError(file, field_name, "reward is NaN")
    return 1 if r >= threshold else 0


# ---------------------------------------------------------------- step building


@dataclass
class PendingTurn:
    """One assistant turn being assembled until the next assistant turn starts."""

    actions: list[Action]
    thought: str = ""
    final_answer: str = ""  # the turn's text when it made no tool call
    call_ids: set[str] = field(default_factory=set)
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
    tool_result: Callable[[dict, PendingTurn, Any], tuple[str, bool | None] | None],
    skip_user: Callable[[dict, str], bool] | None = None,
) -> tuple[list[Step], str]:
    """Steps and prompt of an OpenAI-style conversation (the step definition in this module's docstring).

    The formats differ only in how an assistant turn is read (``turn``), how a
    tool message becomes an observation (``tool_result``; None = not seen by the
    agent) and which user messages are not addressed to the agent (``skip_user``).
    The first user message is the task as the agent heard it; later ones answer a turn.
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
            got = tool_result(m, pending, content) if pending is not None else None
            if got is not None:
                pending.observe(*got)
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


def join_thought(*parts: str | None) -> str:
    return "\n\n".join(p for p in parts if p)

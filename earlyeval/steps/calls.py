"""The one reading of an OpenAI-style ``tool_calls`` list (SWE-agent 1.x, OpenHands completions, tau2,
Toolathlon): each call checked and returned raw, for its format to render.

The checks were written once per reader; a format differs only in where the name and arguments sit
(``{"function": {"name", "arguments"}}``, or flat ``{"name", "arguments"}`` in tau2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from earlyeval.core.errors import IngestError
from earlyeval.core.render import tool_call_text
from earlyeval.core.trajectory import Action


@dataclass(frozen=True)
class RawCall:
    """One tool call as the record holds it: its id (None when absent or not a string), name and arguments
    (a JSON string, an object or None)."""

    id: str | None
    name: str
    arguments: Any

    def action(self, absent: Any = None) -> Action:
        """The call as an Action, its text by ``render.tool_call_text`` (``absent``: the arguments of a call
        that has none; tau2 and Toolathlon render them as ``{}``), its kind left to ``make_step``."""
        args = self.arguments if self.arguments is not None else absent
        return Action(tool=self.name, text=tool_call_text(self.name, args))


def tool_calls(
    message: Mapping[str, Any], source: str, where: str, *, nested: bool = True
) -> list[RawCall]:
    """The checked ``tool_calls`` of one assistant ``message`` (``where`` names it in ``source``): a list of
    objects, each with a non-empty string name and arguments that are a JSON string, an object or absent;
    anything else is an IngestError naming the call.  ``nested``: name and arguments under ``function``."""
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise IngestError(
            source, f"{where}.tool_calls", f"expected a list, got {type(calls).__name__}"
        )
    out = []
    for k, tc in enumerate(calls):
        cw = f"{where}.tool_calls[{k}]"
        if not isinstance(tc, dict):
            raise IngestError(source, cw, f"expected an object, got {type(tc).__name__}")
        fn = tc
        if nested:
            fn, cw = tc.get("function"), f"{cw}.function"
            if not isinstance(fn, dict):
                raise IngestError(source, cw, "missing or not an object")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise IngestError(source, f"{cw}.name", "missing or not a string")
        args = fn.get("arguments")
        if args is not None and not isinstance(args, (str, dict)):
            raise IngestError(
                source,
                f"{cw}.arguments",
                f"expected a JSON string or an object, got {type(args).__name__}",
            )
        call_id = tc.get("id")
        out.append(RawCall(call_id if isinstance(call_id, str) else None, name, args))
    return out

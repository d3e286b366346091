"""OpenHands V0 conversation events as steps: one step per agent action event that acts, with the observations
it caused; a message to the user is a step without action, a human's later message is observation.  What is a
step and what is bookkeeping: docs/formats.md, "OpenHands V0 event streams".
"""

from __future__ import annotations

from typing import Any

from earlyeval.core.errors import IngestError
from earlyeval.core.trajectory import Action, Step, make_step
from earlyeval.steps.openhands_completions import render_tool_call

_BOOKKEEPING = {"system", "recall", "change_agent_state", "condensation", "condensation_request"}
# event action -> (native tool, how its args become that tool's arguments)
_FALLBACK_TOOL = {
    "run": "execute_bash",
    "run_ipython": "execute_ipython_cell",
    "read": "str_replace_editor",
    "edit": "str_replace_editor",
}


def _response(e: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    tcm = e.get("tool_call_metadata")
    if not isinstance(tcm, dict):
        return None, None
    resp = tcm.get("model_response")
    return tcm, resp if isinstance(resp, dict) else None


def _message(resp: dict[str, Any] | None) -> dict[str, Any]:
    try:
        m = resp["choices"][0]["message"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return {}
    return m if isinstance(m, dict) else {}


def action_of(e: dict[str, Any], args: dict[str, Any]) -> Action:
    """The native tool call behind an action event, else its args."""
    tcm, resp = _response(e)
    if tcm is not None:
        for tc in _message(resp).get("tool_calls") or []:
            fn = tc.get("function") if isinstance(tc, dict) else None
            if (
                isinstance(fn, dict)
                and tc.get("id") == tcm.get("tool_call_id")
                and isinstance(fn.get("name"), str)
            ):
                return render_tool_call(fn["name"], fn.get("arguments"))
    a = e["action"]
    if a == "read":
        return render_tool_call(
            "str_replace_editor",
            {"command": "view", "path": args.get("path"), "view_range": args.get("view_range")},
        )
    if a == "edit":
        keys = ("command", "path", "old_str", "new_str", "file_text", "insert_line")
        return render_tool_call("str_replace_editor", {k: args.get(k) for k in keys})
    if a == "finish":
        return render_tool_call("finish", {"message": args.get("final_thought") or ""})
    if a == "call_tool_mcp" and isinstance(args.get("name"), str):
        return render_tool_call(args["name"], args.get("arguments") or {})
    rest = {
        k: v
        for k, v in args.items()
        if k
        not in (
            "thought",
            "security_risk",
            "is_input",
            "blocking",
            "hidden",
            "confirmation_state",
            "is_static",
            "cwd",
        )
    }
    return render_tool_call(_FALLBACK_TOOL.get(a, a), rest)


def _usage(resp: dict[str, Any] | None) -> dict[str, int | None]:
    u = resp.get("usage") if isinstance(resp, dict) else None
    if not isinstance(u, dict):
        return {"input_tokens": None, "output_tokens": None, "cached_tokens": None}
    det = u.get("prompt_tokens_details") if isinstance(u.get("prompt_tokens_details"), dict) else {}
    as_int = lambda v: v if isinstance(v, int) and not isinstance(v, bool) else None  # noqa: E731
    return {
        "input_tokens": as_int(u.get("prompt_tokens")),
        "output_tokens": as_int(u.get("completion_tokens")),
        "cached_tokens": as_int(det.get("cached_tokens")),
    }


def _obs_error(e: dict[str, Any]) -> bool:
    if e.get("observation") == "error":
        return True
    extras = e.get("extras") if isinstance(e.get("extras"), dict) else {}
    meta = extras.get("metadata") if isinstance(extras.get("metadata"), dict) else {}
    code = meta.get("exit_code")
    return isinstance(code, int) and code != 0


def _new(thought: str = "", calls: list[Action] | None = None, **usage: Any) -> dict[str, Any]:
    return {
        "thought": thought,
        "calls": calls or [],
        "obs": [],
        "err": [],
        "resp": None,
        **({"input_tokens": None, "output_tokens": None, "cached_tokens": None} | usage),
    }


class EventFold:
    """The events folded one by one into raw steps, plus what the run's meta needs (prompt, user messages, cost, models)."""

    def __init__(self, f: str) -> None:
        self.f = f
        self.raw: list[dict[str, Any]] = []
        self.step_of_action: dict[Any, int] = {}
        self.prompt = ""
        self.user_messages = self.condensations = 0
        self.cost: float | None = None
        self.llm_models: list[str] = []  # in order of first use (a conversation may switch model)
        self.ids: set[Any] = set()  # every event id read
        self.action_ids: set[Any] = set()  # the ids of the action events read
        self.answered: set[Any] = set()  # the actions an observation answered
        self.warnings: list[
            str
        ] = []  # read, but not as written: said (ingest keeps them with the run)

    def event(self, i: int, e: Any) -> None:
        """Event ``i`` of the file, in file order (a step's observations follow the action they answer)."""
        where = f"[{i}]"
        if not isinstance(e, dict):
            raise IngestError(self.f, where, f"expected an event object, got {type(e).__name__}")
        eid = self._new_id(where, e)
        src = e.get("source")
        if isinstance(e.get("llm_metrics"), dict) and isinstance(
            e["llm_metrics"].get("accumulated_cost"), (int, float)
        ):
            self.cost = float(e["llm_metrics"]["accumulated_cost"])
        if "action" in e:
            self.action(where, e, src)
            if eid is not None:
                self.action_ids.add(eid)
        elif "observation" in e:
            self.observation(where, e, src)
        else:
            raise IngestError(
                self.f,
                where,
                "neither an action nor an observation: an event of no kind this reader knows",
            )

    def _new_id(self, where: str, e: dict[str, Any]) -> Any:
        """The event's ``id`` (None when it has none); an id read before is a repeat, refused."""
        eid = e.get("id")
        if eid is None:
            return None
        if not isinstance(eid, (int, str)) or isinstance(eid, bool):
            raise IngestError(
                self.f, f"{where}.id", f"expected an event id, got {type(eid).__name__}"
            )
        if eid in self.ids:
            raise IngestError(self.f, f"{where}.id", f"repeats event {eid!r}, read before")
        self.ids.add(eid)
        return eid

    def action(self, where: str, e: dict[str, Any], src: Any) -> None:
        """An action event: the prompt or a later user message, bookkeeping, an agent message, or an acting step."""
        raw = self.raw
        a = e["action"]
        if not isinstance(a, str):
            raise IngestError(self.f, f"{where}.action", f"expected str, got {type(a).__name__}")
        args = e.get("args") if e.get("args") is not None else {}
        if not isinstance(args, dict):
            raise IngestError(self.f, f"{where}.args", f"expected dict, got {type(args).__name__}")
        text = (
            args.get("content")
            if isinstance(args.get("content"), str)
            else (e.get("message") or "")
        )
        if src == "user" and a == "message":
            if not self.prompt and not raw:
                self.prompt = text
            else:
                self.user_messages += 1
                if raw:
                    raw[-1]["obs"].append(f"[user] {text}")
            return
        if src != "agent" or a in _BOOKKEEPING:
            if a == "condensation":
                self.condensations += 1
            return
        if a == "message":
            raw.append(_new(thought=text.strip()))
            return
        self.acting(e, args)

    def acting(self, e: dict[str, Any], args: dict[str, Any]) -> None:
        """An agent action that acts: a new step, or one more call of the step its model response began."""
        raw = self.raw
        _, resp = _response(e)
        rid = resp.get("id") if resp else None
        if resp and isinstance(resp.get("model"), str) and resp["model"] not in self.llm_models:
            self.llm_models.append(resp["model"])
        act = action_of(e, args)
        if rid is not None and raw and raw[-1]["resp"] == rid:
            raw[-1]["calls"].append(act)
        else:
            thought = args.get("thought") if isinstance(args.get("thought"), str) else ""
            thought = thought or (_message(resp).get("content") or "")
            raw.append(_new(thought=str(thought).strip(), calls=[act], **_usage(resp)))
            raw[-1]["resp"] = rid
        if "id" in e:
            self.step_of_action[e["id"]] = len(raw) - 1

    def observation(self, where: str, e: dict[str, Any], src: Any) -> None:
        """An observation: appended to the step of the action it answers, or an uncaused agent error as its own
        step; one that names as its cause no action before it is refused (it answers nothing)."""
        cause = e.get("cause")
        if cause is not None and (
            isinstance(cause, bool)
            or not isinstance(cause, (int, str))
            or cause not in self.action_ids
        ):
            raise IngestError(
                self.f,
                f"{where}.cause",
                f"answers no action: no action event before it has id {cause!r}",
            )
        content = (
            e.get("content") if isinstance(e.get("content"), str) else (e.get("message") or "")
        )
        if cause is not None and cause in self.step_of_action:
            if cause in self.answered:
                self.warnings.append(
                    f"{self.f}: {where}: a second observation of action {cause!r}: read into its step too"
                )
            self.answered.add(cause)
            st = self.raw[self.step_of_action[cause]]
            st["obs"].append(content)
            st["err"].append(_obs_error(e))
        elif src == "agent" and e.get("observation") == "error" and cause is None:
            self.raw.append(_new())
            self.raw[-1]["obs"].append(content)
            self.raw[-1]["err"].append(True)


def fold_steps(fold: EventFold) -> list[Step]:
    """The steps of the events folded so far."""
    return [
        make_step(
            k,
            r["calls"],
            thought=r["thought"],
            observation="\n".join(r["obs"]),
            input_tokens=r["input_tokens"],
            output_tokens=r["output_tokens"],
            cached_tokens=r["cached_tokens"],
            error=any(r["err"]) if r["err"] else None,
        )
        for k, r in enumerate(fold.raw)
    ]

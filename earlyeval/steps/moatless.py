"""Moatless Tools records as steps, two layouts: a ``transitions`` action (``moatless-transitions``) or a
``steps`` entry (``moatless-steps``) is one LLM call, its tool named after what the call did so that
``classify_action`` gives the kind.  docs/formats.md, "Moatless Tools".
"""

from __future__ import annotations

import json
import re
from typing import Any

from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import require
from earlyeval.core.trajectory import Action, Step, make_step

_THOUGHT_KEYS = ("thoughts", "scratch_pad", "reasoning", "thought")
_STATE_TOOL = {
    "SearchCode": "search_code",
    "IdentifyCode": "identify",
    "DecideRelevance": "decide_relevance",
    "ClarifyCodeChange": "clarify_code_change",
    "EditCode": "apply_change",
}
_PLAN_VERB = {
    "modify": "request_for_change",
    "finish": "finish",
    "reject": "reject",
    "review": "review",
}


def render(v: Any) -> str:
    """A JSON value as readable text: ``key: value`` lines, nulls and empties left out."""
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        lines = []
        for k, x in v.items():
            if x is None or x == "" or x == [] or x == {}:
                continue
            t = x if isinstance(x, str) else json.dumps(x, ensure_ascii=False)
            lines.append(f"{k}: {t}")
        return "\n".join(lines)
    if isinstance(v, list):
        return "\n".join(
            render(x) if isinstance(x, str) else json.dumps(x, ensure_ascii=False) for x in v
        )
    return json.dumps(v, ensure_ascii=False)


def _split_thought(d: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    thought = "\n".join(
        str(d[k]) for k in _THOUGHT_KEYS if isinstance(d.get(k), str) and d[k].strip()
    )
    return thought, {k: v for k, v in d.items() if k not in _THOUGHT_KEYS}


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _opt_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def opt_cost(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _transition_action(state: str, act: dict[str, Any], effect: str | None) -> Action:
    """The Action of one call in ``state``; ``effect`` = the next state if the call was accepted and caused it."""
    _, args = _split_thought(act)
    if state == "PlanToCode":
        inner = args.get("action")
        if isinstance(inner, str):
            tool = _PLAN_VERB.get(inner, inner)
            rest = {k: v for k, v in args.items() if k != "action"}
        elif isinstance(inner, dict):
            tool = (
                "request_for_change" if ("file_path" in inner or "span_id" in inner) else "finish"
            )
            rest = inner
        else:
            tool, rest = "plan_to_code", args
        if effect in ("Finished", "Rejected"):
            tool = "finish" if effect == "Finished" else "reject"
        return Action(tool=tool, text=render(rest))
    if state == "EditCode":
        content = args.get("content")
        text = content if isinstance(content, str) else render(args)
        return Action(
            tool="reject_change" if text.lstrip().startswith("<reject>") else "apply_change",
            text=text,
        )
    return Action(tool=_STATE_TOOL.get(state, _snake(state)), text=render(args))


def steps_from_transitions(transitions: list, file: str) -> list[Step]:
    steps: list[Step] = []
    for ti, tr in enumerate(transitions):
        where = f"transitions[{ti}]"
        state = require(tr, "name", str, file, where)
        actions = require(tr, "actions", list, file, where)
        nxt = (
            transitions[ti + 1].get("name")
            if ti + 1 < len(transitions) and isinstance(transitions[ti + 1], dict)
            else None
        )
        for ai, a in enumerate(actions):
            aw = f"{where}.actions[{ai}]"
            act = require(a, "action", dict, file, aw)
            retry = a.get("retry_message")
            accepted = retry is None
            effect = nxt if accepted and ai == len(actions) - 1 else None
            thought, _ = _split_thought(act)
            steps.append(
                make_step(
                    len(steps),
                    [_transition_action(state, act, effect)],
                    thought=thought,
                    observation=render(a.get("output")) if accepted else render(retry),
                    input_tokens=_opt_int(a.get("input_tokens")),
                    output_tokens=_opt_int(a.get("output_tokens")),
                    cost_usd=opt_cost(a.get("completion_cost")),
                    error=not accepted,
                )
            )
    return steps


def steps_from_steps(raw_steps: list, file: str) -> list[Step]:
    steps: list[Step] = []
    for si, s in enumerate(raw_steps):
        where = f"steps[{si}]"
        state = require(s, "name", str, file, where)
        actions = require(s, "actions", list, file, where)
        thoughts = (
            [s["thought"]] if isinstance(s.get("thought"), str) and s["thought"].strip() else []
        )
        acts: list[Action] = []
        obs: list[str] = []
        error = bool(s.get("error"))
        for ai, a in enumerate(actions):
            aw = f"{where}.actions[{ai}]"
            name = require(a, "name", str, file, aw)
            inp = a.get("input") if a.get("input") is not None else {}
            if not isinstance(inp, dict):
                raise IngestError(file, f"{aw}.input", f"expected dict, got {type(inp).__name__}")
            thought, args = _split_thought(inp)
            if thought:
                thoughts.append(thought)
            tool = "reject_change" if name == "reject" and "CodeChange" in state else name
            acts.append(Action(tool=tool, text=render(args)))
            out = a.get("output")
            if isinstance(out, dict) and out.get("error"):
                error = True
            if render(out):
                obs.append(render(out))
        if s.get("error"):
            obs.append(f"error: {render(s['error'])}")
        steps.append(
            make_step(
                si,
                acts,
                thought="\n".join(thoughts),
                observation="\n".join(obs),
                cost_usd=opt_cost(s.get("completion_cost")),
                error=error,
            )
        )
    return steps

"""Moatless Tools trajectories (``trajs/<instance_id>.json``, plain or gzipped), two layouts.

The ``moatless-transitions`` and ``moatless-steps`` layouts: one step per LLM call, its tool named after what
the call did so that ``classify_action`` gives the kind. Both layouts' mapping: docs/formats.md, "Moatless
Tools".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.trajectory import Action, Step, Trajectory, make_step
from earlyeval.ingest.common import day_of, run_trajectory
from earlyeval.ingest.sniff import Heads

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/trajs/*.json*"
INLINE_LABELS = False

FORMATS = ("moatless-transitions", "moatless-steps")

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


def _opt_cost(v: Any) -> float | None:
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
                    cost_usd=_opt_cost(a.get("completion_cost")),
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
                cost_usd=_opt_cost(s.get("completion_cost")),
                error=error,
            )
        )
    return steps


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise IngestError(f, "<root>", f"expected an object, got {type(d).__name__}")
    if spec.format == "moatless-steps":
        raw = require(d, "steps", list, f)
        if not raw:
            raise IngestError(f, "steps", "empty list: no agent steps")
        steps = steps_from_steps(raw, f)
        inp = d.get("input") if isinstance(d.get("input"), dict) else {}
        prompt = inp.get("problem_statement") or ""
    elif spec.format == "moatless-transitions":
        raw = require(d, "transitions", list, f)
        steps = steps_from_transitions(raw, f)
        if not steps:
            raise IngestError(f, "transitions", "no transition holds an action: no agent steps")
        prompt = d.get("initial_message") if isinstance(d.get("initial_message"), str) else ""
    else:
        raise IngestError(
            f,
            "format",
            f"moatless ingestor got format '{spec.format}' (known: {', '.join(FORMATS)})",
        )
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    task_id = (
        info.get("instance_id")
        if isinstance(info.get("instance_id"), str)
        else strip_gz(path.name).removesuffix(".json")
    )
    err = info.get("error")
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=prompt,
        total_cost=_opt_cost(info.get("total_cost")),
        duration_s=_opt_cost(info.get("duration")),
        status=info.get("status"),
        error=err.strip().splitlines()[-1][:300] if isinstance(err, str) and err.strip() else None,
        evaluation_name=info.get("evaluation_name"),
        native_model=_state_model(d.get("transitions")),
        run_date=run_day(info),
    )


_TRACE_TS = re.compile(r"_(\d{8})-\d{6}$")


def run_day(info: dict[str, Any]) -> str | None:
    """The run's day: the timestamp ending ``info.trace_id`` (``..._20240609-123702``), else the date an
    ``evaluation_name`` starts with (``20240616_moatless_...``, SWE-bench's naming); None without either."""
    m = _TRACE_TS.search(str(info.get("trace_id") or ""))
    return day_of(m.group(1)) if m else day_of(info.get("evaluation_name"))


def _state_model(transitions: Any) -> str | None:
    """The model the first transition's state names (``transitions[].state.model``), if any."""
    for tr in transitions if isinstance(transitions, list) else []:
        m = (
            tr.get("state", {}).get("model")
            if isinstance(tr, dict) and isinstance(tr.get("state"), dict)
            else None
        )
        if isinstance(m, str) and m:
            return m
    return None


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): the format's own list (``transitions`` or ``steps``) at the top."""
    h = heads.of(path)
    if h.root != "{" or "schema_version" in h.keys:  # an ATIF trajectory has ``steps`` too
        return False
    return (
        "transitions" in h.keys
        if fmt == "moatless-transitions"
        else ("steps" in h.keys and "transitions" not in h.keys)
    )

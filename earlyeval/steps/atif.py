"""ATIF (Agent Trajectory Interchange Format) documents as steps: one step per agent step (its observation from
its own results, then what user or system steps said before the next one), with the values earlyeval wrote in
``extra.earlyeval`` honoured so that ingest -> export -> ingest is exact.  Steps are the ``atif`` package's
validated models (``earlyeval.ingest.atif`` validates them).  docs/formats.md, "ATIF in Harbor trial folders".
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from earlyeval.core.render import tool_call_text
from earlyeval.core.trajectory import Action, Step, make_step, primary_kind
from earlyeval.steps.chat import join_thought
from earlyeval.steps.values import opt_float, opt_int

if TYPE_CHECKING:  # pragma: no cover - the models' attributes are all this module reads
    import atif

EXT_KEY = "earlyeval"  # key of earlyeval's own values inside ATIF ``extra`` objects


def parts_text(content: Any, counts: Counter) -> str:
    """Text of a message / result content: a string or a list of ATIF ContentParts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    out: list[str] = []
    for p in content:
        if getattr(p, "type", None) == "text":
            out.append(p.text or "")
        else:
            counts["non_text_parts"] += 1
            out.append(f"[{getattr(p, 'type', 'media')}]")
    return "\n".join(out)


def _ext(extra: Any) -> dict:
    v = extra.get(EXT_KEY) if isinstance(extra, dict) else None
    return v if isinstance(v, dict) else {}


def _result_text(r: atif.ObservationResult, counts: Counter) -> str:
    text = parts_text(r.content, counts)
    for ref in r.subagent_trajectory_ref or []:
        counts["subagent_refs"] += 1
        text = join_lines(
            text, f"[subagent trajectory: {ref.trajectory_id or ref.trajectory_path}]"
        )
    return text


def join_lines(*parts: str) -> str:
    return "\n".join(p for p in parts if p)


def agent_step(st: atif.Step, index: int, counts: Counter) -> tuple[Step, dict]:
    """One ATIF agent step as a Step (observation from its own results only) and its overrides."""
    actions: list[Action] = []
    kind_over: list[str | None] = []
    for tc in st.tool_calls or []:
        ext = _ext(tc.extra)
        text = (
            ext["text"]
            if isinstance(ext.get("text"), str)
            else tool_call_text(tc.function_name, tc.arguments)
        )
        actions.append(Action(tool=tc.function_name, text=text))
        kind_over.append(ext.get("kind") if isinstance(ext.get("kind"), str) else None)
    msg = parts_text(st.message, counts)
    if actions:
        thought, final = join_thought(st.reasoning_content, msg), None
    else:
        thought, final = st.reasoning_content or "", msg
    obs = [_result_text(r, counts) for r in (st.observation.results if st.observation else [])]
    m = st.metrics
    tokens: dict[str, Any] = {
        "input_tokens": None,
        "output_tokens": None,
        "cached_tokens": None,
        "cost_usd": None,
    }
    if m is not None:
        tokens = {
            "input_tokens": opt_int(m.prompt_tokens),
            "output_tokens": opt_int(m.completion_tokens),
            "cached_tokens": opt_int(m.cached_tokens),
            "cost_usd": opt_float(m.cost_usd),
        }
    elif st.llm_call_count == 0:
        tokens = {"input_tokens": 0, "output_tokens": 0, "cached_tokens": 0, "cost_usd": 0.0}
    if st.llm_call_count is not None:
        counts["llm_calls"] += st.llm_call_count
    ext = _ext(st.extra)
    err = ext.get("error") if isinstance(ext.get("error"), bool) else None
    step = make_step(
        index,
        actions,
        thought=thought,
        observation="\n".join(obs),
        error=err,
        final_answer=final,
        **tokens,
    )
    for a, k in zip(step.actions, kind_over):
        if k is not None:
            a.kind = k
    if any(k is not None for k in kind_over):
        step.kind = primary_kind(a.kind for a in step.actions)
    return step, ext


def steps_of(docs: list[atif.Trajectory], counts: Counter) -> tuple[list[Step], str]:
    """All agent steps of the segments in order, and the task prompt."""
    prompt_parts: list[str] = []
    steps: list[Step] = []
    overrides: list[dict] = []
    trailing: list[list[str]] = []  # user/system text answering each step
    for doc in docs:
        if doc.subagent_trajectories:
            counts["subagent_trajectories"] += len(doc.subagent_trajectories)
        for st in doc.steps:
            if st.is_copied_context:
                counts["copied_context_steps"] += 1
                if st.source == "user" and not prompt_parts and not steps:
                    prompt_parts.append(parts_text(st.message, counts))
                continue
            if st.source == "agent":
                s, ov = agent_step(st, len(steps), counts)
                steps.append(s)
                overrides.append(ov)
                trailing.append([])
                continue
            text = parts_text(st.message, counts)
            if st.observation:
                text = join_lines(text, *(_result_text(r, counts) for r in st.observation.results))
            if not steps:
                if st.source == "user":
                    prompt_parts.append(text)
                continue  # system prompt / setup before the agent's first turn
            trailing[-1].append(text)
    for s, ov, tail in zip(steps, overrides, trailing):
        if tail:
            s.observation = "\n".join([s.observation, *tail]) if s.observation else "\n".join(tail)
        if isinstance(ov.get("action"), str):
            s.action = ov["action"]
        if isinstance(ov.get("kind"), str):
            s.kind = ov["kind"]
        if isinstance(ov.get("index"), int):
            s.index = ov["index"]
    return steps, "\n".join(p for p in prompt_parts if p)

"""OpenHands ``llm_completions`` logs (CodeActAgent, native tool calling).

The last call's file holds the run: one step per assistant message with its tool calls and their answers;
per-step usage is unknown (only the last call's is in the file). Details: docs/formats.md, "OpenHands
llm_completions".
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require
from earlyeval.core.render import EDITOR_TOOLS, content_text, tool_call_text
from earlyeval.core.trajectory import Action, Trajectory, make_step
from earlyeval.ingest.common import day_of, glob_paths, run_trajectory
from earlyeval.ingest.sniff import Heads

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/llm_completions/*/*.json*"
INLINE_LABELS = False

log = logging.getLogger(__name__)

_TS = re.compile(r"-(\d+(?:\.\d+)?)\.json(?:\.gz)?$")
_EXIT = re.compile(r"\[Command finished with exit code (-?\d+)\]")


def _call_ts(p: Path) -> float:
    m = _TS.search(p.name)
    return float(m.group(1)) if m else float("-inf")


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    """The last call file of each instance folder."""
    groups: dict[Path, list[Path]] = defaultdict(list)
    for p in glob_paths(run_dir, spec.glob):
        if p.is_file():
            groups[p.parent].append(p)
    chosen = []
    earlier = 0
    for folder in sorted(groups):
        files = sorted(groups[folder], key=lambda p: (_call_ts(p), p.name))
        chosen.append(files[-1])
        earlier += len(files) - 1
    if earlier:
        log.warning(
            "%s: kept the last call file of %d instances, ignored %d earlier call files (prefixes of the last)",
            spec.name,
            len(chosen),
            earlier,
        )
    return chosen


def render_tool_call(name: str, arguments: Any) -> Action:
    """One native tool call as an Action (text: the shared ``earlyeval.core.render.tool_call_text``)."""
    return Action(tool=name, text=tool_call_text(name, arguments))


def tool_error(name: str, text: str) -> bool | None:
    """Error flag of one tool result, where the output says."""
    m = _EXIT.search(text)
    if m:
        return int(m.group(1)) != 0
    if name in EDITOR_TOOLS:
        return text.lstrip().startswith("ERROR")
    return None


def _tool_calls(m: dict[str, Any], file: str, where: str) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) of an assistant message's tool calls."""
    tcs = m.get("tool_calls") or []
    if not isinstance(tcs, list):
        raise IngestError(file, f"{where}.tool_calls", f"expected list, got {type(tcs).__name__}")
    out = []
    for j, tc in enumerate(tcs):
        fn = require(tc, "function", dict, file, f"{where}.tool_calls[{j}]")
        name = require(fn, "name", str, file, f"{where}.tool_calls[{j}].function")
        out.append((str(tc.get("id") or ""), name, fn.get("arguments")))
    return out


def steps_from_chat(messages: list, file: str, field: str = "messages") -> tuple[list, str, int]:
    """(steps, prompt, number of auto-continue user prompts) of a native tool-calling chat."""
    prompt = ""
    pending: list[dict[str, Any]] = []
    nudges = 0
    for i, m in enumerate(messages):
        where = f"{field}[{i}]"
        role = require(m, "role", str, file, where)
        if role == "system":
            continue
        if role == "user":
            if not pending and not prompt:
                prompt = content_text(m.get("content"))
            else:
                nudges += 1
            continue
        if role == "assistant":
            calls = _tool_calls(m, file, where)
            pending.append(
                {
                    "thought": content_text(m.get("content")).strip(),
                    "calls": calls,
                    "obs": [],
                    "err": [],
                }
            )
            continue
        if role == "tool":
            if not pending:
                raise IngestError(file, where, "tool message before any assistant message")
            step = pending[-1]
            tid = m.get("tool_call_id")
            names = {c[0]: c[1] for c in step["calls"]}
            name = names.get(tid) or m.get("name") or (step["calls"][0][1] if step["calls"] else "")
            text = content_text(m.get("content"))
            step["obs"].append(text)
            step["err"].append(tool_error(name, text))
    steps = []
    for k, p in enumerate(pending):
        errs = [e for e in p["err"] if e is not None]
        steps.append(
            make_step(
                k,
                [render_tool_call(name, args) for _, name, args in p["calls"]],
                thought=p["thought"],
                observation="\n".join(p["obs"]),
                error=any(errs) if errs else None,
            )
        )
    return steps, prompt, nudges


def _usage(resp: dict[str, Any]) -> dict[str, Any] | None:
    u = resp.get("usage")
    if not isinstance(u, dict):
        return None
    det = u.get("prompt_tokens_details") if isinstance(u.get("prompt_tokens_details"), dict) else {}
    return {
        "input_tokens": u.get("prompt_tokens"),
        "output_tokens": u.get("completion_tokens"),
        "cached_tokens": det.get("cached_tokens"),
    }


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    messages = list(require(d, "messages", list, f))
    resp = d.get("response")
    final = None
    if resp is not None:
        choices = require(resp, "choices", list, f, "response")
        if choices:
            final = require(choices[0], "message", dict, f, "response.choices[0]")
            final = {**final, "role": final.get("role") or "assistant"}
    steps, prompt, nudges = steps_from_chat(messages + ([final] if final else []), f)
    if not steps:
        raise IngestError(f, "messages", "no assistant message: no agent steps")
    task_id = path.parent.name
    earlier = sum(
        1 for p in path.parent.iterdir() if p.is_file() and p != path and _TS.search(p.name)
    )
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=prompt,
        llm_model=resp.get("model") if isinstance(resp, dict) else None,
        run_date=day_of(d.get("timestamp")),  # the call's own time (unix seconds): the run's day
        last_call_cost=d.get("cost") if isinstance(d.get("cost"), (int, float)) else None,
        last_call_usage=_usage(resp) if isinstance(resp, dict) else None,
        auto_continue_prompts=nudges,
        earlier_call_files=earlier,
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): one LLM call as logged, ``messages`` first (then ``response``,
    ``args``, ``kwargs``, ``timestamp``, ``cost``: often past the prefix)."""
    h = heads.of(path)
    return h.root == "{" and h.keys[:1] == ("messages",) and "pass" not in h.keys

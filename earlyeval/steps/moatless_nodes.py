"""Moatless Tools 0.0.4 nodes as steps: one executed node is one step (its action, the scaffold's own test run
after an edit as a second action, the observation's message, the usage summed over its completions).  Which
nodes make the run (the path to the last node) is the reader's: ``earlyeval.ingest.moatless_nodes``.
docs/formats.md, "Moatless Tools 0.0.4".
"""

from __future__ import annotations

import re
from typing import Any

from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import require
from earlyeval.core.render import tool_call_text
from earlyeval.core.trajectory import Action, Step, make_step

# action_args_class (its last part) -> the function the model called, snake-cased like the older readers' tools
ARGS_TOOL: dict[str, str] = {
    "EditActionArguments": "str_replace_editor",
    "SemanticSearchArgs": "semantic_search",
    "FindClassArgs": "find_class",
    "FindFunctionArgs": "find_function",
    "FindCodeSnippetArgs": "find_code_snippet",
    "ViewCodeArgs": "view_code",
    "RequestMoreContextArgs": "request_more_context",
    "FinishArgs": "finish",
    "RejectArgs": "reject",
}
_NOT_ARGS = ("scratch_pad", "action_args_class")
_ARGS_SUFFIX = re.compile(r"(ActionArguments|Arguments|Args)$")
_TEST_RUN = re.compile(r"^Running \d+ tests? in the following files:\n((?:[ \t]*\* .*\n?)+)", re.M)


def tool_name(args_class: str) -> str:
    """The tool of an ``action_args_class`` (table above; else the class name without its suffix, snake-cased)."""
    last = args_class.rsplit(".", 1)[-1]
    if last in ARGS_TOOL:
        return ARGS_TOOL[last]
    base = _ARGS_SUFFIX.sub("", last) or last
    return re.sub(r"(?<!^)(?=[A-Z])", "_", base).lower()


def test_files_run(observation: str) -> list[str] | None:
    """The test files of the scaffold's own test run in an observation, or None when it ran none."""
    m = _TEST_RUN.search(observation) if "tests in the following files" in observation else None
    if m is None:
        return None
    return [ln.strip()[1:].strip() for ln in m.group(1).splitlines() if ln.strip().startswith("*")]


def opt_dict(node: dict[str, Any], key: str, file: str, where: str) -> dict[str, Any] | None:
    v = node.get(key)
    if v is not None and not isinstance(v, dict):
        raise IngestError(file, f"{where}.{key}", f"expected dict, got {type(v).__name__}")
    return v


def node_usage(completions: dict[str, Any] | None, file: str, where: str) -> dict[str, Any]:
    """The node's usage summed over its completions (module doc); a value any completion lacks is None,
    and so is every value of a node with no completion."""
    keys = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")
    calls = {k: c for k, c in (completions or {}).items() if c is not None}
    if not calls:
        return dict.fromkeys(keys)
    tot: dict[str, Any] = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cached_tokens": 0,
        "cost_usd": 0.0,
    }
    for name, c in calls.items():
        cw = f"{where}.completions.{name}"
        if not isinstance(c, dict):
            raise IngestError(file, cw, f"expected dict, got {type(c).__name__}")
        u = c.get("usage")
        if u is not None and not isinstance(u, dict):
            raise IngestError(file, f"{cw}.usage", f"expected dict, got {type(u).__name__}")
        u = u or {}
        prompt, cached = (
            _number(u, k, int, file, f"{cw}.usage") for k in ("prompt_tokens", "cached_tokens")
        )
        got = {
            "input_tokens": prompt + cached if prompt is not None and cached is not None else None,
            "output_tokens": _number(u, "completion_tokens", int, file, f"{cw}.usage"),
            "cached_tokens": cached,
            "cost_usd": _number(u, "completion_cost", float, file, f"{cw}.usage"),
        }
        for k in keys:
            tot[k] = None if tot[k] is None or got[k] is None else tot[k] + got[k]
    return tot


def _number(d: dict[str, Any], key: str, typ: type, file: str, where: str) -> Any:
    """``d[key]`` as a count (int) or a cost (float); absent or null is None (unknown), another type an error.
    Impossible values (negative, huge) are left to the store's check, which names the step."""
    v = d.get(key)
    if v is None:
        return None
    ok = (int,) if typ is int else (int, float)
    if not isinstance(v, ok) or isinstance(v, bool):
        raise IngestError(file, f"{where}.{key}", f"expected a number, got {type(v).__name__}")
    return typ(v)


def node_step(
    index: int, node: dict[str, Any], action: dict[str, Any], file: str, where: str
) -> Step:
    """The Step of one executed node (module doc)."""
    cls = require(action, "action_args_class", str, file, f"{where}.action")
    thought = action.get("scratch_pad")
    if thought is not None and not isinstance(thought, str):
        raise IngestError(
            file, f"{where}.action.scratch_pad", f"expected str, got {type(thought).__name__}"
        )
    tool = tool_name(cls)
    args = {k: v for k, v in action.items() if k not in _NOT_ARGS}
    acts = [Action(tool=tool, text=tool_call_text(tool, args))]
    obs = opt_dict(node, "observation", file, where)
    message = ""
    if obs is not None:
        message = obs.get("message")
        if message is not None and not isinstance(message, str):
            raise IngestError(
                file, f"{where}.observation.message", f"expected str, got {type(message).__name__}"
            )
        message = message or ""
        tests = test_files_run(message)
        if tests is not None:
            acts.append(Action(tool="run_tests", text=" ".join(tests), kind="test"))
    correction = obs.get("expect_correction") if obs is not None else None
    return make_step(
        index,
        acts,
        thought=(thought or "").strip(),
        observation=message,
        error=bool(correction) if isinstance(correction, bool) else None,
        **node_usage(opt_dict(node, "completions", file, where), file, where),
    )

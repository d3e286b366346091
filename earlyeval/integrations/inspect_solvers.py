"""inspect_ai extension module: registers the ``earlyeval/early_stop`` solver (and approver).

inspect loads it through the package's ``inspect_ai`` entry point when a name in the ``earlyeval/`` namespace is
looked up, so no Python is needed. The solver's ``-S`` arguments: docs/integrations.md, "inspect_ai".
"""

from __future__ import annotations

from typing import Any

from inspect_ai.agent import AgentState, react
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, bash, bash_session, python, text_editor, think

from earlyeval.integrations.config import monitor_from_config, split_config
from earlyeval.integrations.inspect_ai import EarlyStopOnContinue, task_of

# the approver ``earlyeval/early_stop`` (``--approval policy.yaml``): registered by importing its module here,
# the module inspect loads through the entry point
from earlyeval.integrations.inspect_approver import early_stop as early_stop_approver

BUILTIN_TOOLS = {
    "bash": bash,
    "python": python,
    "text_editor": text_editor,
    "bash_session": bash_session,
    "think": think,
}
DEFAULT_TOOLS = ("bash", "text_editor")


@solver
def early_stop(
    model: str,
    thresholds: Any = None,
    tasks: str | None = None,
    strict: bool = False,
    tools: str | list[str] | None = None,
    submit: bool = True,
    halt_as_limit: bool = True,
    halt_on: str = "failure",
) -> Solver:
    """react() that earlyeval's monitor stops when it predicts the outcome (module doc)."""
    mon_cfg, _ = split_config(
        {
            "model": model,
            "thresholds": thresholds,
            "tasks": tasks,
            "strict": strict or None,
            "halt_on": halt_on,
        },
        {},
        "earlyeval/early_stop",
    )
    # load (and check) the model once, before any sample
    monitor_from_config(mon_cfg, "earlyeval/early_stop")
    named = _tool_names(tools)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        on_continue = EarlyStopOnContinue(
            lambda: monitor_from_config(mon_cfg, "earlyeval/early_stop"),
            task=_task_of(state),
            run_id=f"{state.sample_id}/epoch-{state.epoch}",
            metadata=state.metadata,
            submit=submit,
            halt_as_limit=halt_as_limit,
        )
        agent = react(
            tools=_tools(state, named), on_continue=on_continue, submit=None if submit else False
        )
        agent_state = AgentState(messages=state.messages)
        try:  # as inspect_ai.agent.as_solver does: the messages reach the TaskState also when a limit ends the run
            agent_state = await agent(agent_state)
        finally:
            state.messages = agent_state.messages
            if agent_state.output:
                state.output = agent_state.output
        return state

    return solve


def _tool_names(tools: str | list[str] | None) -> list[str] | None:
    if tools is None:
        return None
    names = [
        t.strip()
        for t in (tools.split(",") if isinstance(tools, str) else tools)
        if t and t.strip()
    ]
    unknown = [n for n in names if n not in BUILTIN_TOOLS]
    if unknown:
        raise ValueError(
            f"earlyeval/early_stop: tools={unknown} unknown; built-in tools: {sorted(BUILTIN_TOOLS)} "
            "(a task's own tools come from its setup, use_tools(...))"
        )
    return names


def _tools(state: TaskState, named: list[str] | None) -> list[Tool]:
    own = list(state.tools)
    names = named if named is not None else ([] if own else list(DEFAULT_TOOLS))
    return own + [BUILTIN_TOOLS[n]() for n in names]


def _task_of(state: TaskState) -> dict[str, Any]:
    return task_of(state.sample_id, state.metadata, state.input_text)


__all__ = ["BUILTIN_TOOLS", "early_stop", "early_stop_approver"]

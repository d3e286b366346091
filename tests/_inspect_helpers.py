"""Real inspect_ai evals, offline: ``mockllm/model`` with scripted outputs, a tiny shell tool, tiny model dirs.

Shared by the approver, ``inspect-eval`` reader and solver tests.  Importing this module needs inspect_ai
(callers ``pytest.importorskip("inspect_ai")`` first)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import _paths
from _monitor_helpers import ALWAYS_FAIL as ALWAYS_FAIL  # re-exported for the approver tests
from _monitor_helpers import ALWAYS_SUCCEED, constant_model
from _monitor_helpers import NEVER_HALT as NEVER  # noqa: F401 (re-exported)
from inspect_ai import Task, eval
from inspect_ai.agent import react
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageAssistant, ModelOutput, get_model
from inspect_ai.scorer import match
from inspect_ai.tool import ToolCall, ToolError, tool

M = "mockllm/model"
# ALWAYS_FAIL / ALWAYS_SUCCEED / NEVER (tests/_monitor_helpers.py): on tiny_model's constant probability, which
# samples halt, and at which step, is known in advance

SHELL = {
    "ls": "mod.py\ntests/",
    "cat mod.py": "x = 41",
    "pytest": "1 failed, 2 passed",
    "echo x=42 > mod.py": "",
}


def offline_token_count(monkeypatch) -> None:
    """mockllm counts tokens with tiktoken, which downloads its table on first use: count words (offline)."""
    from inspect_ai.model._providers.mockllm import MockLLM

    async def count_text_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    monkeypatch.setattr(MockLLM, "count_text_tokens", count_text_tokens)


@tool
def shell():
    async def execute(cmd: str) -> str:
        """Run a shell command.

        Args:
            cmd: The command.
        """
        if cmd not in SHELL:
            raise ToolError(f"command not found: {cmd}")
        return SHELL[cmd]

    return execute


def call(cmd: str, text: str | None = None, tool: str = "shell") -> ModelOutput:
    return ModelOutput.for_tool_call(
        M, tool, {"cmd": cmd}, content=text if text is not None else f"I will run {cmd}"
    )


def calls(*cmds: str) -> ModelOutput:
    """One assistant message with several tool calls (run in parallel by inspect)."""
    tcs = [
        ToolCall(id=f"par_{i}_{c.replace(' ', '_')}", function="shell", arguments={"cmd": c})
        for i, c in enumerate(cmds)
    ]
    return ModelOutput.from_message(
        ChatMessageAssistant(content="two at once", tool_calls=tcs, model=M)
    )


def say(text: str) -> ModelOutput:
    return ModelOutput.from_content(M, text)


def submit(answer: str = "42") -> ModelOutput:
    return ModelOutput.for_tool_call(M, "submit", {"answer": answer})


FAILING = [call("ls"), call("cat mod.py"), call("pytest"), submit()]


def tiny_model(path: Path, thresholds: dict[str, Any]) -> Path:
    """A behaviour-only model dir (``constant_model``) with these thresholds: P(success) 0.8 under ALWAYS_SUCCEED,
    else 0.2, at every step."""
    return constant_model(path, 0.8 if thresholds == ALWAYS_SUCCEED else 0.2, thresholds)


def react_task(sample_id: str = "demo-1", target: str = "42", **task_kw: Any) -> Task:
    """A task that ships its own agent: react() with the shell tool."""
    return Task(
        dataset=[
            Sample(input="Make x 42.", target=target, id=sample_id, metadata={"repo": "demo"})
        ],
        solver=react(tools=[shell()]),
        scorer=match(),
        **task_kw,
    )


def run_eval(
    task: Task,
    outputs: list[ModelOutput],
    log_dir: Path,
    approval: Any = None,
    log_format: str = "eval",
):
    """One real eval; returns (log, its only sample)."""
    [log] = eval(
        task,
        model=get_model(M, custom_outputs=list(outputs)),
        log_dir=str(log_dir),
        display="none",
        log_format=log_format,
        approval=approval,
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    return log, sample


def policy(path: Path, model: Path, name: str = "earlyeval/early_stop", **keys: Any) -> Path:
    """An approval policy file naming the approver, as a user writes it."""
    lines = [
        "approvers:",
        f"  - name: {name}",
        "    tools: '*'",
        f"    model: {json.dumps(str(model))}",
    ]
    lines += [f"    {k}: {json.dumps(v)}" for k, v in keys.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def dist_info(root: Path) -> Path:
    """A dist-info for this checkout, as ``pip install -e .`` writes it: METADATA, entry points, direct_url
    (so a subprocess finds earlyeval's inspect_ai entry point as declared in pyproject.toml)."""
    py = tomllib.loads((_paths.REPO / "pyproject.toml").read_text())["project"]
    d = root / f"earlyeval-{py['version']}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: earlyeval\nVersion: {py['version']}\n"
    )
    groups = {"console_scripts": py.get("scripts", {}), **py.get("entry-points", {})}
    (d / "entry_points.txt").write_text(
        "".join(
            f"[{g}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
            for g, eps in groups.items()
        )
    )
    (d / "direct_url.json").write_text(
        json.dumps({"url": _paths.REPO.as_uri(), "dir_info": {"editable": True}})
    )
    return root


# an inspect task file for the CLI tests: a mockllm model scripted to run ls, cat, pytest, then submit 42, with a
# `shell` tool; `agent_import` / `runs` say how the task runs its tools (react, or the solver's use_tools)
_TASK_FILE = '''
from inspect_ai import Task, task
@IMPORT@
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, get_model
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.scorer import match
from inspect_ai.tool import tool

async def _words(self, text):  # offline: tiktoken would download its table
    return max(1, len(text.split()))
MockLLM.count_text_tokens = _words

@tool
def shell():
    async def execute(cmd: str) -> str:
        """Run a shell command.

        Args:
            cmd: The command.
        """
        return "ok"
    return execute

def _call(cmd):
    return ModelOutput.for_tool_call("mockllm/model", "shell", {"cmd": cmd}, content="run " + cmd)

@task
def demo():
    outs = [_call("ls"), _call("cat mod.py"), _call("pytest"), ModelOutput.for_tool_call("mockllm/model", "submit", {"answer": "42"})]
    return Task(dataset=[Sample(input="Make x 42.", target="42", id="demo-1")], @RUNS@, scorer=match(),
                model=get_model("mockllm/model", custom_outputs=outs))
'''


def task_file(agent_import: str, runs: str) -> str:
    return _TASK_FILE.replace("@IMPORT@", agent_import).replace("@RUNS@", runs)

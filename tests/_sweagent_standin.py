"""A minimal, faithful stand-in for SWE-agent 1.x's agent loop (SWE-agent is not installable here).

Mirrors, from the published source of SWE-agent/SWE-agent:
* ``sweagent/types.py``: ``StepOutput`` fields, ``AgentInfo`` as a plain dict;
* ``sweagent/agent/hooks/abstract.py``: ``CombinedAgentHook`` forwarding (including
  that ``on_setup_done`` is not forwarded to the hooks);
* ``sweagent/agent/agents.py`` ``DefaultAgent``: ``add_hook`` calls ``on_init``;
  ``run()`` = ``setup()``, ``on_run_start()``, ``while not step_output.done: step();
  save_trajectory()``, ``on_run_done``; ``step()`` = ``on_step_start``, forward
  (model query, ``on_actions_generated``, ``handle_action`` with
  ``on_action_started``/``on_action_executed``, ``handle_submission``), history
  (``add_step_to_history``: assistant turns with their tool calls, ``tool`` messages),
  ``info`` updates (submission, exit_status, model_stats), trajectory, then
  ``on_step_done(step=step_output, info=self.info)`` with the returned object;
  ``attempt_autosubmission_after_error`` (copy, ``done=True``, run the
  submission command, ``handle_submission(force_submission=True)``, status
  ``submitted (<exit_status>)`` when a patch was found).

The environment runs commands with bash in a temporary directory that stands
for the container; ``/root/model.patch`` is ``<dir>/model.patch``.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel

SUBMISSION_TOKEN = "<<SWE_AGENT_SUBMISSION>>"
SUBMIT_CMD = f"git add -A && git diff --cached > model.patch; echo '{SUBMISSION_TOKEN}'"


class StepOutput(BaseModel):
    query: list[dict] = [{}]
    thought: str = ""
    action: str = ""
    output: str = ""
    observation: str = ""
    execution_time: float = 0.0
    done: bool = False
    exit_status: int | str | None = None
    submission: str | None = None
    state: dict[str, str] = {}
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_ids: list[str] | None = None
    thinking_blocks: list[dict[str, Any]] | None = None
    extra_info: dict[str, Any] = {}


class InstanceStats(BaseModel):
    instance_cost: float = 0
    tokens_sent: int = 0
    tokens_received: int = 0
    api_calls: int = 0


class CombinedAgentHook:
    def __init__(self):
        self.hooks: list = []

    def add_hook(self, hook):
        self.hooks.append(hook)

    def on_init(self, *, agent):
        for h in self.hooks:
            h.on_init(agent=agent)

    def on_run_start(self):
        for h in self.hooks:
            h.on_run_start()

    def on_step_start(self):
        for h in self.hooks:
            h.on_step_start()

    def on_actions_generated(self, *, step):
        for h in self.hooks:
            h.on_actions_generated(step=step)

    def on_action_started(self, *, step):
        for h in self.hooks:
            h.on_action_started(step=step)

    def on_action_executed(self, *, step):
        for h in self.hooks:
            h.on_action_executed(step=step)

    def on_step_done(self, *, step, info):
        for h in self.hooks:
            h.on_step_done(step=step, info=info)

    def on_run_done(self, *, trajectory, info):
        for h in self.hooks:
            h.on_run_done(trajectory=trajectory, info=info)

    def on_setup_attempt(self):
        for h in self.hooks:
            h.on_setup_attempt()

    def on_model_query(self, *, messages, agent):
        for h in self.hooks:
            h.on_model_query(messages=messages, agent=agent)

    def on_query_message_added(self, **kwargs):
        for h in self.hooks:
            h.on_query_message_added(**kwargs)

    def on_setup_done(self):  # as upstream: not forwarded
        return None

    def on_tools_installation_started(self):
        for h in self.hooks:
            h.on_tools_installation_started()


class ProblemStatement:
    def __init__(self, id: str, text: str):
        self.id = id
        self._text = text

    def get_problem_statement(self) -> str:
        return self._text


class Env:
    def __init__(self, root: Path):
        self.root = root

    def communicate(self, input: str, timeout: int = 30, check: str = "ignore") -> str:
        p = subprocess.run(input, shell=True, cwd=self.root, capture_output=True, text=True, timeout=timeout)
        return p.stdout + p.stderr

    def execute_command(self, command: str, check: bool = False, cwd: str | None = None) -> None:
        subprocess.run(command, shell=True, cwd=self.root, check=check)

    def read_file(self, path: str, encoding: str = "utf-8", errors: str = "strict") -> str:
        return (self.root / Path(path).name).read_text(encoding=encoding, errors=errors)


class ScriptedModel:
    """Returns ``{"message", "tool_calls"}`` like SWE-agent's models; bills tokens per call."""

    def __init__(self, outputs: list[dict]):
        self.outputs = list(outputs)
        self.stats = InstanceStats()
        self.n_queries = 0

    def query(self, history) -> dict:
        out = self.outputs[self.n_queries]
        self.n_queries += 1
        self.stats.api_calls += 1
        self.stats.tokens_sent += 100 * self.n_queries
        self.stats.tokens_received += 10
        self.stats.instance_cost += 0.01
        return out


class DefaultAgent:
    name = "main"

    def __init__(self, model: ScriptedModel):
        self.model = model
        self.history: list[dict] = []
        self._trajectory: list[dict] = []
        self.info: dict[str, Any] = {}
        self._chook = CombinedAgentHook()
        self._env: Env | None = None
        self._problem_statement: ProblemStatement | None = None
        self.traj_path: Path | None = None

    @property
    def trajectory(self):
        return self._trajectory

    def add_hook(self, hook) -> None:
        hook.on_init(agent=self)
        self._chook.add_hook(hook)

    def setup(self, env: Env, problem_statement: ProblemStatement, output_dir: Path) -> None:
        output_dir.mkdir(parents=True, exist_ok=True)
        self._problem_statement = problem_statement
        self._env = env
        self.traj_path = output_dir / (problem_statement.id + ".traj")
        self._chook.on_tools_installation_started()
        self._chook.on_setup_attempt()
        self.info = {}
        self.history.append({"role": "user", "content": problem_statement.get_problem_statement(), "agent": self.name})
        self._chook.on_setup_done()

    # -- forward ---------------------------------------------------------------
    def handle_submission(self, step: StepOutput, *, observation: str = "", force_submission: bool = False) -> StepOutput:
        step = step.model_copy(deep=True)
        is_submission = SUBMISSION_TOKEN in (observation or step.observation)
        if is_submission or force_submission:
            try:
                submission = self._env.read_file("/root/model.patch", encoding="utf-8", errors="backslashreplace")
            except FileNotFoundError:
                return step
            step.submission = submission if submission.strip() != "" else None
            step.observation = submission
            if not step.exit_status:
                step.exit_status = "submitted"
            elif step.submission:
                step.exit_status = f"submitted ({step.exit_status})"
            step.done = True
        return step

    def handle_action(self, step: StepOutput) -> StepOutput:
        if step.action.strip() == "exit":
            step.done, step.observation, step.exit_status = True, "Exited", "exit_command"
            return step
        self._chook.on_action_started(step=step)
        run_action = SUBMIT_CMD if step.action.strip() == "submit" else step.action
        step.observation = self._env.communicate(input=run_action)
        self._chook.on_action_executed(step=step)
        return self.handle_submission(step)

    def forward(self, history) -> StepOutput:
        step = StepOutput()
        step.query = copy.deepcopy(history)
        self._chook.on_model_query(messages=history, agent=self.name)
        output = self.model.query(history)
        step.output = output["message"]
        if output.get("tool_calls"):
            fn = output["tool_calls"][0]["function"]
            args = json.loads(fn["arguments"])
            step.thought = output["message"]
            step.action = fn["name"] if fn["name"] == "submit" else (args.get("command") if fn["name"] == "bash" else f"{fn['name']} {args.get('command', '')} {args.get('path', '')}".strip())
            step.tool_call_ids = [c["id"] for c in output["tool_calls"]]
            step.tool_calls = output["tool_calls"]
        else:
            step.thought, _, step.action = output["message"].partition("\n```\n")
            step.action = step.action.rstrip("`\n")
        self._chook.on_actions_generated(step=step)
        return self.handle_action(step)

    def attempt_autosubmission_after_error(self, step: StepOutput) -> StepOutput:
        step = step.model_copy(deep=True)
        step.done = True
        self._env.execute_command("git add -A && git diff --cached > model.patch", check=True, cwd="/")
        step = self.handle_submission(step, observation="", force_submission=True)
        if step.submission:
            step.observation = "Exited (autosubmitted)"
        return step

    # -- loop --------------------------------------------------------------------
    def step(self) -> StepOutput:
        self._chook.on_step_start()
        step_output = self.forward(self.history)
        self.add_step_to_history(step_output)
        self.info["submission"] = step_output.submission
        self.info["exit_status"] = step_output.exit_status
        self.info["model_stats"] = self.model.stats.model_dump()
        self._trajectory.append({"action": step_output.action, "observation": step_output.observation,
                                 "response": step_output.output, "thought": step_output.thought})
        self._chook.on_step_done(step=step_output, info=self.info)
        return step_output

    def add_step_to_history(self, step: StepOutput) -> None:
        """As upstream: the assistant turn with its tool calls, then the observation in the default
        function-calling template (``OBSERVATION:\n...``), a ``tool`` message when the turn called a tool."""
        self.history.append({"role": "assistant", "content": step.output, "thought": step.thought, "action": step.action,
                             "agent": self.name, "tool_calls": step.tool_calls, "message_type": "action",
                             "thinking_blocks": step.thinking_blocks})
        item: dict[str, Any] = {"role": "user", "content": f"OBSERVATION:\n{step.observation}", "agent": self.name,
                                "message_type": "observation"}
        if step.tool_call_ids:
            item["role"], item["tool_call_ids"] = "tool", step.tool_call_ids
        self.history.append(item)

    def get_trajectory_data(self) -> dict[str, Any]:
        return copy.deepcopy({"trajectory": self.trajectory, "history": self.history, "info": self.info})

    def save_trajectory(self) -> None:
        self.traj_path.write_text(json.dumps(self.get_trajectory_data(), indent=2))

    def run(self, env: Env, problem_statement: ProblemStatement, output_dir: Path):
        self.setup(env=env, problem_statement=problem_statement, output_dir=output_dir)
        self._chook.on_run_start()
        step_output = StepOutput()
        while not step_output.done:
            step_output = self.step()
            self.save_trajectory()
        self._chook.on_run_done(trajectory=self.trajectory, info=self.info)
        data = self.get_trajectory_data()
        return {"info": data["info"], "trajectory": data["trajectory"]}

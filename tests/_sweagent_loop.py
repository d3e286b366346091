"""The real SWE-agent 1.1.0 loop, offline, for the adapter tests: ``DefaultAgent`` with SWE-agent's
``PredeterminedTestModel`` on an ``SWEEnv`` with SWE-ReX's dummy deployment.

As SWE-agent's own tests do (``dummy_env.deployment.runtime = RuntimeRaisesFirst()``), the dummy deployment's
runtime is swapped, here for :class:`RepoRuntime`: SWE-ReX's ``DummyRuntime`` whose commands really run
(bash, in a temporary git repository) and whose files under ``/root/`` (where SWE-agent's submission
writes ``/root/model.patch``) live in a temporary folder, so that a submission is a real ``git diff``.
Everything else -- parsing, the step loop, hooks, ``handle_submission``, autosubmission, the ``.traj``
file -- is SWE-agent's own code.  Importing this module needs SWE-agent (``make install-sweagent``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# litellm, imported by sweagent: no network fetch
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from sweagent.agent.agents import DefaultAgent, DefaultAgentConfig  # noqa: E402
from sweagent.agent.models import (  # noqa: E402
    InstanceStats,
    InstantEmptySubmitModelConfig,
    PredeterminedTestModel,
)
from sweagent.agent.problem_statement import TextProblemStatement  # noqa: E402
from sweagent.environment.swe_env import EnvironmentConfig, SWEEnv  # noqa: E402
from sweagent.tools.parsing import FunctionCallingParser, ThoughtActionParser  # noqa: E402
from sweagent.tools.tools import ToolConfig  # noqa: E402
from swerex.deployment.config import DummyDeploymentConfig  # noqa: E402
from swerex.runtime.abstract import (  # noqa: E402
    BashAction,
    BashObservation,
    CommandResponse,
    ReadFileResponse,
    WriteFileResponse,
)
from swerex.runtime.dummy import DummyRuntime  # noqa: E402

SUBMIT = "git add -A && git diff --cached > /root/model.patch && echo '<<SWE_AGENT_SUBMISSION>>'"  # what `submit` runs


class RepoRuntime(DummyRuntime):
    """SWE-ReX's dummy runtime, except that commands run in ``repo`` and ``/root/...`` paths map into ``root``."""

    def __init__(self, repo: Path, root: Path):
        super().__init__()
        self.repo, self.root = Path(repo).resolve(), Path(root).resolve()
        (self.root / "root").mkdir(parents=True, exist_ok=True)

    def _map(self, text: str) -> str:
        return text.replace("/root/", f"{self.root}/root/")

    def _run(self, command: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", "-c", self._map(command)],
            cwd=self.repo,
            capture_output=True,
            text=True,
            timeout=120,
        )

    async def run_in_session(self, action):
        if not isinstance(action, BashAction):  # an interrupt: nothing runs in the background here
            return BashObservation()
        r = self._run(action.command)
        return BashObservation(output=(r.stdout + r.stderr).rstrip("\n"), exit_code=r.returncode)

    async def execute(self, command):
        r = self._run(
            command.command if isinstance(command.command, str) else " ".join(command.command)
        )
        return CommandResponse(stdout=r.stdout, stderr=r.stderr, exit_code=r.returncode)

    async def read_file(self, request):
        return ReadFileResponse(
            content=Path(self._map(str(request.path))).read_text(errors="backslashreplace")
        )

    async def write_file(self, request):
        p = Path(self._map(str(request.path)))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(request.content)
        return WriteFileResponse()


class CountingModel(PredeterminedTestModel):
    """PredeterminedTestModel whose ``stats`` follow the calls: per-call tokens and cost (``usage="per_step"``), the
    totals in one go on the last call (``"totals"``), or nothing known (``"none"``: counts None)."""

    def __init__(
        self,
        outputs: list,
        usage: str = "per_step",
        per_call: tuple[int, int, float] = (200, 10, 0.01),
    ):
        super().__init__(outputs)
        self.usage, self.per_call = usage, per_call
        if usage == "none":
            self.stats = InstanceStats.model_construct(
                instance_cost=None, tokens_sent=None, tokens_received=None, api_calls=0
            )

    def query(self, *args, **kwargs) -> dict:
        out = super().query(*args, **kwargs)
        s, r, c = self.per_call
        n = self._idx + 1
        if self.usage == "per_step":
            self.stats = InstanceStats(
                instance_cost=c * n, tokens_sent=s * n, tokens_received=r * n, api_calls=n
            )
        elif self.usage == "totals" and n == len(self._outputs):
            k = len(self._outputs)
            self.stats = InstanceStats(
                instance_cost=c * k, tokens_sent=s * k, tokens_received=r * k, api_calls=k
            )
        return out


def tool_call(i: int, command: str, thought: str) -> dict:
    """One function-calling reply that runs ``command`` with SWE-agent's ``bash`` tool."""
    import json

    return {
        "message": thought,
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": "bash", "arguments": json.dumps({"command": command})},
            }
        ],
    }


def git_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)
    subprocess.run(
        "git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm init",
        shell=True,
        cwd=path,
        check=True,
    )
    return path


def agent_and_env(
    repo: Path,
    sandbox: Path,
    outputs: list,
    *,
    function_calling: bool = True,
    usage: str = "per_step",
) -> tuple[DefaultAgent, SWEEnv]:
    """A real ``DefaultAgent`` (bash tool, no tool bundles) with a ``CountingModel`` and a started ``SWEEnv`` on
    SWE-ReX's dummy deployment whose runtime is a :class:`RepoRuntime` on ``repo``."""
    parser = FunctionCallingParser() if function_calling else ThoughtActionParser()
    agent = DefaultAgent.from_config(
        DefaultAgentConfig(
            model=InstantEmptySubmitModelConfig(), tools=ToolConfig(parse_function=parser)
        )
    )
    agent.model = CountingModel(outputs, usage=usage)
    env = SWEEnv.from_config(EnvironmentConfig(deployment=DummyDeploymentConfig(), repo=None))
    env.deployment.runtime = RepoRuntime(repo, sandbox)  # type: ignore[assignment]
    env.start()
    return agent, env


def problem(task_id: str, text: str) -> TextProblemStatement:
    return TextProblemStatement(text=text, id=task_id)

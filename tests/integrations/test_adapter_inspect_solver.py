"""inspect_ai switched on without Python: the registered solver ``earlyeval/early_stop``, found by name
through the package's ``inspect_ai`` entry point, in a real ``eval`` with ``mockllm/model`` and a tiny
model directory trained here.  The model dirs' thresholds are the halting rule's ends (0 = halt at the
first eligible step, 2 = never), so which samples halt is known in advance; the probabilities are the
model's own.

* in process: ``eval(task, solver=SolverSpec("earlyeval/early_stop", {...}))`` (inspect's registry lookup);
* the real CLI, ``python -m inspect_ai eval task.py --solver earlyeval/early_stop -S model=...``, in a
  subprocess whose ``sys.path`` has a dist-info for earlyeval written from this repo's pyproject.toml
  (its entry points, and ``direct_url.json`` as ``pip install -e .`` writes it): the entry point as declared.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import _paths
import pytest

pytest.importorskip("inspect_ai")

from _inspect_helpers import dist_info, task_file  # noqa: E402
from _monitor_helpers import (  # noqa: E402
    ALWAYS_FAIL,
    NEVER_HALT,
    constant_model,
)
from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ChatMessageAssistant, ModelOutput, get_model  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from inspect_ai.solver import SolverSpec, use_tools  # noqa: E402
from inspect_ai.tool import tool  # noqa: E402
from inspect_ai.util import registry_info  # noqa: E402

# in process, register the solver by importing the extension module (this test venv's earlyeval
# metadata may predate the entry point); the CLI test below resolves it through the entry point alone
from earlyeval.integrations.inspect_solvers import early_stop as _early_stop  # noqa: E402

# "earlyeval/early_stop" when earlyeval is installed (pip install -e .: inspect namespaces an installed
# package's objects), "early_stop" when it is only on sys.path (e.g. a venv without it)
NAME = registry_info(_early_stop).name

REPO = _paths.REPO
M = "mockllm/model"
NEVER = NEVER_HALT


@pytest.fixture(autouse=True)
def _offline_token_count(monkeypatch):
    """mockllm counts tokens with tiktoken, which downloads its table on first use: count words (offline)."""
    from inspect_ai.model._providers.mockllm import MockLLM

    async def count_text_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    monkeypatch.setattr(MockLLM, "count_text_tokens", count_text_tokens)


def _model(path: Path, th: dict) -> Path:
    # P(success) 0.2 at every step: ALWAYS_FAIL halts at step 2, NEVER never
    return constant_model(path, 0.2, th)


@tool
def shell():
    async def execute(cmd: str) -> str:
        """Run a shell command.

        Args:
            cmd: The command.
        """
        return {"ls": "mod.py", "cat mod.py": "x = 41", "pytest": "1 failed"}.get(cmd, "")

    return execute


def _call(cmd: str) -> ModelOutput:
    return ModelOutput.for_tool_call(M, "shell", {"cmd": cmd}, content=f"I will run {cmd}")


OUTPUTS = [
    _call("ls"),
    _call("cat mod.py"),
    _call("pytest"),
    ModelOutput.for_tool_call(M, "submit", {"answer": "42"}),
]


def _eval(tmp_path, model_dir: Path, **args):
    task = Task(
        dataset=[
            Sample(
                input="Make x 42.",
                target="42",
                id="demo-1",
                metadata={"patch": "diff --git a/mod.py b/mod.py"},
            )
        ],
        setup=use_tools(shell()),
        scorer=match(),
    )
    [log] = eval(
        task,
        model=get_model(M, custom_outputs=list(OUTPUTS)),
        log_dir=str(tmp_path / "logs"),
        display="none",
        log_format="json",
        solver=SolverSpec(NAME, a := {"model": str(model_dir), **args}, args_passed=a),
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    return log, sample


def test_registered_solver_halts_and_records_a_custom_sample_limit(tmp_path):
    log, sample = _eval(tmp_path, _model(tmp_path / "m", ALWAYS_FAIL))
    assert log.eval.solver == NAME and NAME.endswith("early_stop")
    assert sample.limit is not None and sample.limit.type == "custom" and sample.limit.limit == 2
    assert sample.limit.reason.startswith(
        "earlyeval halted the run after step 1: PredictedFailure (p_success="
    )
    ee = sample.metadata["earlyeval"]
    assert ee["exit_status"] == "PredictedFailure" and ee["thresholds"] == ALWAYS_FAIL
    assert all(0.0 < h["p_success"] < 1.0 for h in ee["history"]) and len(ee["history"]) == 2
    assert sample.store["earlyeval"] == ee
    calls = [
        tc.arguments
        for m in sample.messages
        if isinstance(m, ChatMessageAssistant)
        for tc in (m.tool_calls or [])
    ]
    assert calls == [{"cmd": "ls"}, {"cmd": "cat mod.py"}]  # pytest and submit were never requested
    assert sample.scores["match"].value == "I"


def test_registered_solver_never_halting_model_submits(tmp_path):
    log, sample = _eval(tmp_path, _model(tmp_path / "m", NEVER))
    assert sample.limit is None and sample.scores["match"].value == "C"
    assert (
        sample.metadata["earlyeval"]["halted"] is False
        and len(sample.metadata["earlyeval"]["history"]) == 3
    )


def test_registered_solver_bad_arguments_are_clear_errors(tmp_path):
    from earlyeval.integrations.inspect_solvers import early_stop

    with pytest.raises(ValueError, match=r"tools=\['nope'\] unknown"):
        early_stop(model=str(_model(tmp_path / "m", NEVER)), tools="nope")
    with pytest.raises(Exception, match="model"):
        early_stop(model=str(tmp_path / "missing"))


TASK_PY = task_file("from inspect_ai.solver import use_tools", "setup=use_tools(shell())")


def test_inspect_cli_finds_the_solver_through_the_entry_point(tmp_path):
    model = _model(tmp_path / "m", ALWAYS_FAIL)
    (tmp_path / "task.py").write_text(TASK_PY)
    site = dist_info(tmp_path / "site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
    }
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "eval",
            "task.py",
            "--solver",
            "earlyeval/early_stop",
            "-S",
            f"model={model}",
            "--log-format",
            "json",
            "--display",
            "none",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [logf] = list((tmp_path / "logs").glob("*.json"))
    log = json.loads(logf.read_text())
    assert log["eval"]["solver"] == "earlyeval/early_stop" and log["eval"]["solver_args"][
        "model"
    ] == str(model)
    [sample] = log["samples"]
    assert sample["limit"]["type"] == "custom" and "PredictedFailure" in sample["limit"]["reason"]
    assert sample["metadata"]["earlyeval"]["halt"]["step_index"] == 1
    assert sample["scores"]["match"]["value"] == "I"

"""inspect_ai end to end, offline: a real ``eval()`` of a tiny task with ``mockllm/model`` and ``react()``."""

from __future__ import annotations

import pytest

pytest.importorskip("inspect_ai")

from _integration_fakes import ScriptedMonitor  # noqa: E402
from inspect_ai import Task, eval  # noqa: E402
from inspect_ai.agent import AgentState, react  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ModelOutput, get_model  # noqa: E402
from inspect_ai.scorer import match  # noqa: E402
from inspect_ai.tool import ToolCall, tool  # noqa: E402

from earlyeval.integrations.inspect_ai import earlyeval_on_continue, step_from_turn  # noqa: E402

SHELL = {
    "ls": "mod.py\ntests/",
    "cat mod.py": "def f():\n    return 41\n",
    "pytest -q tests": "1 failed",
    "sed -i 's/41/42/' mod.py": "",
}


@tool
def shell():
    async def execute(cmd: str) -> str:
        """Run a shell command.

        Args:
            cmd: The command.
        """
        if cmd not in SHELL:
            raise RuntimeError(f"unknown command {cmd}")
        return SHELL[cmd]

    return execute


M = "mockllm/model"


@pytest.fixture(autouse=True)
def _offline_token_count(monkeypatch):
    """mockllm counts input tokens with tiktoken's o200k_base, which tiktoken downloads on first use.

    There is no network at test time, so count words instead (the provider's documented override point).
    """
    from inspect_ai.model._providers.mockllm import MockLLM

    async def count_text_tokens(self, text: str) -> int:
        return max(1, len(text.split()))

    monkeypatch.setattr(MockLLM, "count_text_tokens", count_text_tokens)


def _call(cmd: str) -> ModelOutput:
    return ModelOutput.for_tool_call(M, "shell", {"cmd": cmd}, content=f"I will run {cmd}")


def _eval(tmp_path, outputs, on_continue):
    task = Task(
        dataset=[Sample(input="Make f() return 42.", target="42", id="s1")],
        solver=react(tools=[shell()], on_continue=on_continue),
        scorer=match(),
    )
    model = get_model(M, custom_outputs=outputs)
    [log] = eval(task, model=model, log_dir=str(tmp_path), display="none", log_format="json")
    assert log.status == "success", log.error
    [sample] = log.samples
    return log, sample


def test_failing_sample_is_ended_as_a_custom_sample_limit(tmp_path):
    monitors: list[ScriptedMonitor] = []

    def factory():
        monitors.append(ScriptedMonitor(halt_at=2))
        return monitors[-1]

    outputs = [
        _call("ls"),
        _call("cat mod.py"),
        _call("pytest -q tests"),
        _call("sed -i 's/41/42/' mod.py"),
        ModelOutput.for_tool_call(M, "submit", {"answer": "42"}),
    ]
    log, sample = _eval(tmp_path, outputs, earlyeval_on_continue(factory))

    [mon] = monitors
    assert [s.kind for s in mon.steps] == ["search", "view", "test"]
    assert mon.steps[0].action.endswith("ls") and mon.steps[0].thought == "I will run ls"
    assert mon.steps[1].observation.startswith("def f()")
    # (the sample id needs the TaskState: the registered solver)
    assert mon.starts[0][0].prompt == "Make f() return 42."
    # the halt is inspect's own sample limit (as --message-limit's would be), with the prediction as reason
    assert sample.limit is not None and sample.limit.type == "custom" and sample.limit.limit == 3
    assert sample.limit.reason.startswith(
        "earlyeval halted the run after step 2: PredictedFailure (p_success=0.600, p_failure=0.400)"
    )
    # (metadata is written by the registered solver, which has the TaskState)
    ee = sample.store["earlyeval"]
    assert ee["exit_status"] == "PredictedFailure" and ee["halted"] is True
    assert ee["halt"]["p_failure"] == pytest.approx(0.4) and ee["halt"]["step_index"] == 2
    assert [h["p_failure"] for h in ee["history"]] == pytest.approx([0.2, 0.3, 0.4])
    # the loop stopped: the edit and the submit were never requested, so nothing was submitted
    calls = [
        tc.arguments
        for m in sample.messages
        if isinstance(m, ChatMessageAssistant)
        for tc in (m.tool_calls or [])
    ]
    assert calls == [{"cmd": "ls"}, {"cmd": "cat mod.py"}, {"cmd": "pytest -q tests"}]
    assert sample.scores["match"].value == "I"


def test_successful_sample_is_not_halted_and_submits(tmp_path):
    monitors: list[ScriptedMonitor] = []

    def factory():
        monitors.append(ScriptedMonitor(halt_at=None))
        return monitors[-1]

    outputs = [
        _call("cat mod.py"),
        _call("sed -i 's/41/42/' mod.py"),
        ModelOutput.for_tool_call(M, "submit", {"answer": "42"}),
    ]
    log, sample = _eval(tmp_path, outputs, earlyeval_on_continue(factory))

    [mon] = monitors
    # react ends on submit before on_continue
    assert [s.kind for s in mon.steps] == [
        "view",
        "edit",
    ]
    assert sample.limit is None
    ee = sample.store["earlyeval"]
    assert ee["halted"] is False and ee["exit_status"] is None and len(ee["history"]) == 2
    assert sample.scores["match"].value == "C"
    assert sample.output.completion.endswith("42")


def test_crashing_monitor_does_not_stop_the_sample(tmp_path):
    outputs = [_call("ls"), ModelOutput.for_tool_call(M, "submit", {"answer": "42"})]
    log, sample = _eval(
        tmp_path, outputs, earlyeval_on_continue(lambda: ScriptedMonitor(raise_in_observe=True))
    )
    assert sample.scores["match"].value == "C"
    assert "scripted monitor failure" in sample.store["earlyeval"]["errors"][0]
    assert sample.limit is None


def test_step_from_turn_tool_error_and_editor_kind():
    asst = ChatMessageAssistant(
        content="look at the file",
        tool_calls=[
            ToolCall(
                id="c1", function="text_editor", arguments={"command": "view", "path": "/repo/a.py"}
            )
        ],
    )
    tool_msg = ChatMessageTool(
        content="no such file",
        tool_call_id="c1",
        function="text_editor",
        error={"type": "file_not_found", "message": "no such file"},
    )
    s = step_from_turn(asst, [tool_msg], 3)
    assert (
        s.index == 3
        and s.kind == "view"
        and s.error is True
        and s.action == "text_editor view /repo/a.py"
    )


@pytest.mark.anyio
async def test_no_submit_react_default_is_kept():
    cb = earlyeval_on_continue(ScriptedMonitor(), submit=False)
    st = AgentState(messages=[ChatMessageAssistant(content="the answer is 42")])
    st.output = ModelOutput.from_content(M, "the answer is 42")
    # no tool call and no submit tool: react(submit=False) would end here
    assert await cb(st) is False


def test_success_halt_waits_for_the_sandbox_diff(tmp_path):
    """With success halts on, a predicted success ends the sample only once the sample's sandbox (inspect's
    ``local`` sandbox here) has a working diff: held after the first turn (an empty repository), halted after the
    turn that writes mod.py; the sample is then scored on what the sandbox holds."""
    from inspect_ai.tool import bash

    monitors: list[ScriptedMonitor] = []

    def factory():
        monitors.append(ScriptedMonitor(halt_at=0, outcome="success"))
        return monitors[-1]

    def call(cmd):
        return ModelOutput.for_tool_call(M, "bash", {"command": cmd}, content=f"I will run {cmd}")

    outputs = [
        call("git init -q && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m init"),
        call("echo 'x = 42' > mod.py"),
        call("cat mod.py"),
        ModelOutput.for_tool_call(M, "submit", {"answer": "42"}),
    ]
    task = Task(
        dataset=[Sample(input="Write mod.py.", target="42", id="s1")],
        solver=react(tools=[bash()], on_continue=earlyeval_on_continue(factory)),
        scorer=match(),
        sandbox="local",
    )
    [log] = eval(
        task,
        model=get_model(M, custom_outputs=outputs),
        log_dir=str(tmp_path),
        display="none",
        log_format="json",
    )
    assert log.status == "success", log.error
    [sample] = log.samples
    ee = sample.store["earlyeval"]
    assert ee["exit_status"] == "PredictedSuccess" and [h["halt"] for h in ee["history"]] == [
        False,
        True,
    ]
    assert (
        sample.limit is not None
        and sample.limit.type == "custom"
        and "PredictedSuccess" in sample.limit.reason
    )
    assert ee["submission"] == {"chars": ee["submission"]["chars"], "files": 1}
    calls = [
        tc.arguments["command"]
        for m in sample.messages
        if isinstance(m, ChatMessageAssistant)
        for tc in (m.tool_calls or [])
    ]
    assert calls[-1] == "echo 'x = 42' > mod.py"  # `cat` and submit were never requested

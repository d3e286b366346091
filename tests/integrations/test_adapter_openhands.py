"""OpenHands SDK adapter.

* End to end (needs ``openhands-sdk``, Python >= 3.12): a real ``Conversation``
  driven by the SDK's ``TestLLM`` (scripted, offline) and a real shell tool;
  the monitor ends a failing run STUCK (as the SDK's stuck detector), a predicted success FINISHED,
  pauses with ``end_as="pause"``, and leaves an undecided run to finish.
  Run it in a 3.12 venv with the SDK installed (see docs/integrations.md).
* Always: the callback's grouping/halting logic on stand-ins that mimic the
  SDK's event classes (names and fields as in openhands-sdk 1.58.2).
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from _integration_fakes import ScriptedMonitor
from _openhands_standin import ActionEvent, AgentErrorEvent, MessageToolCall, ObservationEvent, TextContent
from _openhands_standin import Observation as _Obs
from earlyeval.integrations.openhands import EarlyStopCallback

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm: no cost-map download
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")


# ---------------------------------------------------------------------------
# end to end with the real SDK
# ---------------------------------------------------------------------------


def _sdk():
    return pytest.importorskip("openhands.sdk")


def _make_shell_tool():
    from pydantic import Field

    from openhands.sdk import Action, Observation, ToolDefinition
    from openhands.sdk.tool import ToolExecutor, register_tool

    class ShAction(Action):
        command: str = Field(description="The shell command to run.")

    class ShObservation(Observation):
        exit_code: int = 0

    class ShExecutor(ToolExecutor):
        def __init__(self, cwd: str):
            self.cwd = cwd

        def __call__(self, action, conversation=None):
            p = subprocess.run(action.command, shell=True, cwd=self.cwd, capture_output=True, text=True, timeout=30)
            return ShObservation.from_text(p.stdout + p.stderr, is_error=p.returncode != 0, exit_code=p.returncode)

    # named as the SDK's own shell tool ("terminal"): a shell command is recognised by its tool being a
    # shell tool (earlyeval.core.render.SHELL_TOOLS), as the ingestors do, not by an argument called "command"
    class TerminalTool(ToolDefinition[ShAction, ShObservation]):
        @classmethod
        def create(cls, conv_state=None, **params):
            return [cls(description="Run a shell command.", action_type=ShAction, observation_type=ShObservation,
                        executor=ShExecutor(conv_state.workspace.working_dir))]

    register_tool("EarlyevalTestTerminalTool", TerminalTool)
    return "EarlyevalTestTerminalTool"


def _conversation(tmp_path, replies, monitor, halt=None):
    sdk = _sdk()
    from openhands.sdk.llm import MessageToolCall
    from openhands.sdk.testing import TestLLM

    tool_spec = _make_shell_tool()

    def msg(i, tool, args, thought):
        return sdk.Message(role="assistant", content=[sdk.TextContent(text=thought)],
                           tool_calls=[MessageToolCall(id=f"call_{i}", name=tool, arguments=json.dumps(args), origin="completion")])

    llm = TestLLM.from_messages([msg(i, t, a, th) for i, (t, a, th) in enumerate(replies)])
    agent = sdk.Agent(llm=llm, tools=[sdk.Tool(name=tool_spec)])
    halt = halt or EarlyStopCallback(monitor, run_id="demo-1")
    conv = sdk.Conversation(agent=agent, workspace=str(tmp_path), callbacks=[halt], visualizer=None)
    halt.attach(conv)
    return sdk, llm, conv, halt


FAILING = [
    ("terminal", {"command": "ls"}, "look around"),
    ("terminal", {"command": "python repro.py"}, "reproduce"),
    ("terminal", {"command": "echo fixed > mod.py"}, "edit"),
    ("finish", {"message": "done"}, "finish"),
]


def test_real_conversation_ends_stuck_on_predicted_failure(tmp_path):
    """A predicted failure ends the run as the SDK's stuck detector does: terminal STUCK, no PauseEvent."""
    (tmp_path / "repro.py").write_text("import sys\nprint('still broken')\nsys.exit(1)\n")
    mon = ScriptedMonitor(halt_at=1)
    sdk, llm, conv, halt = _conversation(tmp_path, FAILING, mon)
    conv.send_message("Fix the bug in mod.py")
    conv.run()

    assert conv.state.execution_status == sdk.ConversationExecutionStatus.STUCK
    assert conv.state.execution_status.is_terminal()
    assert not any(type(e).__name__ == "PauseEvent" for e in conv.state.events)
    assert halt.halted is not None and halt.halted.exit_status == "PredictedFailure"
    assert [s.kind for s in mon.steps] == ["search", "test"]
    assert mon.steps[1].error is True and "still broken" in mon.steps[1].observation
    assert mon.steps[0].thought == "look around" and mon.steps[0].error is False
    assert mon.steps[0].input_tokens == 0  # TestLLM reports zero usage: deltas are real zeros, not None
    assert mon.starts[0][0].prompt == "Fix the bug in mod.py" and mon.starts[0][1] == "demo-1"
    assert llm.call_count == 2  # the edit was never requested
    assert not (tmp_path / "mod.py").exists()
    ee = conv.state.agent_state["earlyeval"]
    assert ee["exit_status"] == "PredictedFailure" and ee["halt"]["p_failure"] == pytest.approx(0.3)
    assert [h["p_failure"] for h in ee["history"]] == pytest.approx([0.2, 0.3])


def test_real_conversation_ends_finished_on_predicted_success(tmp_path):
    (tmp_path / "repro.py").write_text("print('ok')\n")
    mon = ScriptedMonitor(halt_at=1, outcome="success")
    sdk, llm, conv, halt = _conversation(tmp_path, FAILING, mon)
    conv.send_message("Fix the bug in mod.py")
    conv.run()
    assert conv.state.execution_status == sdk.ConversationExecutionStatus.FINISHED
    assert halt.halted.exit_status == "PredictedSuccess" and llm.call_count == 2
    assert conv.state.agent_state["earlyeval"]["exit_status"] == "PredictedSuccess"


def test_real_conversation_end_as_pause_is_resumable_paused(tmp_path):
    (tmp_path / "repro.py").write_text("import sys\nsys.exit(1)\n")
    mon = ScriptedMonitor(halt_at=1)
    sdk, llm, conv, halt = _conversation(tmp_path, FAILING, mon, EarlyStopCallback(mon, run_id="demo-1", end_as="pause"))
    conv.send_message("Fix the bug in mod.py")
    conv.run()
    assert conv.state.execution_status == sdk.ConversationExecutionStatus.PAUSED
    assert any(type(e).__name__ == "PauseEvent" for e in conv.state.events)


def test_real_conversation_from_config_with_a_trained_model(tmp_path):
    """No monitor object: ``EarlyStopCallback.from_config`` loads a model dir (a constant P(failure) of
    0.8 over a failure threshold of 0.6 = halt at the first eligible step) and the run ends STUCK with the model's own probabilities."""
    from _monitor_helpers import ALWAYS_FAIL, constant_model

    constant_model(tmp_path / "m", 0.2, ALWAYS_FAIL)  # P(failure) 0.8 >= 0.6 at every step: halts at step 2
    (tmp_path / "repro.py").write_text("import sys\nsys.exit(1)\n")
    halt = EarlyStopCallback.from_config({"model": str(tmp_path / "m"), "task": "demo__demo-1"})
    sdk, llm, conv, halt = _conversation(tmp_path, FAILING, None, halt)
    conv.send_message("Fix the bug in mod.py")
    conv.run()
    assert conv.state.execution_status == sdk.ConversationExecutionStatus.STUCK
    ee = conv.state.agent_state["earlyeval"]
    assert ee["halt"]["step_index"] == 1 and len(ee["history"]) == 2
    assert all(0.0 < h["p_success"] < 1.0 for h in ee["history"])
    assert llm.call_count == 2


def test_real_conversation_not_halted_finishes(tmp_path):
    replies = [
        ("terminal", {"command": "echo 'a = 2' > mod.py"}, "fix"),
        ("terminal", {"command": "python -c 'import mod; assert mod.a == 2'"}, "check"),
        ("finish", {"message": "fixed"}, "done"),
    ]
    mon = ScriptedMonitor(halt_at=None)
    sdk, llm, conv, halt = _conversation(tmp_path, replies, mon)
    conv.send_message("Make a equal 2")
    conv.run()

    assert conv.state.execution_status == sdk.ConversationExecutionStatus.FINISHED
    assert halt.halted is None
    assert [s.kind for s in mon.steps] == ["edit", "test"]  # the finish call is not scored
    assert [s.error for s in mon.steps] == [False, False]
    ee = conv.state.agent_state["earlyeval"]
    assert ee["halted"] is False and len(ee["history"]) == 2
    assert (tmp_path / "mod.py").read_text().strip() == "a = 2"


# ---------------------------------------------------------------------------
# stand-ins (tests/_openhands_standin.py: same class names and fields as the SDK's events)
# ---------------------------------------------------------------------------


class _Conv:
    def __init__(self):
        self.paused = 0
        self.state = type("S", (), {"agent_state": {}})()

    def pause(self):
        self.paused += 1


def _act(rid, cid, tool, args, thought=""):
    return ActionEvent(tool_name=tool, tool_call_id=cid, llm_response_id=rid,
                       tool_call=MessageToolCall(cid, tool, json.dumps(args)),
                       thought=[TextContent(thought)] if thought else [])


def test_parallel_tool_calls_are_one_step_and_halt_pauses_once():
    mon = ScriptedMonitor(halt_at=0)
    conv = _Conv()
    cb = EarlyStopCallback(mon, end_as="pause").attach(conv)
    cb(_act("r1", "c1", "terminal", {"command": "grep -rn foo src", "security_risk": "LOW"}, "search twice"))
    cb(_act("r1", "c2", "file_editor", {"command": "view", "path": "/src/a.py"}))
    cb(ObservationEvent("terminal", "c1", _Obs("src/a.py:1:foo", exit_code=0)))
    assert mon.steps == []  # the response is not complete yet
    cb(ObservationEvent("file_editor", "c2", _Obs("1 foo = 1")))
    [s] = mon.steps
    assert s.kind == "search" and [a.kind for a in s.actions] == ["search", "view"]
    assert s.action == "terminal grep -rn foo src\nfile_editor view /src/a.py"
    assert s.error is False and s.thought == "search twice"
    assert conv.paused == 1 and cb.halted.exit_status == "PredictedFailure"
    assert conv.state.agent_state["earlyeval"]["halted"] is True


def test_unparseable_call_is_a_rejected_step_and_errors_are_swallowed():
    mon = ScriptedMonitor(raise_in_observe=True)
    conv = _Conv()
    cb = EarlyStopCallback(mon, end_as="pause").attach(conv)
    cb(AgentErrorEvent("terminal", "c9", "Error validating args"))
    cb(object())  # unknown events are ignored
    [s] = mon.steps
    assert s.actions == [] and s.error is True and s.observation == "Error validating args"
    assert conv.paused == 0 and "scripted monitor failure" in cb.stopper.errors[0]


def test_halt_without_attached_conversation_is_recorded_not_raised():
    mon = ScriptedMonitor(halt_at=0)
    cb = EarlyStopCallback(mon)
    cb(_act("r1", "c1", "terminal", {"command": "pytest"}))
    cb(ObservationEvent("terminal", "c1", _Obs("1 failed", is_error=True)))
    assert cb.halted is not None and mon.steps[0].kind == "test" and mon.steps[0].error is True
    assert any("attach(conversation)" in e for e in cb.stopper.errors)

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
from _openhands_standin import (
    ActionEvent,
    AgentErrorEvent,
    MessageToolCall,
    ObservationEvent,
    TextContent,
)
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
    from openhands.sdk import Action, Observation, ToolDefinition
    from openhands.sdk.tool import ToolExecutor, register_tool
    from pydantic import Field

    class ShAction(Action):
        command: str = Field(description="The shell command to run.")

    class ShObservation(Observation):
        exit_code: int = 0

    class ShExecutor(ToolExecutor):
        def __init__(self, cwd: str):
            self.cwd = cwd

        def __call__(self, action, conversation=None):
            p = subprocess.run(
                action.command, shell=True, cwd=self.cwd, capture_output=True, text=True, timeout=30
            )
            return ShObservation.from_text(
                p.stdout + p.stderr, is_error=p.returncode != 0, exit_code=p.returncode
            )

    # named as the SDK's own shell tool ("terminal"): a shell command is recognised by its tool being a
    # shell tool (earlyeval.core.render.SHELL_TOOLS), as the ingestors do, not by an argument called "command"
    class TerminalTool(ToolDefinition[ShAction, ShObservation]):
        @classmethod
        def create(cls, conv_state=None, **params):
            return [
                cls(
                    description="Run a shell command.",
                    action_type=ShAction,
                    observation_type=ShObservation,
                    executor=ShExecutor(conv_state.workspace.working_dir),
                )
            ]

    register_tool("EarlyevalTestTerminalTool", TerminalTool)
    return "EarlyevalTestTerminalTool"


def _metered_llm_class():
    """The SDK's TestLLM whose responses carry usage, recorded by the SDK's own telemetry (``on_response``), as a
    provider's would be: prompt 1000 * n, completion 40 + n tokens at call n; priced by litellm's local cost map."""
    from litellm.types.utils import Usage
    from openhands.sdk.testing import TestLLM

    class MeteredLLM(TestLLM):
        def completion(self, *a, **k):
            r = super().completion(*a, **k)
            n = self.call_count
            r.raw_response.usage = Usage(
                prompt_tokens=1000 * n, completion_tokens=40 + n, total_tokens=1040 + 1001 * n
            )
            self.telemetry.on_response(r.raw_response)
            return r

    return MeteredLLM


def _conversation(tmp_path, replies, monitor, halt=None, persist=None, metered=False):
    sdk = _sdk()
    from openhands.sdk.llm import MessageToolCall
    from openhands.sdk.llm.llm_registry import RegistryEvent
    from openhands.sdk.testing import TestLLM

    tool_spec = _make_shell_tool()

    def msg(i, tool, args, thought):
        calls = [(tool, args)] if tool else args  # (tool, args) or a list of them (parallel calls)
        return sdk.Message(
            role="assistant",
            content=[sdk.TextContent(text=thought)],
            tool_calls=[
                MessageToolCall(
                    id=f"call_{i}_{j}", name=t, arguments=json.dumps(a), origin="completion"
                )
                for j, (t, a) in enumerate(calls)
            ],
        )

    msgs = [msg(i, t, a, th) for i, (t, a, th) in enumerate(replies)]
    llm = (
        _metered_llm_class().from_messages(msgs, model="gpt-4o")
        if metered
        else TestLLM.from_messages(msgs)
    )
    agent = sdk.Agent(llm=llm, tools=[sdk.Tool(name=tool_spec)])
    halt = halt or EarlyStopCallback(monitor, run_id="demo-1")
    kw = {"persistence_dir": str(persist), "delete_on_close": False} if persist else {}
    conv = sdk.Conversation(
        agent=agent, workspace=str(tmp_path), callbacks=[halt], visualizer=None, **kw
    )
    if metered:  # the registry tracks only exact LLM instances, not TestLLM subclasses: the SDK's own tracker, by hand
        conv.conversation_stats.register_llm(RegistryEvent(llm=llm))
    halt.attach(conv)
    return sdk, llm, conv, halt


FAILING = [
    ("terminal", {"command": "ls"}, "look around"),
    ("terminal", {"command": "python repro.py"}, "reproduce"),
    ("terminal", {"command": "echo fixed > mod.py"}, "edit"),
    ("finish", {"message": "done"}, "finish"),
]


@pytest.mark.openhands
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
    # TestLLM records no usage (conversation_stats.usage_to_metrics stays empty): unknown is None, never 0
    assert conv.conversation_stats.usage_to_metrics == {}
    assert mon.steps[0].input_tokens is None and mon.steps[0].cost_usd is None
    assert mon.starts[0][0].prompt == "Fix the bug in mod.py" and mon.starts[0][1] == "demo-1"
    assert llm.call_count == 2  # the edit was never requested
    assert not (tmp_path / "mod.py").exists()
    ee = conv.state.agent_state["earlyeval"]
    assert ee["exit_status"] == "PredictedFailure" and ee["halt"]["p_failure"] == pytest.approx(0.3)
    assert [h["p_failure"] for h in ee["history"]] == pytest.approx([0.2, 0.3])


@pytest.mark.openhands
def test_real_conversation_ends_finished_on_predicted_success_once_the_workspace_has_a_diff(
    tmp_path,
):
    """Success is predicted from the 2nd step on; the workspace (a git repository) has no diff until the 3rd step
    writes mod.py: the run goes on, then ends FINISHED with the edit in the workspace, the finish never requested."""
    (tmp_path / "repro.py").write_text("print('ok')\n")
    subprocess.run(
        "git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm init",
        shell=True,
        cwd=tmp_path,
        check=True,
    )
    mon = ScriptedMonitor(halt_at=1, outcome="success")
    sdk, llm, conv, halt = _conversation(tmp_path, FAILING, mon)
    conv.send_message("Fix the bug in mod.py")
    conv.run()
    assert conv.state.execution_status == sdk.ConversationExecutionStatus.FINISHED
    assert halt.halted.exit_status == "PredictedSuccess" and llm.call_count == 3
    ee = conv.state.agent_state["earlyeval"]
    assert ee["exit_status"] == "PredictedSuccess" and [h["halt"] for h in ee["history"]] == [
        False,
        False,
        True,
    ]
    assert "no candidate patch yet" in halt.stopper.decisions[1].reason
    assert (tmp_path / "mod.py").read_text() == "fixed\n" and ee["submission"]["files"] == 1
    assert (
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True
        ).stdout
        == "?? mod.py\n"
    )


@pytest.mark.openhands
def test_real_conversation_predicted_success_without_a_diff_never_halts(tmp_path):
    (tmp_path / "repro.py").write_text("print('ok')\n")
    subprocess.run(
        "git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm init",
        shell=True,
        cwd=tmp_path,
        check=True,
    )
    replies = [
        ("terminal", {"command": "ls"}, "look"),
        ("terminal", {"command": "python repro.py"}, "run"),
        ("finish", {"message": "nothing to do"}, "finish"),
    ]
    mon = ScriptedMonitor(halt_at=0, outcome="success")
    sdk, llm, conv, halt = _conversation(tmp_path, replies, mon)
    conv.send_message("Check repro.py")
    conv.run()
    # the agent's own finish
    assert conv.state.execution_status == sdk.ConversationExecutionStatus.FINISHED
    assert halt.halted is None and llm.call_count == 3


@pytest.mark.openhands
def test_real_conversation_end_as_pause_is_resumable_paused(tmp_path):
    (tmp_path / "repro.py").write_text("import sys\nsys.exit(1)\n")
    mon = ScriptedMonitor(halt_at=1)
    sdk, llm, conv, halt = _conversation(
        tmp_path, FAILING, mon, EarlyStopCallback(mon, run_id="demo-1", end_as="pause")
    )
    conv.send_message("Fix the bug in mod.py")
    conv.run()
    assert conv.state.execution_status == sdk.ConversationExecutionStatus.PAUSED
    assert any(type(e).__name__ == "PauseEvent" for e in conv.state.events)


@pytest.mark.openhands
def test_real_conversation_from_config_with_a_trained_model(tmp_path):
    """No monitor object: ``EarlyStopCallback.from_config`` loads a model dir (a constant P(failure) of
    0.8 over a failure threshold of 0.6 = halt at the first eligible step) and the run ends STUCK with the model's own probabilities."""
    from _monitor_helpers import ALWAYS_FAIL, constant_model

    # P(failure) 0.8 >= 0.6 at every step: halts at step 2
    constant_model(tmp_path / "m", 0.2, ALWAYS_FAIL)
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


@pytest.mark.openhands
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


RICH = [
    (
        None,
        [("terminal", {"command": "ls"}), ("terminal", {"command": "cat repro.py"})],
        "look around",
    ),
    ("terminal", {"command": "python repro.py"}, "reproduce"),
    ("grep_tool", {"pattern": "41"}, "an unknown tool: an agent error answers it"),
    ("terminal", {"command": "echo 'x = 42' > mod.py"}, "edit"),
    ("terminal", {"command": "python -c 'import mod'"}, "check"),
    ("finish", {"message": "done"}, "finish"),
]


@pytest.mark.openhands
@pytest.mark.parametrize("thresholds", ["never", "fail"])
def test_persisted_conversation_read_back_gives_the_live_steps_features_and_probabilities(
    tmp_path, thresholds
):
    """Live/offline parity with real SDK objects: a real Conversation (metered TestLLM, persistence on) scored live
    by the callback over a real Monitor; its persisted folder read back by the ``openhands-conversation`` reader and
    fed to a fresh Monitor: the same steps (usage included), feature rows and probabilities, step by step."""
    import numpy as np
    from _integration_fakes import Recording
    from _monitor_helpers import (
        ALWAYS_FAIL,
        NEVER_HALT,
        constant_model,
        make_runs,
        make_tasks,
        train_bundle,
    )

    from earlyeval.config.catalog import RunSpec
    from earlyeval.core.trajectory import Task
    from earlyeval.ingest import openhands_conversation as oc
    from earlyeval.live.monitor import Monitor
    from earlyeval.live.replay import run_context
    from earlyeval.model.modeldir import save_model_dir

    if thresholds == "never":  # a trained model: its probabilities vary along the run
        bundle, _, _ = train_bundle(
            make_runs(40, 0), make_tasks(12), families=("behaviour",), thresholds=dict(NEVER_HALT)
        )
        model = save_model_dir(bundle, tmp_path / "m")
    else:  # constant P(success) 0.2: halts at step 2 predicting failure
        model = constant_model(tmp_path / "m", 0.2, ALWAYS_FAIL)
    (tmp_path / "repro.py").write_text("import sys\nprint('x is 41')\nsys.exit(1)\n")
    rec = Recording(Monitor.load(model))
    sdk, llm, conv, halt = _conversation(
        tmp_path, RICH, rec, persist=tmp_path / "convs", metered=True
    )
    conv.send_message("Make x 42 in mod.py")
    conv.run()
    n = len(rec.steps)
    assert n == (5 if thresholds == "never" else 2) and halt.stopper.errors == []
    # usage known live
    assert all(
        s["input_tokens"] == 1000 * (k + 1) and s["cost_usd"] > 0 for k, s in enumerate(rec.steps)
    )

    root = tmp_path / "convs"
    spec = RunSpec(
        name="oh",
        folder=str(root),
        agent="oh",
        scaffold="oh",
        model="",
        format="openhands-conversation",
        glob=oc.DEFAULT_GLOB,
        labels=[],
    )
    [folder] = oc.discover(root, spec)
    [traj] = list(oc.parse(folder, spec, "swebench"))
    assert [s.to_dict() for s in traj.steps[:n]] == rec.steps  # field by field, usage included
    # + the final finish step (never replayed)
    assert len(traj.steps) == n + (1 if thresholds == "never" else 0)
    assert traj.prompt == "Make x 42 in mod.py" and traj.meta["execution_status"] == (
        "finished" if thresholds == "never" else "stuck"
    )
    offline = Monitor.load(model)
    offline.start_context(
        run_context(traj, Task(task_id=rec.task.task_id, prompt=rec.task.prompt)), traj.run_id
    )
    for k, step in enumerate(traj.steps[:n]):
        d = offline.observe(step)
        np.testing.assert_array_equal(offline.run.last_features, rec.rows[k])
        assert (d.p_success, d.p_failure) == rec.p[k]
    if thresholds == "fail":
        assert d.halt and halt.halted.step_index == n - 1 == 1 and llm.call_count == 2
    else:
        assert [s["kind"] for s in rec.steps] == [
            "search",
            "test",
            "other",
            "edit",
            "test",
        ] and rec.steps[2]["error"] is True


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
    return ActionEvent(
        tool_name=tool,
        tool_call_id=cid,
        llm_response_id=rid,
        tool_call=MessageToolCall(cid, tool, json.dumps(args)),
        thought=[TextContent(thought)] if thought else [],
    )


def test_parallel_tool_calls_are_one_step_and_halt_pauses_once():
    mon = ScriptedMonitor(halt_at=0)
    conv = _Conv()
    cb = EarlyStopCallback(mon, end_as="pause").attach(conv)
    cb(
        _act(
            "r1",
            "c1",
            "terminal",
            {"command": "grep -rn foo src", "security_risk": "LOW"},
            "search twice",
        )
    )
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

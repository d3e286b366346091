"""The framework-free helper (EarlyStopper) and the no-import-at-load-time rule."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _integration_fakes import ScriptedMonitor

from earlyeval.core.decision import Decision
from earlyeval.core.trajectory import Action
from earlyeval.integrations import EarlyStopper, StepMonitor


def test_hand_written_loop_halts_at_the_monitors_step():
    mon = ScriptedMonitor(halt_at=2)
    stopper = EarlyStopper(mon)
    stopper.start(task={"task_id": "t1", "prompt": "fix it"}, run_id="r1")
    script = [
        ("grep -rn foo .", "a.py:1"),
        ("cat a.py", "foo = 1"),
        ("pytest -q", "1 failed"),
        ("sed -i s/1/2/ a.py", ""),
    ]
    ran = []
    for cmd, out in script:
        ran.append(cmd)
        d = stopper.after_step(
            action=cmd,
            observation=out,
            thought="t",
            error=out == "1 failed",
            input_tokens=10,
            output_tokens=2,
            cost_usd=0.001,
        )
        if d.halt:
            break
    assert ran == ["grep -rn foo .", "cat a.py", "pytest -q"]
    assert [s.kind for s in mon.steps] == ["search", "view", "test"]
    assert [s.index for s in mon.steps] == [0, 1, 2]
    assert mon.steps[2].error is True and mon.steps[2].input_tokens == 10
    assert mon.starts == [({"task_id": "t1", "prompt": "fix it"}, "r1")]
    h = stopper.halted
    assert h.exit_status == "PredictedFailure" and h.step_index == 2 and h.n_steps == 3
    assert h.p_failure == pytest.approx(0.4) and "p_failure=0.400" in h.message()
    s = stopper.summary()
    json.dumps(s)  # JSON-ready
    assert s["exit_status"] == "PredictedFailure" and [x["halt"] for x in s["history"]] == [
        False,
        False,
        True,
    ]


def test_several_actions_and_final_answer():
    mon = ScriptedMonitor()
    stopper = EarlyStopper(mon)
    stopper.start()
    stopper.after_step(
        actions=[("str_replace_editor", "create /a.py"), Action(tool="bash", text="pytest")]
    )
    stopper.after_step(final_answer="42")
    assert mon.steps[0].kind == "edit" and [a.kind for a in mon.steps[0].actions] == [
        "edit",
        "test",
    ]
    assert mon.steps[1].action == "42" and mon.steps[1].actions == []


def test_a_raw_tool_call_pair_is_rendered_as_build_step_and_the_ingestors_render_it():
    """after_step's (tool, arguments) pair, a ToolCall and build_step's pair give the Step of the ingestors'
    call_action: an editor call with its arguments is `create /a.py`, kind edit (not a Python repr, view)."""
    from earlyeval.core.trajectory import call_action
    from earlyeval.integrations import ToolCall
    from earlyeval.integrations.base import build_step

    args = {"command": "create", "path": "/a.py", "file_text": "x = 1\n"}
    mon = ScriptedMonitor()
    stopper = EarlyStopper(mon)
    stopper.start()
    stopper.after_step(
        actions=[("str_replace_editor", args), ToolCall("bash", '{"command": "pytest -q"}')]
    )
    live = mon.steps[0]
    want = build_step(
        0,
        [call_action("str_replace_editor", args), call_action("bash", '{"command": "pytest -q"}')],
    )
    assert (
        live
        == want
        == build_step(0, [("str_replace_editor", args), ToolCall("bash", {"command": "pytest -q"})])
    )
    assert live.actions[0].text.startswith("create /a.py\nfile_text: x = 1") and live.kind == "edit"
    assert [a.kind for a in live.actions] == ["edit", "test"]


def test_make_step_leaves_the_callers_actions_unchanged():
    from earlyeval.core.trajectory import make_step

    a = Action(tool="bash", text="pytest -q")
    step = make_step(0, [a])
    assert a.kind == "other" and step.actions[0].kind == "test" and step.kind == "test"
    # one Action handed to two steps stays the caller's
    assert make_step(1, [a]).actions[0] is not a


class _Broken:
    def __init__(self, start_raises=False, returns=None):
        self.start_raises, self.returns = start_raises, returns

    def start(self, task=None, run_id=None):
        if self.start_raises:
            raise ValueError("bad task")

    def observe(self, step):
        return self.returns


@pytest.mark.parametrize(
    "monitor",
    [_Broken(start_raises=True, returns=Decision.proceed("ok")), _Broken(returns="halt!")],
)
def test_fail_open(monitor):
    assert isinstance(monitor, StepMonitor)
    stopper = EarlyStopper(monitor)
    stopper.start()
    d = stopper.after_step(action="ls")
    assert d.halt is False and stopper.halted is None
    assert stopper.errors  # logged and recorded, not raised


def test_bad_step_input_does_not_raise():
    stopper = EarlyStopper(ScriptedMonitor())
    d = stopper.after_step(actions=[("only-one-element",)])  # malformed pair
    assert d.halt is False and "could not build step" in stopper.errors[0]


def test_earlyeval_import_loads_no_framework():
    code = (
        "import sys, earlyeval, earlyeval.integrations, earlyeval.integrations.swe_agent, earlyeval.integrations.openhands;"
        "bad=[m for m in ('minisweagent','inspect_ai','openhands','sweagent') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr

"""mini-swe-agent end to end, offline: the package's own DeterministicModel and LocalEnvironment.

Runs against whichever mini-swe-agent is installed (2.x is what ``pip install
mini-swe-agent`` gives today; 1.x was checked in a throwaway venv, see
docs/integrations.md).  Skipped when the package is absent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")

pytest.importorskip("minisweagent")

from _integration_fakes import ScriptedMonitor  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.models.test_models import DeterministicModel  # noqa: E402

from earlyeval.integrations.mini_swe_agent import (  # noqa: E402
    MINI_SWE_AGENT_V2,
    EarlyStopAgent,
    PredictedFailure,
    steps_from_new_messages,
)

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat fix.txt"


def _out(thought: str, cmd: str):
    """One scripted model reply in the installed version's format."""
    if MINI_SWE_AGENT_V2:
        from minisweagent.models.test_models import make_output

        return make_output(
            f"THOUGHT: {thought}\n\n```mswea_bash_command\n{cmd}\n```", [{"command": cmd}], cost=0.0
        )
    return f"THOUGHT: {thought}\n\n```bash\n{cmd}\n```"


def _agent(tmp_path, outputs, monitor, **kw):
    model = DeterministicModel(
        outputs=outputs, **({} if MINI_SWE_AGENT_V2 else {"cost_per_call": 0.0})
    )
    env = LocalEnvironment(cwd=str(tmp_path))
    cfg = dict(cost_limit=0, step_limit=0)
    if MINI_SWE_AGENT_V2:
        cfg.update(
            system_template="You are a test agent.",
            instance_template="Task: {{task}}",
            output_path=tmp_path / "run.traj.json",
        )
    else:  # the observation format of 1.x's shipped config/default.yaml (the dataclass default has no return code)
        cfg.update(
            action_observation_template="<returncode>{{output.returncode}}</returncode>\n<output>\n{{output.output}}</output>"
        )
    cfg.update(kw)
    return EarlyStopAgent(model, env, monitor=monitor, run_id="demo__demo-1", **cfg)


def _run(agent, task: str = "fix the bug"):
    """Run and return (exit_status, saved trajectory dict), whatever the version."""
    if MINI_SWE_AGENT_V2:
        result = agent.run(task)
        saved = json.loads(agent.config.output_path.read_text())
        assert result["exit_status"] == saved["info"]["exit_status"]
        return result["exit_status"], saved, result
    from minisweagent.run.utils.save import save_traj

    exit_status, message = agent.run(task)
    path = agent.env.config.cwd + "/run.traj.json"
    from pathlib import Path

    save_traj(
        agent,
        Path(path),
        exit_status=exit_status,
        result=message,
        extra_info=agent.earlyeval_info(),
        print_path=False,
    )
    return (
        exit_status,
        json.loads(Path(path).read_text()),
        {"exit_status": exit_status, "message": message},
    )


FAILING = [
    ("look around", "ls -la"),
    ("read the module", "cat mod.py"),
    ("reproduce", "python repro.py"),
    ("try a fix", "sed -i 's/a/b/' mod.py"),
    ("reproduce again", "python repro.py"),
    ("give up", SUBMIT),
]


def _setup_repo(tmp_path):
    (tmp_path / "mod.py").write_text("a = 1\n")
    (tmp_path / "repro.py").write_text("import sys\nprint('still broken')\nsys.exit(1)\n")
    (tmp_path / "fix.txt").write_text("diff --git a/mod.py b/mod.py\n")


def test_failing_run_is_halted_and_saved_with_probabilities(tmp_path):
    _setup_repo(tmp_path)
    mon = ScriptedMonitor(halt_at=2, outcome="failure")
    agent = _agent(tmp_path, [_out(t, c) for t, c in FAILING], mon)
    exit_status, saved, _ = _run(agent)

    assert exit_status == "PredictedFailure"
    # halted after the 3rd step, before the 4th model call and before any edit ran
    assert [s.index for s in mon.steps] == [0, 1, 2]
    assert [s.kind for s in mon.steps] == ["search", "view", "test"]
    assert mon.steps[2].action == "python repro.py"
    assert mon.steps[2].error is True  # repro.py exits 1
    assert "still broken" in mon.steps[2].observation
    assert mon.steps[0].error is False
    assert agent.model.current_index == 2  # 3 model calls, the 4th was never made
    assert (tmp_path / "mod.py").read_text() == "a = 1\n"
    assert mon.starts == [(mon.starts[0][0], "demo__demo-1")]
    assert mon.starts[0][0].prompt == "fix the bug"

    info = saved["info"]
    assert info["exit_status"] == "PredictedFailure"
    ee = info["earlyeval"]
    assert ee["halted"] is True and ee["exit_status"] == "PredictedFailure"
    assert ee["halt"]["p_failure"] == pytest.approx(0.4)
    assert ee["halt"]["p_success"] == pytest.approx(0.6)
    assert ee["halt"]["step_index"] == 2 and ee["halt"]["outcome"] == "failure"
    assert "scripted: step 2" in ee["halt"]["reason"]
    assert [h["p_failure"] for h in ee["history"]] == pytest.approx([0.2, 0.3, 0.4])
    if MINI_SWE_AGENT_V2:
        last = saved["messages"][-1]
        assert last["role"] == "exit"
        assert last["extra"]["exit_status"] == "PredictedFailure"
        assert last["extra"]["earlyeval"]["p_failure"] == pytest.approx(0.4)
        assert last["extra"]["earlyeval"]["decision"]["thresholds"] == {
            "failure": 0.4,
            "success": 0.9,
        }
    else:
        assert "p_failure=0.400" in saved["info"]["submission"]


def _git_repo(tmp_path):
    import subprocess

    _setup_repo(tmp_path)
    # the trajectory file _agent saves here is no patch
    (tmp_path / ".gitignore").write_text("run.traj.json\n")
    subprocess.run(
        "git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm init",
        shell=True,
        cwd=tmp_path,
        check=True,
    )


def _git(tmp_path, *args):
    import subprocess

    return subprocess.run(
        ["git", *args], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.skipif(not MINI_SWE_AGENT_V2, reason="2.x: the submission is the exit message's")
def test_predicted_success_waits_for_a_patch_then_submits_it(tmp_path):
    """Success is predicted from step 1 on; no diff exists before step 2 edits a file and creates a new one:
    the run goes on (the decision says why), then halts with the diff, untracked file included, as submission."""
    _git_repo(tmp_path)
    outputs = [
        _out("look", "ls"),
        _out("read", "cat mod.py"),
        _out("fix", "echo 'a = 2' > mod.py && printf 'b = 3\\n' > new.py"),
        _out("check", "python repro.py"),
        _out("done", SUBMIT),
    ]
    mon = ScriptedMonitor(halt_at=1, outcome="success")
    agent = _agent(tmp_path, outputs, mon)
    # on whenever success halts are (ScriptedMonitor decides both ways)
    assert agent.submit_diff is True
    exit_status, saved, result = _run(agent)
    assert exit_status == "PredictedSuccess"
    # held after step 1, halted after step 2
    assert len(mon.steps) == 3 and agent.model.current_index == 2
    held = saved["info"]["earlyeval"]["history"][1]
    assert held["halt"] is False
    assert "not halted: no candidate patch yet" in agent.stopper.decisions[1].reason
    sub = result["submission"]
    assert "diff --git a/mod.py b/mod.py" in sub and "+a = 2" in sub
    # untracked files are in the patch
    assert "diff --git a/new.py b/new.py" in sub and "+b = 3" in sub
    assert saved["info"]["submission"] == sub
    assert saved["info"]["earlyeval"]["submission"] == {"chars": len(sub), "files": 2}
    # the agent's own index is untouched: new.py still untracked, mod.py modified but not staged
    assert sorted(_git(tmp_path, "status", "--porcelain").splitlines()) == [
        " M mod.py",
        "?? new.py",
    ]


def test_predicted_success_without_any_patch_never_halts(tmp_path):
    _git_repo(tmp_path)
    mon = ScriptedMonitor(halt_at=0, outcome="success")
    outputs = [_out("look", "ls"), _out("read", "cat mod.py"), _out("done", SUBMIT)]
    exit_status, saved, _ = _run(_agent(tmp_path, outputs, mon))
    assert exit_status == "Submitted"  # the agent's own end: nothing was thrown away
    ee = saved["info"]["earlyeval"]
    assert (
        ee["halted"] is False
        and ee["submission"] is None
        and [h["halt"] for h in ee["history"]] == [False, False]
    )


def test_success_halts_need_submit_diff():
    from earlyeval.integrations.config import ConfigError

    with pytest.raises(
        ConfigError,
        match=r"agent.earlyeval.submit_diff: cannot be false while success halts are on",
    ):
        _agent(Path("."), [], ScriptedMonitor(), earlyeval={"submit_diff": False})


def test_successful_run_is_not_halted_and_submits(tmp_path):
    _setup_repo(tmp_path)
    mon = ScriptedMonitor(halt_at=None)
    outputs = [
        _out("look", "ls"),
        _out("fix it", "echo 'a = 2' > mod.py"),
        _out("check", "python -c 'import mod; assert mod.a == 2'"),
        _out("done", SUBMIT),
    ]
    agent = _agent(tmp_path, outputs, mon)
    exit_status, saved, result = _run(agent)

    assert exit_status == "Submitted"
    assert "diff --git a/mod.py" in (result.get("submission") or result.get("message") or "")
    # the submitting turn ends the run unscored
    assert [s.kind for s in mon.steps] == [
        "search",
        "edit",
        "test",
    ]
    assert [s.error for s in mon.steps] == [False, False, False]
    ee = saved["info"]["earlyeval"]
    assert ee["halted"] is False and ee["halt"] is None and ee["exit_status"] is None
    assert len(ee["history"]) == 3 and ee["last_decision"]["halt"] is False
    assert (tmp_path / "mod.py").read_text().strip() == "a = 2"


def test_monitor_errors_never_stop_the_agent(tmp_path):
    _setup_repo(tmp_path)
    mon = ScriptedMonitor(raise_in_observe=True)
    outputs = [_out("look", "ls"), _out("check", "python repro.py"), _out("done", SUBMIT)]
    agent = _agent(tmp_path, outputs, mon)
    exit_status, saved, _ = _run(agent)
    assert exit_status == "Submitted"
    ee = saved["info"]["earlyeval"]
    assert len(ee["errors"]) == 2 and "scripted monitor failure" in ee["errors"][0]
    assert ee["halted"] is False


@pytest.mark.skipif(not MINI_SWE_AGENT_V2, reason="2.x FormatError flow")
def test_format_error_turn_is_a_rejected_step(tmp_path):
    from minisweagent.exceptions import FormatError

    class FormatErrorOnSecondCall(DeterministicModel):
        """The package's model, except that its 2nd reply fails to parse (as LitellmModel raises it)."""

        def query(self, messages, **kwargs):
            if self.current_index == 0:
                self.current_index += 1
                raise FormatError(
                    {
                        "role": "user",
                        "content": "Expected exactly 1 action, found 0.",
                        "extra": {
                            "interrupt_type": "FormatError",
                            "model_response": "THOUGHT: hmm",
                        },
                    }
                )
            return super().query(messages, **kwargs)

    _setup_repo(tmp_path)
    outputs = [_out("look", "ls"), _out("unused", "true"), _out("done", SUBMIT)]
    mon = ScriptedMonitor(halt_at=1)
    agent = _agent(tmp_path, outputs, mon)
    agent.model = FormatErrorOnSecondCall(outputs=outputs)
    exit_status, saved, _ = _run(agent)
    assert exit_status == "PredictedFailure"
    assert mon.steps[1].actions == [] and mon.steps[1].error is True
    assert mon.steps[1].thought == "hmm"
    assert "Expected exactly 1 action" in mon.steps[1].observation


def test_steps_from_new_messages_v1_text_format():
    msgs = [
        {
            "role": "assistant",
            "content": "THOUGHT: run tests\n\n```bash\npytest -q tests/test_x.py\n```",
            "extra": {
                "response": {"usage": {"prompt_tokens": 100, "completion_tokens": 7, "cost": 0.01}}
            },
        },
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\n1 failed\n</output>"},
        {"role": "assistant", "content": "no block here"},
        {
            "role": "user",
            "content": "Please always provide EXACTLY ONE action in triple backticks.",
        },
    ]
    steps = steps_from_new_messages(msgs, first_index=5)
    assert [s.index for s in steps] == [5, 6]
    assert steps[0].kind == "test" and steps[0].error is True and steps[0].thought == "run tests"
    assert (steps[0].input_tokens, steps[0].output_tokens, steps[0].cost_usd) == (100, 7, 0.01)
    assert steps[1].actions == [] and steps[1].error is True


def test_halt_exception_is_the_packages_own_flow_exception():
    if MINI_SWE_AGENT_V2:
        from minisweagent.exceptions import InterruptAgentFlow as Base
    else:
        from minisweagent.agents.default import TerminatingException as Base
    assert issubclass(PredictedFailure, Base)


@pytest.mark.skipif(not MINI_SWE_AGENT_V2, reason="the interactive variant is 2.x only")
def test_interactive_keys_give_mini_s_interactive_agent_with_the_monitor(tmp_path, capsys):
    """An agent config with InteractiveAgent's own keys (here yolo mode) builds EarlyStopInteractiveAgent: mini's
    InteractiveAgent (its step display on mini's console) that still halts; without them, the plain agent."""
    from minisweagent.agents.interactive import InteractiveAgent

    from earlyeval.integrations.mini_swe_agent import interactive_class

    _setup_repo(tmp_path)
    plain = _agent(tmp_path, [], ScriptedMonitor())
    assert type(plain) is EarlyStopAgent and not isinstance(plain, InteractiveAgent)
    mon = ScriptedMonitor(halt_at=1)
    agent = _agent(tmp_path, [_out(t, c) for t, c in FAILING], mon, mode="yolo", confirm_exit=False)
    assert (
        type(agent) is interactive_class()
        and isinstance(agent, InteractiveAgent)
        and isinstance(agent, EarlyStopAgent)
    )
    assert type(agent).__name__ == "EarlyStopInteractiveAgent"
    exit_status, saved, _ = _run(agent)
    assert exit_status == "PredictedFailure" and len(mon.steps) == 2
    assert (
        saved["info"]["config"]["agent_type"]
        == "earlyeval.integrations.mini_swe_agent.EarlyStopInteractiveAgent"
    )


def test_a_run_of_no_actions_is_never_halted_as_a_success(tmp_path):
    """Issue 29 item 5 on the real loop: P(success) 0.8 from step 1 and a non-empty working diff from the start
    (a dirty repo), but the first turns have no action (replies that fail to parse): no success halt until the
    agent acts; the halt then says its basis in the saved record and in the log line."""
    from _monitor_helpers import constant_model
    from minisweagent.exceptions import FormatError

    from earlyeval.live.monitor import Monitor

    class NoActionFirst(DeterministicModel):
        """The package's model, except that its first 2 replies fail to parse (a third in a row ends the run) (no action)."""

        def query(self, messages, **kwargs):
            if getattr(self, "_bad", 0) < 2:
                self._bad = getattr(self, "_bad", 0) + 1
                raise FormatError(
                    {
                        "role": "user",
                        "content": "Expected exactly 1 action, found 0.",
                        "extra": {
                            "interrupt_type": "FormatError",
                            "model_response": "THOUGHT: hmm",
                        },
                    }
                )
            return super().query(messages, **kwargs)

    _git_repo(tmp_path)
    (tmp_path / "mod.py").write_text("a = 2\n")  # the working diff is non-empty before any action
    model_dir = constant_model(
        tmp_path / "model",
        0.8,
        {"success": 0.6, "failure": 2.0, "min_halt_step": 1, "success_evidence": "test-any-action"},
    )
    mon = Monitor.load(model_dir, halt_on="both")
    outputs = [_out("look", "ls"), _out("read", "cat mod.py"), _out("done", SUBMIT)]
    agent = _agent(tmp_path, outputs, mon)
    agent.model = NoActionFirst(outputs=outputs)
    exit_status, saved, _ = _run(agent)
    ds = agent.stopper.decisions
    assert [d.halt for d in ds[:2]] == [False, False]
    # no action read yet: a task-level prefix, and no evidence of the run's own
    assert all("not halted: " in d.reason for d in ds[:2])
    assert (
        exit_status == "PredictedSuccess"
        and len(ds) == 3
        and ds[2].halt
        and ds[2].halt_rule == "outcome rule"
    )
    assert saved["info"]["earlyeval"]["halt"]["decision"]["halt_rule"] == "outcome rule"


def test_a_pass_block_shares_one_pass_and_each_run_end_reaches_it(tmp_path):
    """``earlyeval: {pass: {state: ...}}``: every run's monitor comes from one Pass (state file), each run's end
    is told to it (length; audited runs' profiles), and a run started after 5 audited ones finished reads the
    pass features against them; halted runs are recorded halted (issue 28 item 1)."""
    from _monitor_helpers import ALWAYS_FAIL, NEVER_HALT, constant_model

    from earlyeval.integrations.config import clear_cache
    from earlyeval.live.benchpass import PassMonitor

    clear_cache()
    never = constant_model(tmp_path / "never", 0.2, NEVER_HALT, families=("behaviour", "pass"))
    state = tmp_path / "pass.json"
    outputs = [
        _out("look", "ls"),
        _out("edit", "echo 1 > fix.txt"),
        _out("test", "python -m pytest -q || true"),
        _out("submit", SUBMIT),
    ]
    refs = []
    for k in range(7):
        (tmp_path / f"w{k}").mkdir()
        model = DeterministicModel(
            outputs=list(outputs), **({} if MINI_SWE_AGENT_V2 else {"cost_per_call": 0.0})
        )
        cfg = dict(cost_limit=0, step_limit=0)
        if MINI_SWE_AGENT_V2:
            cfg.update(
                system_template="You are a test agent.",
                instance_template="Task: {{task}}",
                output_path=tmp_path / f"w{k}" / "run.traj.json",
            )
        agent = EarlyStopAgent(
            model,
            LocalEnvironment(cwd=str(tmp_path / f"w{k}")),
            run_id=f"run-{k}",
            earlyeval={
                "model": str(never),
                "halt_on": "both",
                "pass": {"state": str(state), "audit_share": 1.0, "seed": 0},
            },
            **cfg,
        )
        assert isinstance(agent.stopper.monitor, PassMonitor)
        agent.run("fix the bug")
        # audited: an AuditMonitor around it
        refs.append(agent.stopper.monitor.current.monitor.pass_reference)
    fin = json.loads(state.read_text())["finished"]
    assert sorted(fin) == [f"run-{k}" for k in range(7)]
    assert all(
        r["audited"] and r["profile"]["steps"] >= 3 and r["profile"]["first_edit"] == 1
        for r in fin.values()
    )
    assert refs[:5] == [None] * 5 and refs[5].n == 5 and refs[6].n == 6
    # a halting model in the same pass: the run is recorded halted (audit share 0: no run is audited)
    clear_cache()
    doomed = constant_model(tmp_path / "doomed", 0.2, ALWAYS_FAIL)
    (tmp_path / "wd").mkdir()
    model = DeterministicModel(
        outputs=list(outputs), **({} if MINI_SWE_AGENT_V2 else {"cost_per_call": 0.0})
    )
    cfg = dict(cost_limit=0, step_limit=0)
    if MINI_SWE_AGENT_V2:
        cfg.update(
            system_template="You are a test agent.",
            instance_template="Task: {{task}}",
            output_path=tmp_path / "wd" / "run.traj.json",
        )
    agent = EarlyStopAgent(
        model,
        LocalEnvironment(cwd=str(tmp_path / "wd")),
        run_id="run-d",
        earlyeval={
            "model": str(doomed),
            "pass": {"state": str(tmp_path / "p2.json"), "audit_share": 0.0},
        },
        **cfg,
    )
    try:
        agent.run("fix the bug")
    except PredictedFailure:
        pass
    rec = json.loads((tmp_path / "p2.json").read_text())["finished"]["run-d"]
    assert rec["halted"] is True and not rec["audited"] and rec["steps"] == 2
    clear_cache()


def test_a_pass_block_is_refused_by_an_adapter_that_cannot_tell_it_a_run_ended(tmp_path):
    from _monitor_helpers import NEVER_HALT, constant_model

    from earlyeval.integrations.config import ConfigError, monitor_from_config

    m = constant_model(tmp_path / "m", 0.2, NEVER_HALT)
    with pytest.raises(ConfigError, match=r"earlyeval\.pass: this adapter"):
        monitor_from_config({"model": str(m), "pass": {"state": str(tmp_path / "p.json")}})
    with pytest.raises(ConfigError, match=r"pass\.audit_share"):
        monitor_from_config(
            {"model": str(m), "pass": {"state": "p.json", "audit_share": 2}}, allow_pass=True
        )

"""SWE-agent 1.1.0, the real one: the hook inside ``DefaultAgent``'s own loop, offline (tests/_sweagent_loop.py:
SWE-agent's ``PredeterminedTestModel``, SWE-ReX's dummy deployment with a runtime that runs the commands in a
temporary git repository), and ``earlyeval-sweagent run`` (SWE-agent's own CLI and runner, its replay model,
the dummy deployment).  Skipped, saying so, where SWE-agent is not installed (``make install-sweagent``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

sweagent = pytest.importorskip(
    "sweagent",
    reason="SWE-agent 1.1.0 is installed by `make install-sweagent` "
    "(from ../shared/vendor); not installed here",
)

import _paths  # noqa: E402
from _integration_fakes import ScriptedMonitor  # noqa: E402
from _monitor_helpers import ALWAYS_FAIL, ALWAYS_SUCCEED  # noqa: E402
from _sweagent_loop import SUBMIT, agent_and_env, git_repo, problem, tool_call  # noqa: E402
from sweagent.types import StepOutput  # noqa: E402

from earlyeval.integrations.config import ConfigError  # noqa: E402
from earlyeval.integrations.swe_agent import EarlyStopHook, actions_of  # noqa: E402

FILES = {"mod.py": "a = 1\n", "repro.py": "import mod\nassert mod.a == 2, 'still broken'\n"}
OUTPUTS = [
    tool_call(0, "cat mod.py", "look"),
    tool_call(1, "python repro.py", "reproduce"),
    tool_call(2, "sed -i 's/1/3/' mod.py", "wrong fix"),
    tool_call(3, "python repro.py", "check"),
    tool_call(4, SUBMIT, "submit"),
]


def _run(tmp_path, outputs, hook, usage="per_step"):
    repo = git_repo(tmp_path / "repo", FILES)
    agent, env = agent_and_env(repo, tmp_path / "sandbox", outputs, usage=usage)
    agent.add_hook(hook)
    result = agent.run(
        env=env,
        problem_statement=problem("demo__demo-1", "make a equal 2"),
        output_dir=tmp_path / "out",
    )
    saved = json.loads((tmp_path / "out" / "demo__demo-1.traj").read_text())
    return agent, result, saved, repo


def test_failure_halt_ends_the_real_loop_through_its_autosubmission(tmp_path):
    mon = ScriptedMonitor(halt_at=2)
    agent, result, saved, _ = _run(tmp_path, OUTPUTS, EarlyStopHook(mon))
    assert sweagent.__version__ == "1.1.0"
    assert agent.model._idx == 2  # three model calls: the loop stopped after the 3rd step
    assert [s.kind for s in mon.steps] == ["view", "test", "edit"]
    assert "still broken" in mon.steps[1].observation
    assert [(s.input_tokens, s.output_tokens) for s in mon.steps] == [
        (200, 10)
    ] * 3  # deltas of model_stats
    assert mon.starts[0][1] == "demo__demo-1" and mon.starts[0][0].prompt == "make a equal 2"
    info = saved["info"]
    # SWE-agent's forced-exit convention
    assert info["exit_status"] == "submitted (PredictedFailure)"
    # the repository's real diff
    assert "-a = 1" in info["submission"] and "+a = 3" in info["submission"]
    ee = info["earlyeval"]  # in the .traj file, where SWE-agent users read a run
    # (the fake has no setting)
    assert ee["halted"] is True and ee["halt"]["step_index"] == 2 and ee["halt_on"] is None
    assert [h["p_failure"] for h in ee["history"]] == pytest.approx([0.2, 0.3, 0.4])
    # the returned AgentRunResult: AgentInfo (a validated TypedDict) keeps its declared keys and drops ours
    assert (
        result.info["exit_status"] == info["exit_status"]
        and result.info["submission"] == info["submission"]
    )
    assert "earlyeval" not in result.info


def test_failure_halt_without_autosubmission(tmp_path):
    agent, _, saved, _ = _run(
        tmp_path, OUTPUTS, EarlyStopHook(ScriptedMonitor(halt_at=0), autosubmit=False)
    )
    assert agent.model._idx == 0
    assert (
        saved["info"]["exit_status"] == "PredictedFailure" and saved["info"]["submission"] is None
    )


def test_success_waits_for_a_patch_then_submits_it_through_swe_agent(tmp_path):
    """Success is predicted from the first step on; the repository has no diff before the 3rd step edits
    mod.py and creates new.py: the run goes on (the decisions say why), then ends ``submitted
    (PredictedSuccess)`` with SWE-agent's own submission of that diff (the new file included)."""
    outputs = [
        tool_call(0, "cat mod.py", "look"),
        tool_call(1, "python repro.py", "reproduce"),
        tool_call(2, "sed -i 's/1/2/' mod.py && echo 'b = 3' > new.py", "fix"),
        tool_call(3, "python repro.py", "check"),
        tool_call(4, SUBMIT, "submit"),
    ]
    mon = ScriptedMonitor(halt_at=0, outcome="success")
    hook = EarlyStopHook(mon)
    agent, result, saved, _ = _run(tmp_path, outputs, hook)
    assert agent.model._idx == 2
    info = saved["info"]
    assert info["exit_status"] == "submitted (PredictedSuccess)"
    assert "+a = 2" in info["submission"] and "diff --git a/new.py b/new.py" in info["submission"]
    assert result.info["submission"] == info["submission"]
    ee = info["earlyeval"]
    assert [h["halt"] for h in ee["history"]] == [False, False, True]
    assert all("no candidate patch yet" in d.reason for d in hook.stopper.decisions[:2])
    assert ee["submission"]["files"] == 2


def test_success_never_halts_a_run_without_a_patch(tmp_path):
    outputs = [
        tool_call(0, "cat mod.py", "look"),
        tool_call(1, "python repro.py", "reproduce"),
        tool_call(2, SUBMIT, "submit"),
    ]
    agent, _, saved, _ = _run(
        tmp_path, outputs, EarlyStopHook(ScriptedMonitor(halt_at=0, outcome="success"))
    )
    assert agent.model._idx == 2  # every reply was used: the agent's own submit ended the run
    assert (
        saved["info"]["exit_status"] == "submitted"
        and saved["info"]["earlyeval"]["halted"] is False
    )


def test_not_halted_run_submits_normally(tmp_path):
    outputs = [
        tool_call(0, "sed -i 's/1/2/' mod.py", "fix"),
        tool_call(1, "python repro.py", "check"),
        tool_call(2, SUBMIT, "submit"),
    ]
    mon = ScriptedMonitor(halt_at=None)
    agent, _, saved, _ = _run(tmp_path, outputs, EarlyStopHook(mon))
    # the submitting step is done: not scored
    assert [s.kind for s in mon.steps] == [
        "edit",
        "test",
    ]
    info = saved["info"]
    assert info["exit_status"] == "submitted" and "+a = 2" in info["submission"]
    assert info["earlyeval"]["halted"] is False and len(info["earlyeval"]["history"]) == 2


def test_hook_steps_are_the_ingestor_steps_of_the_saved_traj(tmp_path):
    """Live == training on SWE-agent 1.x function calling: the .traj the real loop saved, read by the
    swe-agent-traj ingestor, has the Steps the hook built (text, kinds, thought, observation); the submitting
    turn, never scored live, is the ingestor's last step.  Usage differs by design (and the outcome model reads
    none): the hook has per-step deltas of info.model_stats, the .traj only the instance totals (per-step None)."""
    from earlyeval.config.catalog import RunSpec
    from earlyeval.ingest.swe_agent import parse

    mon = ScriptedMonitor(halt_at=None)
    _run(tmp_path, OUTPUTS, EarlyStopHook(mon))
    spec = RunSpec(
        name="real",
        folder=str(tmp_path / "out"),
        agent="a",
        scaffold="swe-agent",
        model="m",
        format="swe-agent-traj",
    )
    [t] = list(parse(tmp_path / "out" / "demo__demo-1.traj", spec, "swebench"))
    fields = ("index", "action", "kind", "thought", "observation", "error", "actions")
    live = [{k: s.to_dict()[k] for k in fields} for s in mon.steps]
    assert live == [{k: s.to_dict()[k] for k in fields} for s in t.steps[:-1]]
    assert (
        len(live) == 4
        and "<<SWE_AGENT_SUBMISSION>>" in t.steps[-1].action
        and t.meta["requeried_turns"] == 0
    )
    assert all(s.input_tokens is None for s in t.steps) and all(
        s.input_tokens is not None for s in mon.steps
    )


def test_crashing_monitor_never_stops_the_agent(tmp_path):
    outputs = [tool_call(0, "ls", "look"), tool_call(1, SUBMIT, "submit")]
    _, _, saved, _ = _run(tmp_path, outputs, EarlyStopHook(ScriptedMonitor(raise_in_observe=True)))
    assert saved["info"]["exit_status"] == "submitted"
    assert "scripted monitor failure" in saved["info"]["earlyeval"]["errors"][0]


def _model_dir(tmp_path, th):
    """A model dir of constant P(success) (0.8 when ``th`` halts on success, else 0.2): halts at step 2 or never."""
    from _monitor_helpers import constant_model

    return constant_model(tmp_path / "m", 0.8 if th == ALWAYS_SUCCEED else 0.2, th)


def test_from_config_halts_on_failure_only_by_default(tmp_path):
    """A model dir of constant probability: always-failure halts at the first eligible step;
    always-success never halts under the default ``halt_on: failure``."""
    fail = _model_dir(tmp_path / "f", ALWAYS_FAIL)
    agent, _, saved, _ = _run(
        tmp_path / "a",
        OUTPUTS,
        EarlyStopHook.from_config({"model": str(fail), "autosubmit": False}),
    )
    assert agent.model._idx == 1
    ee = saved["info"]["earlyeval"]
    assert (
        saved["info"]["exit_status"] == "PredictedFailure"
        and ee["halt"]["step_index"] == 1
        and ee["halt_on"] == "failure"
    )
    assert all(0.0 < h["p_success"] < 1.0 for h in ee["history"])
    succ = _model_dir(tmp_path / "s", ALWAYS_SUCCEED)
    _, _, saved, _ = _run(tmp_path / "b", OUTPUTS, EarlyStopHook.from_config({"model": str(succ)}))
    assert (
        saved["info"]["exit_status"] == "submitted"
        and saved["info"]["earlyeval"]["halted"] is False
    )
    assert "success halts off" in saved["info"]["earlyeval"]["last_decision"]["reason"]


def test_a_pass_block_hears_of_each_run_end_through_the_real_loop(tmp_path):
    """``pass: {state: ...}`` in the hook's block: SWE-agent's own ``on_run_done`` tells the pass the run ended,
    halted (audit share 0) or not (audit share 1: never halted, its profile recorded)."""
    from _monitor_helpers import constant_model

    from earlyeval.integrations.config import clear_cache

    clear_cache()
    fail = constant_model(tmp_path / "f", 0.2, ALWAYS_FAIL, families=("behaviour", "pass"))
    for share, sub in ((0.0, "a"), (1.0, "b")):
        state = tmp_path / f"{sub}.json"
        hook = EarlyStopHook.from_config(
            {
                "model": str(fail),
                "autosubmit": False,
                "pass": {"state": str(state), "audit_share": share},
            }
        )
        agent, _, saved, _ = _run(tmp_path / sub, OUTPUTS, hook)
        rec = json.loads(state.read_text())["finished"]["demo__demo-1"]
        assert rec["audited"] == (share == 1.0) and rec["halted"] == (share == 0.0)
        # the steps scored
        assert (rec.get("profile") or {}).get("steps") == (None if share == 0.0 else rec["steps"])
        # halted at step 2; the submitting step unscored
        assert rec["steps"] == (2 if share == 0.0 else len(OUTPUTS) - 1)
        assert saved["info"]["earlyeval"]["halted"] == (share == 0.0)
    clear_cache()


def test_from_config_errors_name_the_key():
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['autosubmitt'\]"):
        EarlyStopHook.from_config({"model": "m", "autosubmitt": True})
    with pytest.raises(
        ConfigError,
        match=r"earlyeval.halt_on: 'sometimes' is not one of 'failure', 'success', 'both'",
    ):
        EarlyStopHook.from_config({"model": "m", "halt_on": "sometimes"})


def test_actions_of_swe_agent_step_outputs_and_unknown_hooks():
    a = actions_of(StepOutput(action="find_file mod.py"))
    assert (a[0].tool, a[0].text) == ("find_file", "mod.py")
    b = actions_of(StepOutput(action="pytest -x tests"))
    assert (b[0].tool, b[0].text) == ("bash", "pytest -x tests")
    assert actions_of(StepOutput(action="")) == []
    hook = EarlyStopHook(ScriptedMonitor())
    assert hook.on_some_future_hook(step=None) is None  # new hooks in SWE-agent are no-ops
    with pytest.raises(AttributeError):
        hook.not_a_hook


# ---------------------------------------------------------------- earlyeval-sweagent run (the console script)

EARLYEVAL_SWEAGENT = [
    sys.executable,
    "-c",
    "import sys; from earlyeval.integrations.launchers.sweagent_cli import main; main()",
]
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(_paths.REPO)}


def _cli_files(tmp_path):
    actions = [
        "DISCUSSION\nlook\n\n```\nls\n```",
        "DISCUSSION\nread\n\n```\ncat mod.py\n```",
        "DISCUSSION\ntest\n\n```\npython repro.py\n```",
        "DISCUSSION\ndone\n\n```\nsubmit\n```",
    ]
    (tmp_path / "replay.jsonl").write_text(json.dumps({"demo__demo-1": actions}) + "\n")
    cfg = {
        "agent": {
            "model": {"name": "replay", "replay_path": str(tmp_path / "replay.jsonl")},
            "tools": {"parse_function": {"type": "thought_action"}, "bundles": []},
        },
        "env": {"deployment": {"type": "dummy"}, "repo": None},
        "problem_statement": {"type": "text", "text": "make a equal 2", "id": "demo__demo-1"},
        "output_dir": str(tmp_path / "out"),
    }
    import yaml

    (tmp_path / "run.yaml").write_text(yaml.safe_dump(cfg))
    return tmp_path / "run.yaml"


def test_earlyeval_sweagent_run_switches_the_hook_on_from_a_config_file(tmp_path):
    model = _model_dir(tmp_path, ALWAYS_FAIL)
    (tmp_path / "ee.yaml").write_text(f"earlyeval:\n  model: {model}\n  autosubmit: false\n")
    r = subprocess.run(
        [
            *EARLYEVAL_SWEAGENT,
            "run",
            "--earlyeval",
            str(tmp_path / "ee.yaml"),
            "--config",
            str(_cli_files(tmp_path)),
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    traj = json.loads((tmp_path / "out" / "demo__demo-1" / "demo__demo-1.traj").read_text())
    assert traj["info"]["exit_status"] == "PredictedFailure"
    assert (
        traj["info"]["earlyeval"]["halt"]["step_index"] == 1
        and traj["info"]["earlyeval"]["halt_on"] == "failure"
    )
    # halted after the 2nd step: the replay's 3rd and 4th actions never ran
    assert len(traj["trajectory"]) == 2
    # SWE-agent's runner wrote it
    pred = json.loads((tmp_path / "out" / "demo__demo-1" / "demo__demo-1.pred").read_text())
    # a predicted failure, not autosubmitted
    assert pred["instance_id"] == "demo__demo-1" and pred["model_patch"] is None


def test_earlyeval_sweagent_bad_block_exits_2_before_any_environment(tmp_path):
    (tmp_path / "ee.yaml").write_text("earlyeval:\n  model: nope\n  halt_on: sometimes\n")
    r = subprocess.run(
        [
            *EARLYEVAL_SWEAGENT,
            "run",
            "--earlyeval",
            str(tmp_path / "ee.yaml"),
            "--config",
            str(_cli_files(tmp_path)),
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (
        r.returncode == 2
        and "earlyeval.halt_on: 'sometimes' is not one of 'failure', 'success', 'both'" in r.stderr
    )
    assert not (tmp_path / "out").exists()
    r = subprocess.run(
        [*EARLYEVAL_SWEAGENT, "nope"], env=ENV, capture_output=True, text=True, timeout=600
    )
    assert r.returncode == 2 and "unknown command 'nope' (available: run)" in r.stderr


def test_declared_console_script_is_the_runner():
    import importlib
    import tomllib

    target = tomllib.loads((_paths.REPO / "pyproject.toml").read_text())["project"]["scripts"][
        "earlyeval-sweagent"
    ]
    mod, fn = target.split(":")
    from earlyeval.integrations.launchers.sweagent_cli import main

    assert getattr(importlib.import_module(mod), fn) is main


class _Counting:
    """Counts the agent's autosubmissions and keeps what its own logger printed."""

    def __init__(self, agent):
        import logging

        self.calls = 0
        real = agent.attempt_autosubmission_after_error

        def counted(step):
            self.calls += 1
            return real(step)

        agent.attempt_autosubmission_after_error = counted
        self.lines: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda record: self.lines.append(record.getMessage())
        agent.logger.addHandler(handler)


class _DiffState:
    """What SWE-agent's diff_state tool puts in a step's state: the repository's diff (read without staging)."""

    def __init__(self, repo):
        self.repo = repo

    def __getattr__(self, name):
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)

    def on_step_done(self, *, step, info):
        diff = subprocess.run(
            "git diff", shell=True, cwd=self.repo, capture_output=True, text=True
        ).stdout
        step.state = {**(step.state or {}), "diff": diff}


WAITING = [
    tool_call(0, "cat mod.py", "look"),
    tool_call(1, "grep -n a mod.py", "search"),
    tool_call(2, "cat repro.py", "look again"),
    tool_call(3, "sed -i 's/1/2/' mod.py", "fix"),
    tool_call(4, "python repro.py", "check"),
    tool_call(5, SUBMIT, "submit"),
]


def test_a_waiting_success_halt_probes_the_repository_only_when_it_may_have_changed(tmp_path):
    """Issue 29: while a success halt waits for a patch, the agent's autosubmission (``git add -A``, and its
    "Attempting autosubmission after error" warning) ran on every step.  Now: once, then not after views and
    searches; the probes are quiet in the agent's log, which gets one line that the run waits and one for the halt."""
    repo = git_repo(tmp_path / "repo", FILES)
    agent, env = agent_and_env(repo, tmp_path / "sandbox", WAITING)
    seen = _Counting(agent)
    hook = EarlyStopHook(ScriptedMonitor(halt_at=0, outcome="success"))
    agent.add_hook(hook)
    agent.run(
        env=env,
        problem_statement=problem("demo__demo-1", "make a equal 2"),
        output_dir=tmp_path / "out",
    )
    info = json.loads((tmp_path / "out" / "demo__demo-1.traj").read_text())["info"]
    assert info["exit_status"] == "submitted (PredictedSuccess)" and "+a = 2" in info["submission"]
    assert agent.model._idx == 3  # halted after the edit, the 4th step
    # step 0 (nothing), skipped after the search and the view, step 3 (the patch)
    assert seen.calls == 2
    assert not [l for l in seen.lines if l.startswith("Attempting autosubmission")], seen.lines
    assert [
        l
        for l in seen.lines
        if l.startswith("earlyeval halted the run after step 3: PredictedSuccess")
    ]
    assert (
        len([l for l in seen.lines if l.startswith("earlyeval: success predicted at step 0")]) == 1
    ), seen.lines


def test_a_waiting_success_halt_reads_swe_agents_own_diff_state_first(tmp_path):
    """With the diff in the step's state (SWE-agent's diff_state tool), an empty diff is never autosubmitted:
    the only autosubmission is the one that halts."""
    repo = git_repo(tmp_path / "repo", FILES)
    outputs = [
        tool_call(0, "cat mod.py", "look"),
        tool_call(1, "python repro.py", "run"),
        tool_call(2, "sed -i 's/1/2/' mod.py", "fix"),
        tool_call(3, SUBMIT, "submit"),
    ]
    agent, env = agent_and_env(repo, tmp_path / "sandbox", outputs)
    seen = _Counting(agent)
    # before ours: SWE-agent fills the state before the hooks hear of the step
    agent.add_hook(_DiffState(repo))
    agent.add_hook(EarlyStopHook(ScriptedMonitor(halt_at=0, outcome="success")))
    agent.run(
        env=env,
        problem_statement=problem("demo__demo-1", "make a equal 2"),
        output_dir=tmp_path / "out",
    )
    info = json.loads((tmp_path / "out" / "demo__demo-1.traj").read_text())["info"]
    assert info["exit_status"] == "submitted (PredictedSuccess)" and "+a = 2" in info["submission"]
    assert seen.calls == 1 and agent.model._idx == 2


def test_a_failure_halt_is_one_line_in_the_agents_log(tmp_path):
    repo = git_repo(tmp_path / "repo", FILES)
    agent, env = agent_and_env(repo, tmp_path / "sandbox", OUTPUTS)
    seen = _Counting(agent)
    agent.add_hook(EarlyStopHook(ScriptedMonitor(halt_at=2)))
    agent.run(
        env=env,
        problem_statement=problem("demo__demo-1", "make a equal 2"),
        output_dir=tmp_path / "out",
    )
    halts = [l for l in seen.lines if l.startswith("earlyeval halted")]
    assert (
        len(halts) == 1
        and "after step 2: PredictedFailure" in halts[0]
        and "p_success=" in halts[0]
    ), seen.lines
    assert seen.calls == 1  # the failure's own autosubmission (SWE-agent's forced-exit convention)

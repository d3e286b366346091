"""SWE-agent hook, against a faithful stand-in of SWE-agent 1.x's loop (tests/_sweagent_standin.py).

SWE-agent cannot be installed here (not on PyPI; see docs/integrations.md), so
these tests drive the hook through a copy of the published control flow that
matters to it: hook call order, the StepOutput object identity between
``on_step_done`` and ``run()``'s ``while not step_output.done``, ``info``
saved after every step, and the autosubmission path.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from _integration_fakes import ScriptedMonitor
from _sweagent_standin import DefaultAgent, Env, ProblemStatement, ScriptedModel, StepOutput
from earlyeval.integrations.swe_agent import EarlyStopHook, actions_of


def _tc(i, name, args, thought):
    return {"message": thought, "tool_calls": [{"id": f"call_{i}", "type": "function",
                                                 "function": {"name": name, "arguments": json.dumps(args)}}]}


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    (root / "mod.py").write_text("a = 1\n")
    (root / "repro.py").write_text("import mod\nassert mod.a == 2, 'still broken'\n")
    subprocess.run("git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm init", shell=True, cwd=root, check=True)
    return root


OUTPUTS = [
    _tc(0, "str_replace_editor", {"command": "view", "path": "/repo/mod.py"}, "look"),
    _tc(1, "bash", {"command": "python repro.py"}, "reproduce"),
    _tc(2, "bash", {"command": "sed -i 's/1/3/' mod.py"}, "wrong fix"),
    _tc(3, "bash", {"command": "python repro.py"}, "check"),
    _tc(4, "submit", {}, "submit"),
]


def _run(repo, tmp_path, outputs, hook):
    agent = DefaultAgent(ScriptedModel(outputs))
    agent.add_hook(hook)
    result = agent.run(Env(repo), ProblemStatement("demo__demo-1", "make a equal 2"), tmp_path / "out")
    saved = json.loads((tmp_path / "out" / "demo__demo-1.traj").read_text())
    return agent, result, saved


def test_halt_ends_run_through_done_with_autosubmission(repo, tmp_path):
    mon = ScriptedMonitor(halt_at=2)
    agent, result, saved = _run(repo, tmp_path, OUTPUTS, EarlyStopHook(mon))

    assert agent.model.n_queries == 3  # the loop stopped after the 3rd step
    assert [s.kind for s in mon.steps] == ["view", "test", "edit"]
    assert mon.steps[0].action == "str_replace_editor view /repo/mod.py"
    assert "still broken" in mon.steps[1].observation
    assert (mon.steps[1].input_tokens, mon.steps[1].output_tokens) == (200, 10)  # deltas of cumulative model_stats
    assert mon.starts == [(mon.starts[0][0], "demo__demo-1")] and mon.starts[0][0].prompt == "make a equal 2"
    info = saved["info"]
    assert info["exit_status"] == "submitted (PredictedFailure)"  # SWE-agent's own forced-exit convention
    assert "-a = 1" in info["submission"] and "+a = 3" in info["submission"]
    ee = info["earlyeval"]
    assert ee["halted"] is True and ee["halt"]["p_failure"] == pytest.approx(0.4) and ee["halt"]["step_index"] == 2
    assert [h["p_failure"] for h in ee["history"]] == pytest.approx([0.2, 0.3, 0.4])
    assert result["info"]["exit_status"] == info["exit_status"]


def test_halt_without_autosubmission(repo, tmp_path):
    mon = ScriptedMonitor(halt_at=0, outcome="success")
    agent, result, saved = _run(repo, tmp_path, OUTPUTS, EarlyStopHook(mon, autosubmit=False))
    assert agent.model.n_queries == 1
    assert saved["info"]["exit_status"] == "PredictedSuccess"
    assert saved["info"]["submission"] is None
    assert saved["info"]["earlyeval"]["halt"]["p_success"] == pytest.approx(0.7)


def test_not_halted_run_submits_normally(repo, tmp_path):
    outputs = [
        _tc(0, "bash", {"command": "sed -i 's/1/2/' mod.py"}, "fix"),
        _tc(1, "bash", {"command": "python repro.py"}, "check"),
        _tc(2, "submit", {}, "submit"),
    ]
    mon = ScriptedMonitor(halt_at=None)
    agent, result, saved = _run(repo, tmp_path, outputs, EarlyStopHook(mon))
    assert agent.model.n_queries == 3
    assert [s.kind for s in mon.steps] == ["edit", "test"]  # the submitting step is done: not scored
    info = saved["info"]
    assert info["exit_status"] == "submitted" and "+a = 2" in info["submission"]
    assert info["earlyeval"]["halted"] is False and len(info["earlyeval"]["history"]) == 2


def test_hook_steps_are_the_ingestor_steps_of_the_saved_traj(repo, tmp_path):
    """Live == training on SWE-agent 1.x function calling: the .traj the run saved, read by the swe-agent-traj
    ingestor, has the Steps the hook built (text, kinds, thought, observation); the submitting turn, never
    scored live, is the ingestor's last step.  Usage differs by design: the hook has per-step deltas of
    info.model_stats, the .traj only the instance totals (per-step None)."""
    from earlyeval.config.catalog import RunSpec
    from earlyeval.ingest.swe_agent import parse

    mon = ScriptedMonitor(halt_at=None)
    _run(repo, tmp_path, OUTPUTS, EarlyStopHook(mon))
    spec = RunSpec(name="standin", folder=str(tmp_path / "out"), agent="a", scaffold="swe-agent", model="m", format="swe-agent-traj")
    [t] = list(parse(tmp_path / "out" / "demo__demo-1.traj", spec, "swebench"))
    fields = ("index", "action", "kind", "thought", "observation", "error", "actions")
    live = [{k: s.to_dict()[k] for k in fields} for s in mon.steps]
    assert live == [{k: s.to_dict()[k] for k in fields} for s in t.steps[:-1]]
    assert len(live) == 4 and t.steps[-1].kind == "submit" and t.meta["requeried_turns"] == 0
    assert all(s.input_tokens is None for s in t.steps) and all(s.input_tokens is not None for s in mon.steps)


def test_crashing_monitor_never_stops_the_agent(repo, tmp_path):
    outputs = [_tc(0, "bash", {"command": "ls"}, "look"), _tc(1, "submit", {}, "submit")]
    mon = ScriptedMonitor(raise_in_observe=True)
    agent, result, saved = _run(repo, tmp_path, outputs, EarlyStopHook(mon))
    assert saved["info"]["exit_status"] == "submitted"
    assert "scripted monitor failure" in saved["info"]["earlyeval"]["errors"][0]


def test_actions_of_thought_action_format_and_unknown_hooks():
    a = actions_of(StepOutput(action="find_file mod.py"))
    assert (a[0].tool, a[0].text) == ("find_file", "mod.py")
    b = actions_of(StepOutput(action="pytest -x tests"))
    assert (b[0].tool, b[0].text) == ("bash", "pytest -x tests")
    assert actions_of(StepOutput(action="")) == []
    hook = EarlyStopHook(ScriptedMonitor())
    assert hook.on_some_future_hook(step=None) is None  # new hooks in SWE-agent are no-ops
    with pytest.raises(AttributeError):
        hook.not_a_hook


def test_from_config_with_a_trained_model_halts_through_done(repo, tmp_path):
    """No monitor object: the hook loads a model dir (trained here; failure threshold 0 = halt at the first
    eligible step) from an earlyeval block; the run ends through SWE-agent's forced-exit path."""
    from _monitor_helpers import make_runs, make_tasks, train_bundle
    from earlyeval.modeling.modeldir import save_model_dir

    th = {"success": 2.0, "failure": 0.0, "min_halt_step": 2}
    bundle, _, _ = train_bundle(make_runs(40, 0), make_tasks(12), families=("behaviour",), thresholds=dict(th))
    save_model_dir(bundle, tmp_path / "m")
    hook = EarlyStopHook.from_config({"model": str(tmp_path / "m"), "autosubmit": False})
    agent, result, saved = _run(repo, tmp_path, OUTPUTS, hook)
    assert agent.model.n_queries == 2
    info = saved["info"]
    assert info["exit_status"] == "PredictedFailure" and info["earlyeval"]["halt"]["step_index"] == 1
    assert all(0.0 < h["p_success"] < 1.0 for h in info["earlyeval"]["history"])


def test_from_config_unknown_key_is_a_named_error():
    from earlyeval.integrations.config import ConfigError

    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['autosubmitt'\]"):
        EarlyStopHook.from_config({"model": "m", "autosubmitt": True})

"""mini-swe-agent switched on from its own YAML config, no Python: the real ``mini`` CLI and the real
``mini-extra swebench`` batch code (through ``earlyeval-mini swebench``), offline, with the package's
DeterministicModel, LocalEnvironment and a tiny model directory trained here.

The model dirs' thresholds are the halting rule's two ends (0 = halt at the first eligible step, 2 =
never), so which runs halt is known in advance; what is tested is the wiring: the YAML reaches the
agent, the monitor's own probabilities reach the trajectory, the task reaches the monitor, and the
framework records the halt (exit status, submission).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import _paths
import pytest

pytest.importorskip("minisweagent")
yaml = pytest.importorskip("yaml")

from _monitor_helpers import ALWAYS_FAIL, ALWAYS_SUCCEED, NEVER_HALT, constant_model  # noqa: E402
from synth import gold_patch  # noqa: E402

REPO = _paths.REPO
ENV = {
    **os.environ,
    "MSWEA_SILENT_STARTUP": "1",
    "MSWEA_CONFIGURED": "true",
    "MSWEA_COST_TRACKING": "ignore_errors",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_OFFLINE": "1",
    "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}",
}
NEVER = NEVER_HALT


def _model(path: Path, th: dict, families=("behaviour",)) -> Path:
    """A constant-probability model: P(success) 0.8 where success halts (ALWAYS_SUCCEED and its variants), else 0.2
    (halts by construction)."""
    return constant_model(path, 0.8 if th["success"] <= 1 else 0.2, th, families)


def _out(thought: str, cmd: str) -> dict:
    return {
        "role": "assistant",
        "content": f"THOUGHT: {thought}\n\n```mswea_bash_command\n{cmd}\n```",
        "extra": {"actions": [{"command": cmd}], "cost": 0.0},
    }


STEPS = [
    ("look", "ls"),
    ("read", "cat mod.py"),
    ("fix", "sed -i 's/1/2/' mod.py"),
    ("test", "python -c 'import mod'"),
    ("submit", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
]


def _config(tmp_path: Path, earlyeval: dict, **env) -> Path:
    cfg = {
        "agent": {
            "agent_class": "earlyeval.integrations.mini_swe_agent.EarlyStopAgent",
            "earlyeval": earlyeval,
            "system_template": "You are a test agent.",
            "instance_template": "Task: {{task}}",
            "step_limit": 0,
            "cost_limit": 0,
        },
        "model": {
            "model_class": "deterministic",
            "model_name": "deterministic",
            "outputs": [_out(t, c) for t, c in STEPS],
        },
        "environment": {"environment_class": "local", **env},
    }
    p = tmp_path / "earlyeval.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def _repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "mod.py").write_text("a = 1\n")
    subprocess.run(
        "git init -q && git add mod.py && git -c user.email=t@t -c user.name=t commit -qm init",
        shell=True,
        cwd=path,
        check=True,
    )
    return path


def _split(cfg: Path) -> list[Path]:
    """The config as the docs give it: the run's own YAML, plus an earlyeval.yaml with only the earlyeval keys."""
    c = yaml.safe_load(cfg.read_text())
    ee = {
        "agent": {
            "agent_class": c["agent"].pop("agent_class"),
            "earlyeval": c["agent"].pop("earlyeval"),
        }
    }
    base, extra = cfg.with_name("base.yaml"), cfg.with_name("earlyeval-only.yaml")
    base.write_text(yaml.safe_dump(c))
    extra.write_text(yaml.safe_dump(ee))
    return [base, extra]


def _mini(
    cfg: Path | list[Path],
    out: Path,
    cwd: Path,
    task: str = "make a equal 2",
    *,
    yolo: bool = True,
    stdin: str = "",
) -> subprocess.CompletedProcess:
    """The real `mini` CLI (its typer app, as the console script runs it); without ``yolo`` mini confirms each
    command on stdin (``stdin``: the scripted answers, one per line)."""
    code = "import sys; from minisweagent.run.mini import app; sys.exit(app())"
    specs = [a for p in (cfg if isinstance(cfg, list) else [cfg]) for a in ("-c", str(p))]
    flags = ["-y"] if yolo else []
    return subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            *specs,
            "-t",
            task,
            *flags,
            "--exit-immediately",
            "-o",
            str(out),
        ],
        cwd=cwd,
        env=ENV,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_mini_yaml_agent_class_and_earlyeval_block_halt_a_run(tmp_path):
    model = _model(tmp_path / "m", ALWAYS_FAIL)
    repo = _repo(tmp_path / "repo")
    cfg = _config(tmp_path, {"model": str(model), "task": "demo__demo-1"}, cwd=str(repo))
    out = tmp_path / "run.traj.json"
    r = _mini(_split(cfg), out, repo)  # -c base.yaml -c earlyeval-only.yaml: merged by mini
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    saved = json.loads(out.read_text())
    info = saved["info"]
    assert info["exit_status"] == "PredictedFailure" and info["submission"] == ""
    # under `mini`, EarlyStopAgent is the interactive variant (mini's InteractiveAgent, here in yolo mode)
    assert (
        info["config"]["agent_type"]
        == "earlyeval.integrations.mini_swe_agent.EarlyStopInteractiveAgent"
    )
    assert info["config"]["agent"]["mode"] == "yolo"
    assert (
        "earlyeval stops the run: earlyeval halted the run after step 1: PredictedFailure"
        in r.stdout
    )
    assert "mini-swe-agent (step 2" in r.stdout  # mini's own step display
    ee = info["earlyeval"]
    # min_halt_step 2: the 2nd step is the first eligible
    assert ee["halted"] is True and ee["halt"]["step_index"] == 1
    assert (
        ee["thresholds"] == ALWAYS_FAIL
        and ee["config"]["model"] == str(model)
        and ee["config"]["task"] == "demo__demo-1"
    )
    ps = [h["p_success"] for h in ee["history"]]
    # the model's probabilities, not the thresholds
    assert len(ps) == 2 and all(0.0 < p < 1.0 for p in ps)
    assert (
        saved["messages"][-1]["role"] == "exit"
        and saved["messages"][-1]["extra"]["exit_status"] == "PredictedFailure"
    )
    assert (repo / "mod.py").read_text() == "a = 1\n"  # halted before the edit ran


def test_mini_confirm_mode_still_asks_before_each_command_and_the_monitor_still_halts(tmp_path):
    """No -y: mini's confirm mode.  Scripted stdin confirms the first command and rejects the second; the
    confirmations happen (mini's prompts are printed, the rejected command never runs), and the monitor
    (failure threshold 0, halting from the 2nd step) ends the run after the rejected turn."""
    model = _model(tmp_path / "m", ALWAYS_FAIL)
    repo = _repo(tmp_path / "repo")
    cfg = _config(tmp_path, {"model": str(model)}, cwd=str(repo))
    out = tmp_path / "run.traj.json"
    r = _mini(cfg, out, repo, yolo=False, stdin="\nnot this one\n")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.stdout.count("Execute 1 action(s)?") == 2  # mini asked before each of the two commands
    saved = json.loads(out.read_text())
    info = saved["info"]
    assert info["config"]["agent"]["mode"] == "confirm"
    assert (
        info["config"]["agent_type"]
        == "earlyeval.integrations.mini_swe_agent.EarlyStopInteractiveAgent"
    )
    texts = [
        m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
        for m in saved["messages"]
    ]
    # `ls` was confirmed and ran
    assert any("mod.py" in t and "<returncode>0</returncode>" in t for t in texts)
    assert any(
        "rejected your commands with the following message: not this one" in t for t in texts
    )
    assert (
        info["exit_status"] == "PredictedFailure" and info["earlyeval"]["halt"]["step_index"] == 1
    )
    assert "earlyeval stops the run" in r.stdout
    assert (repo / "mod.py").read_text() == "a = 1\n"


def test_mini_yaml_never_halting_model_lets_the_agent_submit(tmp_path):
    model = _model(tmp_path / "m", NEVER)
    repo = _repo(tmp_path / "repo")
    out = tmp_path / "run.traj.json"
    r = _mini(_config(tmp_path, {"model": str(model)}, cwd=str(repo)), out, repo)
    assert r.returncode == 0, r.stderr[-3000:]
    info = json.loads(out.read_text())["info"]
    assert info["exit_status"] == "Submitted" and info["earlyeval"]["halted"] is False
    assert len(info["earlyeval"]["history"]) == 4  # every step but the submitting one was scored


def test_mini_yaml_bad_earlyeval_block_is_a_clear_error(tmp_path):
    repo = _repo(tmp_path / "repo")
    r = _mini(_config(tmp_path, {"modle": "x"}, cwd=str(repo)), tmp_path / "o.json", repo)
    assert r.returncode != 0
    assert "agent.earlyeval: unknown key(s) ['modle']" in r.stderr + r.stdout


# what the `earlyeval-mini` console script runs (pyproject [project.scripts])
EARLYEVAL_MINI = [
    sys.executable,
    "-c",
    "import sys; from earlyeval.integrations.launchers.mini_cli import main; sys.argv[0] = 'earlyeval-mini'; main()",
]


def _dataset(path: Path, ids: list[int]) -> Path:
    path.mkdir(parents=True)
    with open(path / "test.jsonl", "w") as f:
        for i in ids:
            f.write(
                json.dumps(
                    {
                        "instance_id": f"repo__repo-{i}",
                        "problem_statement": f"compute_{i} returns the wrong value",
                        "patch": gold_patch(i, "value_{i}"),
                        "FAIL_TO_PASS": json.dumps([f"tests/test_mod{i}.py::t"]),
                        "PASS_TO_PASS": "[]",
                        "repo": "repo/repo",
                        "base_commit": "abc",
                    }
                )
                + "\n"
            )
    return path


def test_earlyeval_mini_swebench_batch_waits_for_the_diff_submits_it_and_passes_the_instance(
    tmp_path,
):
    """halt_on defaults to both in the batch runner.  Success is predicted from step 1 (min_halt_step 2) on, but
    no diff exists until step 2 edits mod.py and adds new.py: held at step 1, halted after step 2, and the
    diff (the untracked new file included) is the instance's preds.json patch."""
    # the built-in rule "change" (the test-only rule is not registered in the child process): the edit is evidence
    model = _model(
        tmp_path / "m",
        {**ALWAYS_SUCCEED, "success_evidence": "change"},
        families=("behaviour", "gold"),
    )
    repo = _repo(tmp_path / "repo")
    steps = [
        ("look", "ls"),
        ("read", "cat mod.py"),
        ("fix", "sed -i 's/1/2/' mod.py && echo 'b = 3' > new.py"),
        ("more", "ls"),
        ("submit", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
    ]
    cfg = _config(tmp_path, {"model": str(model)}, cwd=str(repo))
    c = yaml.safe_load(cfg.read_text())
    c["model"]["outputs"] = [_out(t, cmd) for t, cmd in steps]
    cfg.write_text(yaml.safe_dump(c))
    ds = _dataset(tmp_path / "ds", [1])
    out = tmp_path / "out"
    r = subprocess.run(
        [
            *EARLYEVAL_MINI,
            "swebench",
            "--subset",
            str(ds),
            "--split",
            "test",
            "-c",
            str(cfg),
            "-o",
            str(out),
        ],
        cwd=repo,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    preds = json.loads((out / "preds.json").read_text())
    patch = preds["repo__repo-1"]["model_patch"]
    assert patch.startswith("diff --git a/mod.py b/mod.py") and "+a = 2" in patch
    assert "diff --git a/new.py b/new.py" in patch and "+b = 3" in patch
    traj = json.loads((out / "repo__repo-1" / "repo__repo-1.traj.json").read_text())
    info = traj["info"]
    assert info["exit_status"] == "PredictedSuccess" and info["submission"] == patch
    ee = info["earlyeval"]
    assert ee["halt_on"] == "both" and ee["halt"]["step_index"] == 2
    # step 1: success predicted, no diff yet
    assert [h["halt"] for h in ee["history"]] == [
        False,
        False,
        True,
    ]
    # the instance reached the monitor; the config shows its id
    assert ee["config"]["task"] == "repo__repo-1"
    assert (
        info["config"]["agent_type"]
        == "earlyeval.integrations.launchers.mini_cli.EarlyStopProgressAgent"
    )
    # the instance (with its gold patch) reached the monitor: the gold family has its input
    assert info["earlyeval"]["last_decision"]["context"] == "full"
    statuses = next(out.glob("exit_statuses_*.yaml")).read_text()
    assert "PredictedSuccess" in statuses and "repo__repo-1" in statuses


def test_earlyeval_mini_swebench_bad_config_fails_before_any_instance(tmp_path):
    cfg = _config(tmp_path, {"model": str(tmp_path / "no-such-model")}, cwd=str(tmp_path))
    ds = _dataset(tmp_path / "ds", [1])
    r = subprocess.run(
        [
            *EARLYEVAL_MINI,
            "swebench",
            "--subset",
            str(ds),
            "--split",
            "test",
            "-c",
            str(cfg),
            "-o",
            str(tmp_path / "out"),
        ],
        cwd=tmp_path,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 2, r.stderr[-2000:]
    assert (
        "earlyeval-mini swebench: agent.earlyeval.model: cannot load" in r.stderr
        and "no-such-model" in r.stderr
    )
    assert not (tmp_path / "out" / "preds.json").exists()  # no instance was run


def test_earlyeval_mini_usage_errors_exit_2():
    r = subprocess.run([*EARLYEVAL_MINI, "nope"], env=ENV, capture_output=True, text=True)
    assert r.returncode == 2 and "unknown command 'nope' (available: swebench)" in r.stderr


def test_declared_console_script_is_the_runner():
    """pyproject's `earlyeval-mini` script resolves to the function the tests above run."""
    import importlib
    import tomllib

    target = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"][
        "earlyeval-mini"
    ]
    mod, fn = target.split(":")
    from earlyeval.integrations.launchers.mini_cli import main

    assert getattr(importlib.import_module(mod), fn) is main
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0

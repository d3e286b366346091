"""inspect_ai without replacing the agent: the approver ``earlyeval/early_stop`` from an ``--approval``
policy file ends a task's own ``react()`` agent, in real evals with ``mockllm/model``.

Model dirs are tiny (trained here) with thresholds at the rule's ends (``_inspect_helpers``), so which
samples halt is known in advance; the probabilities are the model's own.  The live/offline parity test
reads the run's ``.eval`` log back with the ``inspect-eval`` reader and replays it through a fresh Monitor.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("inspect_ai")

import _paths  # noqa: E402
from _inspect_helpers import (  # noqa: E402
    ALWAYS_FAIL,
    ALWAYS_SUCCEED,
    FAILING,
    NEVER,
    call,
    calls,
    dist_info,
    offline_token_count,
    react_task,
    run_eval,
    say,
    shell,
    submit,
    task_file,  # noqa: E402
    tiny_model,
)
from _inspect_helpers import policy as _policy  # noqa: E402
from _integration_fakes import Recording  # noqa: E402
from inspect_ai import Task  # noqa: E402
from inspect_ai.agent import react  # noqa: E402
from inspect_ai.approval import ApprovalPolicy, auto_approver  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.model import ChatMessageAssistant, ChatMessageTool  # noqa: E402
from inspect_ai.scorer import Score, accuracy, match, scorer  # noqa: E402
from inspect_ai.solver import Generate, TaskState, solver  # noqa: E402
from inspect_ai.tool import tool  # noqa: E402
from inspect_ai.util import registry_info, sandbox  # noqa: E402

from earlyeval.config.catalog import LabelSpec, RunSpec  # noqa: E402
from earlyeval.config.monitor_config import MonitorConfig  # noqa: E402
from earlyeval.core.trajectory import Task as EETask  # noqa: E402
from earlyeval.ingest import FORMATS  # noqa: E402
from earlyeval.integrations.config import ConfigError  # noqa: E402
from earlyeval.integrations.inspect_approver import early_stop  # noqa: E402
from earlyeval.live.loaded import LoadedModel  # noqa: E402
from earlyeval.live.monitor import Monitor  # noqa: E402
from earlyeval.live.replay import run_context  # noqa: E402

# "earlyeval/early_stop" when earlyeval is imported as installed (pip install -e .: inspect namespaces an installed
# package's objects), "early_stop" when it is imported from the checkout on sys.path (pytest from the repo root)
NAME = registry_info(early_stop).name


def policy(path, model, **keys):
    return _policy(path, model, name=NAME, **keys)


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    offline_token_count(monkeypatch)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("models")
    return {
        k: tiny_model(base / k, th)
        for k, th in {"fail": ALWAYS_FAIL, "succeed": ALWAYS_SUCCEED, "never": NEVER}.items()
    }


def _tool_calls(sample) -> list[str]:
    return [
        tc.arguments.get("cmd", tc.function)
        for m in sample.messages
        if isinstance(m, ChatMessageAssistant)
        for tc in (m.tool_calls or [])
    ]


def _ran(sample) -> list[str]:
    """Tool calls that ran: their results are in the history."""
    return [m.function for m in sample.messages if isinstance(m, ChatMessageTool)]


def _approvals(sample) -> list[tuple[str, str | None]]:
    return [(e.decision, e.explanation) for e in sample.events if e.event == "approval"]


def test_policy_file_ends_the_tasks_own_agent_on_predicted_failure(tmp_path, models):
    pol = policy(tmp_path / "policy.yaml", models["fail"])
    log, sample = run_eval(react_task(), FAILING, tmp_path / "logs", approval=str(pol))
    # the task's own agent ran
    assert log.eval.solver is None and [s.solver for s in log.plan.steps] == ["react"]
    assert sample.limit is not None and sample.limit.type == "operator"  # inspect's terminate path
    decisions = _approvals(sample)
    assert [d for d, _ in decisions] == ["approve", "approve", "terminate"]
    assert decisions[-1][1].startswith(
        "earlyeval halted the run after step 1: PredictedFailure (p_success="
    )
    # pytest never ran
    assert _tool_calls(sample) == ["ls", "cat mod.py", "pytest"] and len(_ran(sample)) == 2
    ee = sample.store["earlyeval"]
    assert (
        ee["exit_status"] == "PredictedFailure"
        and ee["halt"]["step_index"] == 1
        and ee["halt_on"] == "failure"
    )
    assert ee["thresholds"] == ALWAYS_FAIL and len(ee["history"]) == 2
    assert all(0.0 < h["p_success"] < 1.0 for h in ee["history"])
    assert sample.scores["match"].value == "I"  # scored as usual


def test_policy_file_with_a_never_halting_model_lets_the_agent_submit(tmp_path, models):
    pol = policy(tmp_path / "policy.yaml", models["never"])
    log, sample = run_eval(react_task(), FAILING, tmp_path / "logs", approval=str(pol))
    assert sample.limit is None and sample.scores["match"].value == "C"
    assert {d for d, _ in _approvals(sample)} == {"approve"} and len(_approvals(sample)) == 4
    ee = sample.store["earlyeval"]
    # scored at the calls of turns 1, 2 and submit
    assert ee["halted"] is False and len(ee["history"]) == 3


def test_halt_on_failure_ignores_a_predicted_success(tmp_path, models):
    pol = policy(
        tmp_path / "policy.yaml", models["succeed"], halt_on="failure", success_needs="nothing"
    )
    _, sample = run_eval(react_task(), FAILING, tmp_path / "logs", approval=str(pol))
    assert sample.limit is None and sample.scores["match"].value == "C"
    ee = sample.store["earlyeval"]
    # the Monitor itself halts on failure only (Monitor(halt_on=...)): no success halt to drop, its reason says why
    assert ee["halted"] is False and ee["dropped_halts"] == 0
    assert "success halts off: halt_on=failure" in ee["last_decision"]["reason"]


def test_success_halt_without_a_candidate_never_ends_the_sample(tmp_path, models):
    """No sandbox, so no ``git status``: a predicted success is held, the agent submits (fail open)."""
    pol = policy(tmp_path / "policy.yaml", models["succeed"], halt_on="both")
    _, sample = run_eval(react_task(), FAILING, tmp_path / "logs", approval=str(pol))
    assert sample.limit is None and sample.scores["match"].value == "C"
    ee = sample.store["earlyeval"]
    assert (
        ee["halted"] is False
        and ee["held_success"]["outcome"] == "success"
        and ee["success_needs"] == "diff"
    )


def test_success_needs_nothing_ends_on_the_prediction(tmp_path, models):
    pol = policy(
        tmp_path / "policy.yaml", models["succeed"], halt_on="success", success_needs="nothing"
    )
    _, sample = run_eval(react_task(), FAILING, tmp_path / "logs", approval=str(pol))
    assert (
        sample.limit.type == "operator"
        and sample.store["earlyeval"]["exit_status"] == "PredictedSuccess"
    )
    assert sample.store["earlyeval"]["halt"]["step_index"] == 1 and len(_ran(sample)) == 2


@solver
def git_repo():
    """The sample's sandbox is a git repository with one committed file (as a SWE-bench sandbox is)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        for cmd in (
            "git init -q",
            "git config user.email t@t",
            "git config user.name t",
            "echo 'x = 41' > mod.py",
            "git add mod.py",
            "git commit -qm init",
        ):
            r = await sandbox().exec(["bash", "-c", cmd])
            assert r.success, r.stderr
        return state

    return solve


@tool
def sh():
    async def execute(cmd: str) -> str:
        """Run a shell command in the sandbox.

        Args:
            cmd: The command.
        """
        r = await sandbox().exec(["bash", "-c", cmd])
        return r.stdout + r.stderr

    return execute


@scorer(metrics=[accuracy()])
def patch_scorer():
    """As a SWE-bench scorer does: grade the sandbox's diff, not the agent's answer."""

    async def score(state: TaskState, target) -> Score:
        r = await sandbox().exec(["git", "diff"])
        return Score(value="C" if "+x = 42" in r.stdout else "I", answer=r.stdout)

    return score


def test_success_halt_waits_for_a_candidate_patch_in_the_sandbox(tmp_path, models):
    """A real sandbox (inspect's ``local``) with git: the predicted success after step 1 is held until the
    agent's edit makes ``git status`` non-empty, then the sample ends and the task's scorer grades that patch."""
    outs = [
        call(c, tool="sh") for c in ("ls", "cat mod.py", "echo 'x = 42' > mod.py", "git diff")
    ] + [submit()]
    task = Task(
        dataset=[Sample(input="Make x 42.", target="42", id="demo-1")],
        setup=git_repo(),
        solver=react(tools=[sh()]),
        scorer=patch_scorer(),
        sandbox="local",
    )
    pol = policy(tmp_path / "policy.yaml", models["succeed"], halt_on="both")
    _, sample = run_eval(task, outs, tmp_path / "logs", approval=str(pol))
    ee = sample.store["earlyeval"]
    assert sample.limit.type == "operator" and ee["exit_status"] == "PredictedSuccess"
    # predicted after step 1, held; released once step 2's edit left a diff
    assert ee["halt"]["step_index"] == 2
    assert (
        _tool_calls(sample) == ["ls", "cat mod.py", "echo 'x = 42' > mod.py", "git diff"]
        and len(_ran(sample)) == 3
    )
    # the patch counted
    assert (
        sample.scores["patch_scorer"].value == "C"
        and "+x = 42" in sample.scores["patch_scorer"].answer
    )


def test_bad_approver_keys_are_errors_naming_the_key(tmp_path, models):
    m = str(models["never"])
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['halt_at'\]"):
        early_stop(model=m, halt_at="failure")
    with pytest.raises(
        ConfigError, match=r"halt_on: 'sometimes' is not one of 'failure', 'success', 'both'"
    ):
        early_stop(model=m, halt_on="sometimes")
    with pytest.raises(ConfigError, match=r"success_needs: 'tests'"):
        early_stop(model=m, success_needs="tests")
    with pytest.raises(ConfigError, match=r"otherwise: 'reject'"):
        early_stop(model=m, otherwise="reject")
    with pytest.raises(Exception, match="model"):
        early_stop(model=str(tmp_path / "missing"))
    # and through inspect's own policy reader, before any sample runs
    pol = policy(tmp_path / "bad.yaml", models["never"], halt_on="sometimes")
    with pytest.raises(Exception, match="halt_on"):
        run_eval(react_task(), FAILING, tmp_path / "logs", approval=str(pol))


def test_a_crashing_monitor_never_ends_the_sample(tmp_path):
    class Boom:
        def start(self, task=None, run_id=None):
            raise RuntimeError("start broke")

        def observe(self, step):
            raise RuntimeError("observe broke")

    appr = early_stop(model=Boom)
    _, sample = run_eval(
        react_task(), FAILING, tmp_path / "logs", approval=[ApprovalPolicy(appr, "*")]
    )
    assert sample.limit is None and sample.scores["match"].value == "C"
    ee = sample.store["earlyeval"]
    assert ee["halted"] is False and any("observe broke" in e for e in ee["errors"])


def test_otherwise_escalate_hands_each_call_to_the_next_approver(tmp_path, models):
    appr = early_stop(model=str(models["never"]), otherwise="escalate")
    _, sample = run_eval(
        react_task(),
        FAILING,
        tmp_path / "logs",
        approval=[ApprovalPolicy(appr, "*"), ApprovalPolicy(auto_approver("approve"), "*")],
    )
    assert sample.limit is None and sample.scores["match"].value == "C"
    assert [d for d, _ in _approvals(sample)] == ["escalate", "approve"] * 4


# ---------------------------------------------------------------------------- live = offline


# a history with every kind of turn: a text-only turn (react answers it with its continue prompt), parallel
# calls, a tool error, and the final submit
RICH = [
    call("ls"),
    say("Let me think about where x is set."),
    call("cat mod.py"),
    calls("ls", "pytest"),
    call("rm -rf /", text=""),
    submit(),
]


@pytest.mark.parametrize("model", ["never", "fail"])
def test_live_steps_features_and_probabilities_equal_the_readers_on_the_log(
    tmp_path, models, model
):
    recs: list[Recording] = []

    def factory():
        recs.append(Recording(Monitor.load(models[model])))
        return recs[-1]

    appr = early_stop(model=factory, halt_on="both", success_needs="nothing")
    log, sample = run_eval(
        react_task(), RICH, tmp_path / "logs", approval=[ApprovalPolicy(appr, "*")]
    )
    [rec] = recs
    live_halt = sample.store["earlyeval"]["halt"]
    fmt = FORMATS.resolve("inspect-eval")
    spec = RunSpec(
        name="run",
        folder=str(tmp_path / "logs"),
        agent="a",
        scaffold="a",
        model="",
        format="inspect-eval",
        glob="*.eval",
        labels=[LabelSpec("inline", "")],
    )
    [traj] = list(fmt.parse(Path(log.location), spec, "inspect"))
    assert traj.task_id == "demo-1" and traj.meta["model"] == "mockllm/model"
    n = len(rec.steps)
    assert n == (5 if model == "never" else 2) and len(traj.steps) >= n + 1
    assert [
        s.to_dict() for s in traj.steps[:n]
    ] == rec.steps  # the same steps, field by field (usage included)
    assert all(s["input_tokens"] is not None and s["output_tokens"] is not None for s in rec.steps)
    offline = Monitor.load(models[model])
    offline.start_context(
        run_context(traj, EETask(task_id=rec.task["task_id"], prompt=rec.task["prompt"])),
        traj.run_id,
    )
    for k, step in enumerate(traj.steps[:n]):
        d = offline.observe(step)
        np.testing.assert_array_equal(offline.run.last_features, rec.rows[k])
        assert (d.p_success, d.p_failure) == rec.p[k]
        if model == "fail" and d.halt:
            assert live_halt["step_index"] == k == 1
            break
    kinds = [s["kind"] for s in rec.steps]
    if model == "never":
        assert (
            rec.steps[1]["action"] == "Let me think about where x is set."
            and "Please proceed" in rec.steps[1]["observation"]
        )
        assert rec.steps[3]["action"].count("\n") == 1 and rec.steps[4]["error"] is True
        assert kinds[0] == "search" and kinds[3] == "test"


def test_inspect_cli_with_an_approval_policy_file_alone(tmp_path, models):
    """The real CLI, ``inspect eval task.py --approval policy.yaml``, in a subprocess that finds earlyeval only
    through its declared ``inspect_ai`` entry point: the task's own agent is ended by configuration alone."""
    (tmp_path / "task.py").write_text(TASK_PY)
    # the name a user writes
    pol = _policy(tmp_path / "policy.yaml", models["fail"], halt_on="failure")
    site = dist_info(tmp_path / "site")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), str(_paths.REPO)]),
        "INSPECT_LOG_DIR": str(tmp_path / "logs"),
    }
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "inspect_ai",
            "eval",
            "task.py",
            "--approval",
            str(pol),
            "--display",
            "none",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    [logf] = list((tmp_path / "logs").glob("*.eval"))
    from inspect_ai.log import read_eval_log

    lg = read_eval_log(str(logf))
    [sample] = lg.samples
    assert [s.solver for s in lg.plan.steps] == ["react"] and lg.eval.solver is None
    assert sample.limit.type == "operator" and sample.store["earlyeval"]["halt"]["step_index"] == 1
    assert [e.approver for e in sample.events if e.event == "approval"] == [
        "earlyeval/early_stop"
    ] * 3


TASK_PY = task_file("from inspect_ai.agent import react", "solver=react(tools=[shell()])")


# ---------------------------------------------------------------------------- the real trained model (integration)

SWE_TURNS = [
    call("ls"),
    call("grep -rn 'def separability_matrix' astropy/"),
    call("cat astropy/modeling/separable.py"),
    call(
        "sed -i 's/cright\\[-right.shape\\[0\\]:, -right.shape\\[1\\]:\\] = 1/cright[-right.shape[0]:, -right.shape[1]:] = right/' "
        "astropy/modeling/separable.py"
    ),
    call("python -m pytest astropy/modeling/tests/test_separable.py -q"),
    call("git diff"),
    submit("done"),
]


@pytest.mark.integration
def test_real_model_live_approver_and_offline_score_agree_on_an_inspect_run(tmp_path):
    """``models/swebench`` (``earlyeval train --bench swebench``) with its task table: a SWE-bench task's sample run by
    a task's own react() agent under the approver (halt_on both, so any prediction may end it); the log read back
    and scored by ``earlyeval score``'s replay halts at the step the approver did, with the same probabilities."""
    import json as _json

    from earlyeval.tables.store import read_tasks
    from earlyeval.workflows.score import score_runs
    from earlyeval.workflows.score_options import ScoreOptions

    model, tasks = (
        _paths.REPO / "models" / "swebench",
        _paths.REPO / "data" / "swebench" / "tasks.parquet",
    )
    if not (model / "manifest.json").exists() or not tasks.exists():
        pytest.skip(
            "no trained models/swebench and data/swebench/tasks.parquet: earlyeval ingest/train --bench swebench"
        )
    table = read_tasks(tasks)
    tid = "astropy__astropy-12907" if "astropy__astropy-12907" in table else sorted(table)[0]
    recs: list[Recording] = []

    def factory():
        recs.append(Recording(Monitor.load(model, tasks=str(tasks))))
        return recs[-1]

    task = Task(
        dataset=[Sample(input=table[tid].prompt, target="42", id=tid)],
        solver=react(tools=[shell()]),
        scorer=match(),
    )
    appr = early_stop(model=factory, halt_on="both", success_needs="nothing")
    _, sample = run_eval(task, SWE_TURNS, tmp_path / "logs", approval=[ApprovalPolicy(appr, "*")])
    [rec] = recs
    live = sample.store["earlyeval"]
    assert len(rec.steps) >= 1 and all(0.0 < p < 1.0 for p, _ in rec.p)
    rep = _json.loads(
        score_runs(
            model,
            tmp_path / "logs",
            ScoreOptions("inspect-eval", out=tmp_path / "score"),
            tasks=tasks,
            progress=False,
        )["score"].read_text()
    )
    [run] = rep["per_run"]
    assert run["task_id"] == tid
    np.testing.assert_allclose(
        run["p_success"][: len(rec.p)], [p for p, _ in rec.p], rtol=0, atol=1e-12
    )
    if live["halted"]:
        assert run["halted"] and run["halt_step_index"] == live["halt"]["step_index"]
        assert run["predicted"] == live["halt"]["outcome"]
    else:
        assert not run["halted"] or run["halt_step_index"] >= len(rec.steps)


def test_the_approver_acts_only_on_the_step_whose_prediction_crosses_the_threshold(
    tmp_path, models
):
    """Issue 29 item 8: P(success) crosses tau_s after step 1 only (no patch yet: held), then falls below it; the
    agent's edit leaves a patch after step 2. The sample must not end on step 1's success prediction (main did:
    0.540 against 0.55 in the audit), and the failure side stays live: P(failure) crosses tau_f at step 3."""
    # P(success) per step; tau_s 0.6, tau_f 0.65 (1 - 0.3 = 0.7 crosses)
    script = [
        0.9,
        0.45,
        0.45,
        0.3,
        0.3,
        0.3,
    ]

    class Scripted(LoadedModel):  # the model's probabilities, scripted: the Monitor decides on them
        def proba(self, x, warm=None):
            self.calls = getattr(self, "calls", 0) + 1
            p = script[min(self.calls - 1, len(script) - 1)]
            return p, 1.0 - p

    base = Monitor.load(models["succeed"])
    th = {"success": 0.6, "failure": 0.65, "min_halt_step": 1}
    cfg = MonitorConfig(halt_on="both")
    factory = lambda: Monitor(  # noqa: E731
        Scripted(dataclasses.replace(base.bundle, thresholds=th), cfg), cfg
    )
    outs = [
        call(c, tool="sh") for c in ("ls", "echo 'x = 42' > mod.py", "cat mod.py", "git diff", "ls")
    ] + [submit()]
    task = Task(
        dataset=[Sample(input="Make x 42.", target="42", id="demo-1")],
        setup=git_repo(),
        solver=react(tools=[sh()]),
        scorer=patch_scorer(),
        sandbox="local",
    )
    pol = ApprovalPolicy(approver=early_stop(factory, halt_on="both"), tools="*")
    _, sample = run_eval(task, outs, tmp_path / "logs", approval=[pol])
    ee = sample.store["earlyeval"]
    assert ee["exit_status"] == "PredictedFailure", ee
    assert ee["halt"]["step_index"] == 3 and ee["halt"]["p_success"] == pytest.approx(0.3)
    assert [h["halt"] for h in ee["history"]] == [False, False, False, True]

"""Live parity on real runs (``pytest -m integration``): each adapter, fed the events of a real native run,
builds the Steps the ingestor built for that run, and the Monitor then gives the batch features and
probabilities of those steps (to 1e-9).

* SWE-agent: the ``StepOutput`` s of a real SWE-agent ``.traj`` (``tests/_sweagent_standin.StepOutput``)
  through ``EarlyStopHook.on_step_done``;
* mini-swe-agent: the messages of a real mini-swe-agent run, added to a real ``EarlyStopAgent`` turn by
  turn, scored where ``query()`` scores them;
* OpenHands SDK: ``ActionEvent`` / ``ObservationEvent`` s from a real OpenHands ``llm_completions`` run,
  built twice: with stand-ins that carry the SDK's class and attribute names (Python 3.11) and with the
  real ``openhands.sdk`` classes (skipped unless the SDK imports: Python >= 3.12, ``.venv-openhands``);
* inspect_ai: a real ``AgentState`` transcript (``ChatMessageAssistant`` with ``ToolCall`` s,
  ``ChatMessageTool``, ``ModelOutput`` usage) built from a real tau2 run, through ``EarlyStopOnContinue``.

Turns an adapter never scores by design (the turn that submits or finishes, a last call never answered)
are left out of the comparison, and each test says which.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from _openhands_standin import ActionEvent, MessageToolCall, Observation, ObservationEvent, TextContent

from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.features import Featurizer, RunContext, build_family
import earlyeval.ingest as ingest_mod
from earlyeval.modeling.model import OutcomeModel
from earlyeval.modeling.modeldir import ModelBundle
from earlyeval.monitor import Monitor
from earlyeval.tables.prefixes import prefix_table
from earlyeval.tables.tasks import load_tasks
from earlyeval.core.trajectory import Step, Task, Trajectory
from earlyeval.config.workspace import models_dir

pytestmark = pytest.mark.integration

N_RUNS = 3  # real runs per adapter (bounded: the whole module runs in seconds)


# ---------------------------------------------------------------------------
# shared
# ---------------------------------------------------------------------------


class RecordingMonitor:
    """The real Monitor behind an adapter, started with the batch context; records what it saw."""

    def __init__(self, mon: Monitor, ctx: RunContext):
        self.mon, self.ctx = mon, ctx
        self.steps: list[dict] = []
        self.rows: list[np.ndarray] = []
        self.p: list[float | None] = []

    def start(self, task=None, run_id=None):
        self.mon.start_context(self.ctx, run_id)

    def observe(self, step: Step):
        d = self.mon.observe(step)
        self.steps.append(step.to_dict())
        self.rows.append(self.mon.last_features.copy())
        self.p.append(d.p_success)
        return d.__class__(**{**d.__dict__, "halt": False})  # never halt: compare every step


def _load(path: Path) -> Any:
    with (gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8")) as f:
        return json.load(f)


def _ingest(bench: str, run: str):
    """(catalog, run spec, the run's files in ingest order, the format's ingestor module)."""
    cat = load_catalog(bench)
    spec = cat.run(run)
    run_dir = data_root() / spec.folder
    if not run_dir.exists():
        pytest.skip(f"real data absent: {run_dir}")
    return cat, spec, ingest_mod.discover(run_dir, spec), ingest_mod.format_module(spec.format)


def _compare(rec: RecordingMonitor, expected: list[Step], t: Trajectory) -> None:
    """Adapter steps == ingestor steps; Monitor features == batch features; probabilities to 1e-9."""
    fz, model = rec.mon.bundle.featurizer, rec.mon.bundle.model
    assert rec.steps == [s.to_dict() for s in expected], t.run_id
    n = len(expected)
    X = fz.prefix_matrix([t], [rec.ctx], max_t=[len(t.steps)])[:n]
    assert np.array_equal(np.asarray(rec.rows), X, equal_nan=True), t.run_id
    ps = model.predict_success(X)
    np.testing.assert_allclose(np.asarray(rec.p, dtype=float), ps, rtol=0, atol=1e-9, err_msg=t.run_id)


@pytest.fixture(scope="module")
def swebench():
    mdir = models_dir("swebench")
    if not (mdir / "manifest.json").exists():
        pytest.skip("no shipped model: run `earlyeval train --bench swebench`")
    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")
    cat = load_catalog("swebench")
    return {"mon": Monitor.load(mdir), "tasks": load_tasks(cat, data_root())}


def _swebench_runs(sw, run: str, keep: Callable[[Any], bool] = lambda native: True) -> Iterator[tuple[Any, Trajectory, RecordingMonitor]]:
    """(native document, ingested Trajectory, a recording Monitor with its batch context) of N_RUNS real runs."""
    _, spec, files, fmt = _ingest("swebench", run)
    n = 0
    for path in files:
        native = _load(path)
        if not keep(native):
            continue
        [t] = list(fmt.parse(path, spec, "swebench"))
        yield native, t, RecordingMonitor(sw["mon"], RunContext.of(t, sw["tasks"].get(t.task_id)))
        n += 1
        if n == N_RUNS:
            return
    pytest.fail(f"only {n} usable runs in {run}")


# ---------------------------------------------------------------------------
# SWE-agent
# ---------------------------------------------------------------------------


def test_swe_agent_hook_builds_the_ingestor_steps_on_a_real_traj(swebench):
    from _sweagent_standin import StepOutput
    from earlyeval.integrations.swe_agent import EarlyStopHook

    n_checked = 0
    for native, t, rec in _swebench_runs(swebench, "lite__swe-agent__gpt4"):
        entries = native["trajectory"]
        hook = EarlyStopHook(rec, autosubmit=False)
        agent = type("Agent", (), {"_problem_statement": None})()
        hook.on_init(agent=agent)
        hook.on_run_start()
        scored = []
        for i, e in enumerate(entries):
            # SWE-agent ends the run on the step that submits or is forced out (exit_cost, ...): done=True
            done = bool(re.match(r"\s*(submit|exit_\w+)\b", e["action"]))
            so = StepOutput(thought=e.get("thought") or "", action=e["action"], observation=e.get("observation") or "", done=done)
            hook.on_step_done(step=so, info={})
            if not done:
                scored.append(t.steps[i])
        assert hook.stopper.errors == []
        _compare(rec, scored, t)
        n_checked += len(scored)
    assert n_checked >= 10


def test_swe_agent_hook_builds_the_ingestor_steps_on_a_real_1x_tool_call_traj(swebench):
    """SWE-agent 1.1 with function calling: the hook gets one StepOutput per executed turn (the turns SWE-agent
    refused and re-asked are trajectory entries with an empty action, never handed to the hooks), with the
    turn's tool calls from ``history``; the last turn (submit or forced exit) is done and not scored."""
    from _sweagent_standin import StepOutput
    from earlyeval.integrations.swe_agent import EarlyStopHook

    n_checked = 0
    for native, t, rec in _swebench_runs(swebench, "verified__swe-agent-v1.1.0__gpt-5-mini__mas-evaluation"):
        entries = native["trajectory"]
        executed = [e for k, e in enumerate(entries) if e["action"] or k == len(entries) - 1]
        turns = [m for m in native["history"] if m["role"] == "assistant"]
        assert len(executed) == len(turns) == len(t.steps)
        hook = EarlyStopHook(rec, autosubmit=False)
        hook.on_init(agent=type("Agent", (), {"_problem_statement": None})())
        hook.on_run_start()
        for k, (e, m) in enumerate(zip(executed, turns)):
            so = StepOutput(thought=e.get("thought") or "", action=e["action"], observation=e.get("observation") or "",
                            tool_calls=m.get("tool_calls"), done=k == len(turns) - 1)
            hook.on_step_done(step=so, info={})
        assert hook.stopper.errors == []
        _compare(rec, t.steps[:-1], t)
        n_checked += len(t.steps) - 1
    assert n_checked >= 10


# ---------------------------------------------------------------------------
# mini-swe-agent
# ---------------------------------------------------------------------------


def test_mini_swe_agent_builds_the_ingestor_steps_on_real_messages(swebench, tmp_path):
    pytest.importorskip("minisweagent")
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel

    from earlyeval.integrations.mini_swe_agent import MINI_SWE_AGENT_V2, EarlyStopAgent

    n_checked = 0
    for native, t, rec in _swebench_runs(swebench, "verified__mini-swe-agent-v1.15.0__gemini-3-pro-preview-20251118"):
        messages = native["messages"]
        kw = {"system_template": "s", "instance_template": "{{task}}"} if MINI_SWE_AGENT_V2 else {}
        model = DeterministicModel(outputs=[], **({} if MINI_SWE_AGENT_V2 else {"cost_per_call": 0.0}))
        agent = EarlyStopAgent(model, LocalEnvironment(cwd=str(tmp_path)), monitor=rec, run_id=t.run_id, **kw)
        agent.stopper.start(task=Task(t.task_id), run_id=t.run_id)
        # query() is entered before every model call: before each assistant message
        for i, m in enumerate(messages):
            if m.get("role") == "assistant":
                agent.messages = list(messages[:i])
                agent.score_new_messages()
        assert agent.stopper.errors == []
        # the last turn is never scored live: it submits (or hits a limit), and no model call follows it
        _compare(rec, t.steps[:-1], t)
        n_checked += len(t.steps) - 1
    assert n_checked >= 10


# ---------------------------------------------------------------------------
# OpenHands SDK
# ---------------------------------------------------------------------------


_EXIT = re.compile(r"\[Command finished with exit code (-?\d+)\]")


class StandinEvents:
    """Event factory on the stand-ins (tests/_openhands_standin.py): Python 3.11, no SDK."""

    def text(self, text: str):
        return TextContent(text)

    def action(self, tool: str, call_id: str, response_id: str, arguments: str, thought: list):
        return ActionEvent(tool, call_id, response_id, MessageToolCall(call_id, tool, arguments), thought)

    def observation(self, tool: str, call_id: str, text: str, exit_code: int | None, is_error: bool | None):
        return ObservationEvent(tool, call_id, Observation(content=[TextContent(text)], exit_code=exit_code, is_error=is_error))


class SdkEvents:
    """Event factory on the real openhands-sdk classes (Python >= 3.12)."""

    def __init__(self):
        from openhands.sdk import Observation as SdkObservation
        from openhands.sdk import TextContent as SdkText
        from openhands.sdk.event import ActionEvent as SdkAction
        from openhands.sdk.event import ObservationEvent as SdkObsEvent
        from openhands.sdk.llm import MessageToolCall as SdkCall

        class ToolObservation(SdkObservation):  # a tool's observation: the SDK's fields plus an exit code
            exit_code: int | None = None

        self.Text, self.Action, self.ObsEvent, self.Call, self.Obs = SdkText, SdkAction, SdkObsEvent, SdkCall, ToolObservation

    def text(self, text: str):
        return self.Text(text=text)

    def action(self, tool: str, call_id: str, response_id: str, arguments: str, thought: list):
        return self.Action(tool_name=tool, tool_call_id=call_id, llm_response_id=response_id, thought=thought, action=None,
                           tool_call=self.Call(id=call_id, name=tool, arguments=arguments, origin="completion"))

    def observation(self, tool: str, call_id: str, text: str, exit_code: int | None, is_error: bool | None):
        obs = self.Obs.from_text(text, is_error=bool(is_error), exit_code=exit_code)
        return self.ObsEvent(tool_name=tool, tool_call_id=call_id, observation=obs, action_id=f"action-{call_id}")


def _tool_result(tool: str, text: str) -> tuple[int | None, bool | None]:
    """(exit code, error flag) an SDK observation carries for a tool result."""
    m = _EXIT.search(text)
    if m:
        return int(m.group(1)), None
    if tool == "str_replace_editor":
        return None, text.lstrip().startswith("ERROR")
    return None, None


def _content(m: dict) -> str:
    c = m.get("content")
    return c if isinstance(c, str) else "\n".join(p.get("text", "") for p in c or [] if isinstance(p, dict))


def _openhands_events(messages: list[dict], make) -> tuple[list, list[int]]:
    """SDK events of a completions conversation, and the index of each assistant turn that the callback scores."""
    events, scored = [], []
    turn = -1
    pending: dict[str, int] = {}
    answered: dict[int, set] = {}
    calls_of: dict[int, list] = {}
    for k, m in enumerate(messages):
        if m["role"] == "assistant":
            turn += 1
            rid = f"resp-{k}"
            calls = m.get("tool_calls") or []
            calls_of[turn] = [c["function"]["name"] for c in calls]
            answered[turn] = set()
            for j, tc in enumerate(calls):
                fn = tc["function"]
                thought = [make.text(_content(m))] if j == 0 and _content(m) else []
                events.append(make.action(fn["name"], tc["id"], rid, fn["arguments"], thought))
                pending[tc["id"]] = turn
        elif m["role"] == "tool":
            tid = m["tool_call_id"]
            tt = pending[tid]
            tool = m.get("name") or calls_of[tt][0]
            events.append(make.observation(tool, tid, _content(m), *_tool_result(tool, _content(m))))
            answered[tt].add(tid)
    for tt, names in calls_of.items():
        if names and len(answered[tt]) == len(names) and not all(n == "finish" for n in names):
            scored.append(tt)
    return events, scored


@pytest.mark.parametrize("events", ["standin", "sdk"])
def test_openhands_callback_builds_the_ingestor_steps_on_a_real_completions_run(swebench, events):
    if events == "sdk":
        pytest.importorskip("openhands.sdk", reason="openhands-sdk needs Python >= 3.12 (make test-openhands venv)")
    make = SdkEvents() if events == "sdk" else StandinEvents()
    from earlyeval.integrations.openhands import EarlyStopCallback

    def conversation(d: dict) -> list[dict]:
        return [m for m in d["messages"] if m["role"] not in ("system", "user")] + [
            {**d["response"]["choices"][0]["message"], "role": "assistant"}]

    def all_turns_call_tools(d: dict) -> bool:
        # a turn without tool call is an agent MessageEvent in the SDK, which ends the run: no such run here
        return all(m.get("tool_calls") for m in conversation(d) if m["role"] == "assistant")

    n_checked = 0
    for native, t, rec in _swebench_runs(swebench, "verified__openhands-codeact-v0.15__claude-3.5-sonnet-20241022", all_turns_call_tools):
        evs, scored = _openhands_events(conversation(native), make)
        cb = EarlyStopCallback(rec, run_id=t.run_id)
        for ev in evs:
            cb(ev)
        assert cb.stopper.errors == []
        _compare(rec, [t.steps[i] for i in scored], t)
        n_checked += len(scored)
    assert n_checked >= 10


# ---------------------------------------------------------------------------
# inspect_ai
# ---------------------------------------------------------------------------

TAU2_SOLO = "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_no-user_gpt-4.1_1trials"


def _small_model(trajs: list[Trajectory], ctxs: list[RunContext]) -> ModelBundle:
    fz = Featurizer([build_family("behaviour")]).fit(trajs, ctxs)
    X = fz.prefix_matrix(trajs, ctxs)
    pf = prefix_table(trajs, min_steps=2)
    model = OutcomeModel(lgbm_params={"n_estimators": 20, "num_leaves": 7, "min_child_samples": 3}, n_jobs=1, val_share=0.4)
    model.fit(X, pf["y"].to_numpy(), sample_weight=pf["weight"].to_numpy(), groups=pf["task_id"].to_numpy(), feature_names=fz.names)
    return ModelBundle(fz, model, {"success": 0.99, "failure": 0.99, "min_halt_step": 1},
                       training={"benchmarks": [], "context_runs": len(trajs), "context_absent_runs": {}})


def test_inspect_ai_on_continue_builds_the_ingestor_steps_on_a_real_tau2_run(tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai.agent import AgentState
    from inspect_ai.model import ChatMessageAssistant, ChatMessageTool, ChatMessageUser, ModelOutput, ModelUsage
    from inspect_ai.tool import ToolCall, ToolCallError

    from earlyeval.integrations.inspect_ai import EarlyStopOnContinue
    from earlyeval.modeling.modeldir import save_model_dir

    _, spec, files, fmt = _ingest("tau2", TAU2_SOLO)
    [path] = files
    trajs = [t for t in fmt.parse(path, spec, "tau2") if isinstance(t, Trajectory)]
    ctxs = [RunContext.of(t, None) for t in trajs]
    mon = Monitor.load(save_model_dir(_small_model(trajs, ctxs), tmp_path / "m"))
    sims = _load(path)["simulations"]
    n_checked = 0
    for t, c in list(zip(trajs, ctxs))[:N_RUNS]:
        sim = sims[t.meta["simulation_index"]]
        rec = RecordingMonitor(mon, c)
        cont = EarlyStopOnContinue(rec)
        state = AgentState(messages=[ChatMessageUser(content=t.prompt)])
        for m in sim["messages"]:
            if m["role"] == "assistant":
                calls = [ToolCall(id=tc["id"], function=tc["name"], arguments=tc["arguments"]) for tc in m.get("tool_calls") or []]
                msg = ChatMessageAssistant(content=m.get("content") or "", tool_calls=calls or None)
                if state.messages and isinstance(state.messages[-1], (ChatMessageAssistant, ChatMessageTool)):
                    asyncio.run(cont(state))  # react(): on_continue after the previous turn and its tool results
                state.messages.append(msg)
                u = m.get("usage") or {}
                state.output = ModelOutput.from_message(msg)
                state.output.usage = ModelUsage(input_tokens=u.get("prompt_tokens") or 0, output_tokens=u.get("completion_tokens") or 0,
                                                total_tokens=(u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0)) if u else None
            elif m["role"] == "tool":
                err = ToolCallError("unknown", m["content"]) if m.get("error") else None
                state.messages.append(ChatMessageTool(content=m.get("content") or "", tool_call_id=m["id"], error=err))
        asyncio.run(cont(state))
        _compare(rec, t.steps, t)
        n_checked += len(t.steps)
    assert n_checked >= 10

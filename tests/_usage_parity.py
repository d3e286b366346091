"""One run, whatever its usage: the decision must not depend on which token counts an adapter happens to pass.

A run's usage can be known per step, only as totals, or not at all, and each adapter and each native
format knows a different one of these (SWE-agent: cumulative ``model_stats`` live, totals in the ``.traj``;
mini-swe-agent: per-call usage in its messages; OpenHands: conversation stats live, the last call's usage
in a completions file; inspect_ai: ``ModelOutput.usage`` per turn).  For one real run this module builds
every case an adapter or format can carry (the run's own counts where it has them, counts spread evenly
over its steps where only totals exist -- said so in each case's name), feeds each through the adapter
(live) or the ingestor and ``replay`` (offline), and compares what the Monitor made of them: the
probabilities at every step (to 1e-9) and the decision the one halting rule (``policy.first_halt``, at the
model's thresholds) takes on them, which is also the Monitor's own first halt.

Used by tests/integrations/test_adapter_parity.py (real runs, integration tier) and
tests/integrations/test_adapter_parity_units.py (the hand-written fixtures, unit tier).
"""

from __future__ import annotations

import asyncio
import copy
import gzip
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from earlyeval.core.trajectory import Step, Task, Trajectory
from earlyeval.features import RunContext
from earlyeval.live.monitor import Monitor
from earlyeval.live.replay import replay
from earlyeval.model.policy import CONTINUE, SUCCESS, first_halt, gated


class RecordingMonitor:
    """The real Monitor behind an adapter, started with the batch context; records what it saw and said.

    It hands the adapter a never-halting copy of each Decision, so every step reaches it, and keeps the
    Monitor's own first halt (``own_halt``: step number and outcome)."""

    halt_on = "failure"  # what an adapter asks of it (it never halts the adapter): no candidate patch is read

    def __init__(self, mon: Monitor, ctx: RunContext):
        self.mon, self.ctx = mon, ctx
        self.steps: list[dict] = []
        self.rows: list[np.ndarray] = []
        self.p: list[float | None] = []
        self.pf: list[float | None] = []
        self.gates: list[int] = []
        self.own_halt: tuple[int, str] | None = None

    def start(self, task=None, run_id=None):
        self.mon.start_context(self.ctx, run_id)

    def observe(self, step: Step):
        d = self.mon.observe(step)
        self.steps.append(step.to_dict())
        self.rows.append(self.mon.run.last_features.copy())
        self.p.append(d.p_success)
        self.pf.append(d.p_failure)
        self.gates.append(int(d.gate or 0))
        if d.halt and self.own_halt is None:
            self.own_halt = (len(self.p), str(d.outcome))
        # never halt: every step reaches the monitor
        return d.__class__(**{**d.__dict__, "halt": False})


@dataclass
class Case:
    """What the Monitor made of one usage case of one run."""

    name: str  # e.g. "live per-step (spread from totals)", "offline totals"
    p_s: np.ndarray
    p_f: np.ndarray
    own_halt: tuple[int, str] | None = (
        None  # the Monitor's own first halt (live cases), prefix t and outcome
    )
    steps: list[dict] = field(default_factory=list)
    gates: list[int] = field(
        default_factory=list
    )  # each prefix's gate, as the Monitor read it (Decision.gate)


def compare_steps(rec: RecordingMonitor, expected: list[Step], t: Trajectory) -> None:
    """Adapter steps == ingestor steps; Monitor features == batch features; probabilities to 1e-9."""
    fz, model = rec.mon.bundle.featurizer, rec.mon.bundle.model
    assert rec.steps == [s.to_dict() for s in expected], t.run_id
    n = len(expected)
    X = fz.prefix_matrix([t], [rec.ctx], max_t=[len(t.steps)])[:n]
    assert np.array_equal(np.asarray(rec.rows), X, equal_nan=True), t.run_id
    np.testing.assert_allclose(
        np.asarray(rec.p, dtype=float),
        model.predict_success(X),
        rtol=0,
        atol=1e-9,
        err_msg=t.run_id,
    )


def from_recording(name: str, rec: RecordingMonitor) -> Case:
    return Case(name, _arr(rec.p), _arr(rec.pf), rec.own_halt, list(rec.steps), list(rec.gates))


def from_replay(name: str, mon: Monitor, traj: Trajectory, task: Task | None) -> Case:
    # as_of None: the run's own date, as the live RunContext.of(traj, task)
    r = replay(mon, traj, task, None)
    return Case(
        name,
        _arr(r["p_success"]),
        _arr(r["p_failure"]),
        (int(r["halt_t"]), str(r["predicted"])) if r["halted"] else None,
        gates=list(r["gates"]),
    )


def _arr(xs: list) -> np.ndarray:
    return np.asarray([np.nan if x is None else x for x in xs], dtype=float)


def decision(c: Case, n: int, th: dict[str, Any]) -> tuple[int, str | None]:
    """(prefix t of the first halt, outcome) of the first ``n`` steps under the model's thresholds; (0, None)."""
    g = np.asarray(c.gates[:n] if c.gates else [3] * n, dtype=np.int64)
    ps, pf = gated(c.p_s[:n], c.p_f[:n], g, bool(th.get("task_skips", False)))
    t, o = first_halt([ps], [pf], th["success"], th["failure"], int(th.get("min_halt_step", 1)))
    return int(t[0]), (None if o[0] == CONTINUE else "success" if o[0] == SUCCESS else "failure")


def agree(cases: list[Case], th: dict[str, Any]) -> tuple[bool, str]:
    """Whether every case gives the same probabilities and decision over the steps all of them scored."""
    n = min(len(c.p_s) for c in cases)
    ref = cases[0]
    d0 = decision(ref, n, th)
    for c in cases:
        if (
            c.own_halt is not None
            and c.own_halt[0] <= n
            and (c.own_halt[0], c.own_halt[1]) != decision(c, n, th)
        ):
            return (
                False,
                f"{c.name}: the Monitor's own halt {c.own_halt} is not the rule's {decision(c, n, th)}",
            )
        if not np.allclose(c.p_s[:n], ref.p_s[:n], rtol=0, atol=1e-9, equal_nan=True):
            i = int(
                np.argmax(~np.isclose(c.p_s[:n], ref.p_s[:n], rtol=0, atol=1e-9, equal_nan=True))
            )
            return (
                False,
                f"{c.name} vs {ref.name}: p_success differs first at step {i}: {c.p_s[i]!r} vs {ref.p_s[i]!r}",
            )
        if decision(c, n, th) != d0:
            return False, f"{c.name} vs {ref.name}: decision {decision(c, n, th)} vs {d0}"
    return True, f"{len(cases)} cases agree over {n} steps: decision {d0}"


def spread(total: Any, n: int) -> list[Any]:
    """``total`` spread over ``n`` steps (integers stay integers and sum to it); None stays None."""
    if total is None or n <= 0:
        return [None] * max(n, 0)
    if isinstance(total, int):
        base, rest = divmod(total, n)
        return [base + (1 if i < rest else 0) for i in range(n)]
    return [float(total) / n] * n


def reparse(native: dict, path: Path, tmp: Path, fmt: Any, spec: Any, bench: str) -> Trajectory:
    """The ingestor's Trajectory of ``native`` (a changed copy of the document at ``path``), written under the
    same file name into ``tmp``."""
    out = tmp / path.name
    tmp.mkdir(parents=True, exist_ok=True)
    if out.name.endswith(".gz"):
        with gzip.open(out, "wt", encoding="utf-8") as f:
            json.dump(native, f)
    else:
        out.write_text(json.dumps(native))
    [t] = [x for x in fmt.parse(out, spec, bench) if isinstance(x, Trajectory)][:1]
    return t


# ---------------------------------------------------------------------------------------------- SWE-agent

# the step that submits or is forced out: StepOutput.done
SWE_DONE = re.compile(r"\s*(submit|exit_\w+)\b")


def swe_agent_live(
    mon_factory: Callable[[], RecordingMonitor], native: dict, usage: str
) -> RecordingMonitor:
    """A real ``.traj``'s steps as SWE-agent 1.1.0's own ``StepOutput`` s through ``EarlyStopHook.on_step_done``, with
    ``info["model_stats"]`` as ``DefaultAgent.step()`` sets it (``InstanceStats.model_dump()``): cumulative per step
    (``per_step``: the run's totals spread over its steps), only the totals on the last step (``totals``), or
    absent (``none``)."""
    from sweagent.agent.models import InstanceStats
    from sweagent.types import StepOutput

    from earlyeval.integrations.swe_agent import EarlyStopHook

    rec = mon_factory()
    entries = native["trajectory"]
    stats = native.get("info", {}).get("model_stats") or {}
    n = len(entries)
    parts = {
        k: spread(stats.get(k), n) for k in ("tokens_sent", "tokens_received", "instance_cost")
    }
    hook = EarlyStopHook(rec, autosubmit=False)
    hook.on_init(agent=type("Agent", (), {"_problem_statement": None})())
    hook.on_run_start()
    for i, e in enumerate(entries):
        so = StepOutput(
            thought=e.get("thought") or "",
            action=e["action"],
            observation=e.get("observation") or "",
            done=bool(SWE_DONE.match(e["action"])),
        )
        info: dict[str, Any] = {}
        if usage == "per_step" and all(parts[k][0] is not None for k in parts):
            info["model_stats"] = InstanceStats(
                **{k: sum(v[: i + 1]) for k, v in parts.items()}, api_calls=i + 1
            ).model_dump()
        elif usage == "totals" and i == n - 1 and stats:
            info["model_stats"] = InstanceStats(
                **{k: stats[k] for k in parts if k in stats}
            ).model_dump()
        hook.on_step_done(step=so, info=info)
    assert hook.stopper.errors == [], hook.stopper.errors
    return rec


def swe_agent_cases(
    mon: Monitor,
    native: dict,
    path: Path,
    traj: Trajectory,
    task: Task | None,
    tmp: Path,
    fmt: Any,
    spec: Any,
    bench: str,
) -> list[Case]:
    ctx = RunContext.of(traj, task)
    cases = [
        from_recording(
            f"live {u}" + (" (spread from the totals)" if u == "per_step" else ""),
            swe_agent_live(lambda: RecordingMonitor(mon, ctx), native, u),
        )
        for u in ("per_step", "totals", "none")
    ]
    bare = copy.deepcopy(native)
    bare.get("info", {}).pop("model_stats", None)
    cases.append(from_replay("offline totals (the .traj as it is)", mon, traj, task))
    cases.append(
        from_replay(
            "offline none (model_stats removed)",
            mon,
            reparse(bare, path, tmp, fmt, spec, bench),
            task,
        )
    )
    return cases


# ----------------------------------------------------------------------------------------- mini-swe-agent


def strip_message_usage(messages: list[dict]) -> list[dict]:
    """The messages without any per-call usage or cost (``extra.response.usage``, ``extra.cost``)."""
    out = copy.deepcopy(messages)
    for m in out:
        extra = m.get("extra") if isinstance(m.get("extra"), dict) else None
        if extra is None:
            continue
        extra.pop("cost", None)
        if isinstance(extra.get("response"), dict):
            extra["response"].pop("usage", None)
    return out


def mini_live(
    mon_factory: Callable[[], RecordingMonitor], messages: list[dict], run_id: str, tmp: Path
) -> RecordingMonitor:
    """The messages added to a real ``EarlyStopAgent`` turn by turn, scored where ``query()`` scores them."""
    from minisweagent.environments.local import LocalEnvironment
    from minisweagent.models.test_models import DeterministicModel

    from earlyeval.integrations.mini_swe_agent import MINI_SWE_AGENT_V2, EarlyStopAgent

    rec = mon_factory()
    kw = {"system_template": "s", "instance_template": "{{task}}"} if MINI_SWE_AGENT_V2 else {}
    model = DeterministicModel(outputs=[], **({} if MINI_SWE_AGENT_V2 else {"cost_per_call": 0.0}))
    tmp.mkdir(parents=True, exist_ok=True)
    agent = EarlyStopAgent(model, LocalEnvironment(cwd=str(tmp)), monitor=rec, run_id=run_id, **kw)
    agent.stopper.start(task=Task(run_id), run_id=run_id)
    for i, m in enumerate(
        messages
    ):  # query() is entered before every model call: before each assistant message
        if m.get("role") == "assistant":
            agent.messages = list(messages[:i])
            agent.score_new_messages()
    assert agent.stopper.errors == [], agent.stopper.errors
    return rec


def mini_cases(
    mon: Monitor,
    native: dict,
    path: Path,
    traj: Trajectory,
    task: Task | None,
    tmp: Path,
    fmt: Any,
    spec: Any,
    bench: str,
) -> list[Case]:
    ctx = RunContext.of(traj, task)
    msgs = native["messages"]
    bare = strip_message_usage(msgs)
    cases = [
        from_recording(
            "live per-step (the messages' own usage)",
            mini_live(lambda: RecordingMonitor(mon, ctx), msgs, traj.run_id, tmp / "l1"),
        ),
        from_recording(
            "live totals/none (no per-call usage in the messages)",
            mini_live(lambda: RecordingMonitor(mon, ctx), bare, traj.run_id, tmp / "l2"),
        ),
    ]
    totals = {**copy.deepcopy(native), "messages": bare}
    none = copy.deepcopy(totals)
    none.get("info", {}).pop("model_stats", None)
    cases.append(from_replay("offline per-step (the file as it is)", mon, traj, task))
    cases.append(
        from_replay(
            "offline totals (per-call usage removed)",
            mon,
            reparse(totals, path, tmp / "o1", fmt, spec, bench),
            task,
        )
    )
    cases.append(
        from_replay(
            "offline none (model_stats removed too)",
            mon,
            reparse(none, path, tmp / "o2", fmt, spec, bench),
            task,
        )
    )
    return cases


# ---------------------------------------------------------------------------------------------- OpenHands


class StatsConversation:
    """What the callback reads of a conversation: ``conversation_stats.usage_to_metrics`` (per LLM, the SDK's
    per-call ``token_usages`` records by ``response_id``, ``response_latencies`` and ``costs``, in the JSON form the
    conversation persists) and a ``state`` to record into; ``record`` adds one call's usage."""

    class _State:
        def __init__(self):
            self.agent_state: dict = {}

    def __init__(self):
        self.usage_to_metrics: dict[str, dict] = {
            "agent": {"token_usages": [], "response_latencies": [], "costs": []}
        }
        self.conversation_stats = self
        self.state = self._State()
        self.id = "conversation"

    def record(self, response_id: str, prompt: int, completion: int, cost: float) -> None:
        m = self.usage_to_metrics["agent"]
        m["token_usages"].append(
            {
                "response_id": response_id,
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "cache_read_tokens": 0,
            }
        )
        m["response_latencies"].append({"response_id": response_id, "latency": 1.0})
        m["costs"].append({"cost": cost})


def openhands_live(
    mon_factory: Callable[[], RecordingMonitor],
    events: list,
    run_id: str,
    usage: str,
    per_call: list[tuple[int, int, float]],
    response_of: Callable[[Any], str | None],
) -> RecordingMonitor:
    """The SDK events of a run through ``EarlyStopCallback``; the conversation's stats record each LLM response's
    usage (``per_step``), one record of the totals for the last response only (``totals``), or nothing (``none``)."""
    from earlyeval.integrations.openhands import EarlyStopCallback

    rec = mon_factory()
    cb = EarlyStopCallback(rec, run_id=run_id)
    conv = StatsConversation() if usage != "none" else None
    if conv is not None:
        cb.attach(conv)
    seen: list[str] = []
    n = len(per_call)
    for ev in events:
        rid = response_of(ev)
        if conv is not None and rid is not None and rid not in seen:
            seen.append(rid)
            k = len(seen) - 1
            if usage == "per_step" and k < n:
                conv.record(rid, *per_call[k])
            elif usage == "totals" and k == n - 1:
                conv.record(
                    rid,
                    sum(p[0] for p in per_call),
                    sum(p[1] for p in per_call),
                    sum(p[2] for p in per_call),
                )
        cb(ev)
    assert cb.stopper.errors == [], cb.stopper.errors
    return rec


# ---------------------------------------------------------------------------------------------- inspect_ai


def inspect_live(
    mon_factory: Callable[[], RecordingMonitor], prompt: str, messages: list[dict], usage: str
) -> RecordingMonitor:
    """A tau2 simulation as inspect_ai's own ``AgentState`` transcript through ``EarlyStopOnContinue``, with
    ``ModelOutput.usage`` per turn (``per_step``: the message's own usage), only on the last turn as the run's
    totals (``totals``), or never (``none``)."""
    from inspect_ai.agent import AgentState
    from inspect_ai.model import (
        ChatMessageAssistant,
        ChatMessageTool,
        ChatMessageUser,
        ModelOutput,
        ModelUsage,
    )
    from inspect_ai.tool import ToolCall, ToolCallError

    from earlyeval.integrations.inspect_ai import EarlyStopOnContinue

    rec = mon_factory()
    cont = EarlyStopOnContinue(rec)
    state = AgentState(messages=[ChatMessageUser(content=prompt)])
    asst = [m for m in messages if m["role"] == "assistant"]
    tot_in = sum((m.get("usage") or {}).get("prompt_tokens") or 0 for m in asst)
    tot_out = sum((m.get("usage") or {}).get("completion_tokens") or 0 for m in asst)
    # as the tau2 ingestor: else unknown
    priced = any(isinstance(m.get("cost"), (int, float)) and m["cost"] > 0 for m in asst)
    k = 0
    for m in messages:
        if m["role"] == "assistant":
            calls = [
                ToolCall(id=tc["id"], function=tc["name"], arguments=tc["arguments"])
                for tc in m.get("tool_calls") or []
            ]
            msg = ChatMessageAssistant(content=m.get("content") or "", tool_calls=calls or None)
            if state.messages and isinstance(
                state.messages[-1], (ChatMessageAssistant, ChatMessageTool)
            ):
                # react(): on_continue after the previous turn and its tool results
                asyncio.run(cont(state))
            state.messages.append(msg)
            state.output = ModelOutput.from_message(msg)
            u = m.get("usage") or {}
            k += 1
            if usage == "per_step" and u:
                state.output.usage = ModelUsage(
                    input_tokens=u.get("prompt_tokens") or 0,
                    output_tokens=u.get("completion_tokens") or 0,
                    total_tokens=(u.get("prompt_tokens") or 0) + (u.get("completion_tokens") or 0),
                    total_cost=m.get("cost") if priced else None,
                )
            elif usage == "totals" and k == len(asst):
                state.output.usage = ModelUsage(
                    input_tokens=tot_in, output_tokens=tot_out, total_tokens=tot_in + tot_out
                )
            else:
                state.output.usage = None
        elif m["role"] == "tool":
            err = ToolCallError("unknown", m["content"]) if m.get("error") else None
            state.messages.append(
                ChatMessageTool(content=m.get("content") or "", tool_call_id=m["id"], error=err)
            )
    asyncio.run(cont(state))
    return rec


def strip_tau2_usage(messages: list[dict]) -> list[dict]:
    out = copy.deepcopy(messages)
    for m in out:
        m.pop("usage", None)
        m.pop("cost", None)
        if isinstance(m.get("raw_data"), dict):
            m["raw_data"].pop("usage", None)
    return out

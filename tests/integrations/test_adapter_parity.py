"""Live parity on real runs (``pytest -m integration``), through the real framework packages.

1. Steps and features: each adapter, fed the events of a real native run, builds the Steps the ingestor
   built for that run, and the Monitor then gives the batch features and probabilities of those steps
   (to 1e-9).
   * SWE-agent: a real ``.traj``'s steps as SWE-agent 1.1.0's own ``StepOutput`` s through
     ``EarlyStopHook.on_step_done`` (the hook inside the real ``DefaultAgent`` loop: test_adapter_swe_agent.py);
   * mini-swe-agent: the messages of a real run, added to a real ``EarlyStopAgent`` turn by turn, scored where
     ``query()`` scores them;
   * OpenHands SDK: ``ActionEvent`` / ``ObservationEvent`` s from a real ``llm_completions`` run, on stand-ins
     with the SDK's class and attribute names (Python 3.11) and on the real ``openhands.sdk`` classes (skipped
     unless the SDK imports: the Python 3.12 ``make test-openhands`` stage);
   * inspect_ai: a real ``AgentState`` transcript built from a real tau2 run, through ``EarlyStopOnContinue``.
2. Whatever the usage (tests/_usage_parity.py): per-step counts, only totals, nothing -- every case an adapter
   or a format can carry, live and offline -- gives the same probabilities and decision, on a bounded sample of
   real runs per adapter.  Each test prints its share of agreeing runs (``-s``) and requires 100 %.

Turns an adapter never scores by design (the turn that submits or finishes, a last call never answered)
are left out of the comparison, and each test says which.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any, Callable, Iterator

import _usage_parity as up
import pytest
from _openhands_events import (
    SdkEvents,
    StandinEvents,
    all_turns_call_tools,
    conversation,
    events_of,
    response_id,
)
from _usage_parity import RecordingMonitor

import earlyeval.ingest as ingest_mod
from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import models_dir
from earlyeval.core.trajectory import Trajectory
from earlyeval.features import Featurizer, RunContext, build_family
from earlyeval.fitting.estimator import OutcomeModel
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import ModelBundle
from earlyeval.tables.prefixes import prefix_table
from earlyeval.tables.tasks import load_tasks

pytestmark = pytest.mark.integration

N_RUNS = 3  # real runs per adapter for the step/feature parity (bounded: seconds)
N_USAGE = 20  # real runs per adapter for the usage parity
SWE_AGENT = "lite__swe-agent__gpt4"
SWE_AGENT_1X = "verified__swe-agent-v1.1.0__gpt-5-mini__mas-evaluation"
MINI = "verified__mini-swe-agent-v1.15.0__gemini-3-pro-preview-20251118"
OPENHANDS = "verified__openhands-codeact-v0.15__claude-3.5-sonnet-20241022"
TAU2_SOLO = "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm_telecom_no-user_gpt-4.1_1trials"


# ---------------------------------------------------------------------------
# shared
# ---------------------------------------------------------------------------


def _load(path: Path) -> Any:
    with (
        gzip.open(path, "rt", encoding="utf-8")
        if path.name.endswith(".gz")
        else open(path, encoding="utf-8")
    ) as f:
        return json.load(f)


def _ingest(bench: str, run: str):
    """(catalog, run spec, the run's files in ingest order, the format's ingestor module)."""
    cat = load_catalog(bench)
    spec = cat.run(run)
    run_dir = data_root() / spec.folder
    if not run_dir.exists():
        pytest.skip(f"real data absent: {run_dir}")
    return cat, spec, ingest_mod.discover(run_dir, spec), ingest_mod.format_module(spec.format)


_compare = up.compare_steps


@pytest.fixture(scope="module")
def swebench():
    mdir = models_dir("swebench")
    if not (mdir / "manifest.json").exists():
        pytest.skip("no shipped model: run `earlyeval train --bench swebench`")
    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")
    cat = load_catalog("swebench")
    return {"mon": Monitor.load(mdir), "tasks": load_tasks(cat, data_root())}


def _swebench_runs(
    sw, run: str, n_runs: int = N_RUNS, keep: Callable[[Any], bool] = lambda native: True
) -> Iterator[tuple[Any, Path, Trajectory, RecordingMonitor]]:
    """(native document, its path, ingested Trajectory, a recording Monitor with its batch context) of up to ``n_runs``
    real runs (at least N_RUNS)."""
    _, spec, files, fmt = _ingest("swebench", run)
    n = 0
    for path in files:
        native = _load(path)
        if not keep(native):
            continue
        [t] = list(fmt.parse(path, spec, "swebench"))
        yield (
            native,
            path,
            t,
            RecordingMonitor(sw["mon"], RunContext.of(t, sw["tasks"].get(t.task_id))),
        )
        n += 1
        if n == n_runs:
            return
    if n < N_RUNS:
        pytest.fail(f"only {n} usable runs in {run}")


def _usage_parity(
    sw,
    run: str,
    build: Callable[..., list[up.Case]],
    tmp_path: Path,
    label: str,
    keep: Callable[[Any], bool] = lambda native: True,
) -> None:
    """Every usage case of N_USAGE real runs agrees; prints the share."""
    _, spec, _, fmt = _ingest("swebench", run)
    th = sw["mon"].thresholds
    results, halted = [], 0
    for i, (native, path, t, _) in enumerate(_swebench_runs(sw, run, N_USAGE, keep)):
        cases = build(
            sw["mon"],
            native,
            path,
            t,
            sw["tasks"].get(t.task_id),
            tmp_path / str(i),
            fmt,
            spec,
            "swebench",
        )
        ok, why = up.agree(cases, th)
        results.append((t.run_id, ok, why))
        halted += up.decision(cases[0], min(len(c.p_s) for c in cases), th)[0] > 0
    share = sum(ok for _, ok, _ in results) / len(results)
    print(
        f"\nusage parity, {label}: {sum(ok for _, ok, _ in results)}/{len(results)} real runs agree across "
        f"{len(cases)} usage cases ({share:.0%}); {halted} of them halt"
    )
    assert share == 1.0, [r for r in results if not r[1]][:3]


# ---------------------------------------------------------------------------
# SWE-agent
# ---------------------------------------------------------------------------


def test_swe_agent_hook_builds_the_ingestor_steps_on_a_real_traj(swebench):
    pytest.importorskip("sweagent", reason="SWE-agent 1.1.0: make install-sweagent")
    n_checked = 0
    for native, _, t, rec in _swebench_runs(swebench, SWE_AGENT):
        up.swe_agent_live(lambda: rec, native, "totals")
        scored = [
            s for s, e in zip(t.steps, native["trajectory"]) if not up.SWE_DONE.match(e["action"])
        ]
        _compare(rec, scored, t)
        n_checked += len(scored)
    assert n_checked >= 10


def test_swe_agent_decisions_whatever_the_usage(swebench, tmp_path):
    pytest.importorskip("sweagent", reason="SWE-agent 1.1.0: make install-sweagent")
    _usage_parity(swebench, SWE_AGENT, up.swe_agent_cases, tmp_path, "SWE-agent 1.1.0 hook")


def test_swe_agent_hook_builds_the_ingestor_steps_on_a_real_1x_tool_call_traj(swebench):
    """SWE-agent 1.1 with function calling: the hook gets one StepOutput per executed turn (the turns SWE-agent
    refused and re-asked are trajectory entries with an empty action, never handed to the hooks), with the
    turn's tool calls from ``history``; the last turn (submit or forced exit) is done and not scored."""
    pytest.importorskip("sweagent", reason="SWE-agent 1.1.0: make install-sweagent")
    from sweagent.types import StepOutput  # SWE-agent's own

    from earlyeval.integrations.swe_agent import EarlyStopHook

    n_checked = 0
    for native, _, t, rec in _swebench_runs(swebench, SWE_AGENT_1X):
        entries = native["trajectory"]
        executed = [e for k, e in enumerate(entries) if e["action"] or k == len(entries) - 1]
        turns = [m for m in native["history"] if m["role"] == "assistant"]
        assert len(executed) == len(turns) == len(t.steps)
        hook = EarlyStopHook(rec, autosubmit=False)
        hook.on_init(agent=type("Agent", (), {"_problem_statement": None})())
        hook.on_run_start()
        for k, (e, m) in enumerate(zip(executed, turns)):
            so = StepOutput(
                thought=e.get("thought") or "",
                action=e["action"],
                observation=e.get("observation") or "",
                tool_calls=m.get("tool_calls"),
                done=k == len(turns) - 1,
            )
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
    n_checked = 0
    for native, _, t, rec in _swebench_runs(swebench, MINI):
        up.mini_live(lambda: rec, native["messages"], t.run_id, tmp_path)
        # the last turn is never scored live: it submits (or hits a limit), and no model call follows it
        _compare(rec, t.steps[:-1], t)
        n_checked += len(t.steps) - 1
    assert n_checked >= 10


def test_mini_swe_agent_decisions_whatever_the_usage(swebench, tmp_path):
    pytest.importorskip("minisweagent")
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    _usage_parity(swebench, MINI, up.mini_cases, tmp_path, "mini-swe-agent EarlyStopAgent")


# ---------------------------------------------------------------------------
# OpenHands SDK
# ---------------------------------------------------------------------------


def _events(kind: str):
    if kind == "sdk":
        pytest.importorskip(
            "openhands.sdk", reason="openhands-sdk needs Python >= 3.12 (make test-openhands venv)"
        )
        return SdkEvents()
    return StandinEvents()


@pytest.mark.parametrize("kind", ["standin", pytest.param("sdk", marks=pytest.mark.openhands)])
def test_openhands_callback_builds_the_ingestor_steps_on_a_real_completions_run(swebench, kind):
    make = _events(kind)
    from earlyeval.integrations.openhands import EarlyStopCallback

    n_checked = 0
    for native, _, t, rec in _swebench_runs(swebench, OPENHANDS, keep=all_turns_call_tools):
        evs, scored = events_of(conversation(native), make)
        cb = EarlyStopCallback(rec, run_id=t.run_id)
        for ev in evs:
            cb(ev)
        assert cb.stopper.errors == []
        _compare(rec, [t.steps[i] for i in scored], t)
        n_checked += len(scored)
    assert n_checked >= 10


def openhands_cases(make):
    def build(mon, native, path, t, task, tmp, fmt, spec, bench) -> list[up.Case]:
        ctx = RunContext.of(t, task)
        evs, _ = events_of(conversation(native), make)
        u = native.get("response", {}).get("usage") or {}
        n = sum(1 for m in conversation(native) if m["role"] == "assistant")
        per_call = [
            (
                int(u.get("prompt_tokens") or 0),
                int(u.get("completion_tokens") or 0),
                float(native.get("cost") or 0.0),
            )
        ] * n
        cases = [
            up.from_recording(
                f"live {usage}"
                + (" (the file's one call usage, for every call)" if usage == "per_step" else ""),
                up.openhands_live(
                    lambda: RecordingMonitor(mon, ctx), evs, t.run_id, usage, per_call, response_id
                ),
            )
            for usage in ("per_step", "totals", "none")
        ]
        bare = json.loads(json.dumps(native))
        bare.get("response", {}).pop("usage", None)
        bare.pop("cost", None)
        cases.append(
            up.from_replay("offline (the file as it is: the last call's usage)", mon, t, task)
        )
        cases.append(
            up.from_replay(
                "offline none (usage and cost removed)",
                mon,
                up.reparse(bare, path, tmp, fmt, spec, bench),
                task,
            )
        )
        return cases

    return build


@pytest.mark.parametrize("kind", ["standin", pytest.param("sdk", marks=pytest.mark.openhands)])
def test_openhands_decisions_whatever_the_usage(swebench, tmp_path, kind):
    _usage_parity(
        swebench,
        OPENHANDS,
        openhands_cases(_events(kind)),
        tmp_path,
        f"OpenHands SDK callback ({'real openhands.sdk events' if kind == 'sdk' else 'stand-in events'})",
        keep=all_turns_call_tools,
    )


# ---------------------------------------------------------------------------
# inspect_ai
# ---------------------------------------------------------------------------


def _small_model(trajs: list[Trajectory], ctxs: list[RunContext]) -> ModelBundle:
    fz = Featurizer([build_family("behaviour")]).fit(trajs, ctxs)
    X = fz.prefix_matrix(trajs, ctxs)
    pf = prefix_table(trajs, min_steps=2)
    model = OutcomeModel(
        lgbm_params={"n_estimators": 20, "num_leaves": 7, "min_child_samples": 3},
        n_jobs=1,
        val_share=0.4,
    )
    model.fit(
        X,
        pf["y"].to_numpy(),
        sample_weight=pf["weight"].to_numpy(),
        groups=pf["task_id"].to_numpy(),
        feature_names=fz.names,
    )
    return ModelBundle(
        fz,
        model,
        {"success": 0.9, "failure": 0.9, "min_halt_step": 1},
        training={"benchmarks": [], "context_runs": len(trajs), "context_absent_runs": {}},
    )


@pytest.fixture(scope="module")
def tau2(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    from earlyeval.model.modeldir import save_model_dir

    _, spec, files, fmt = _ingest("tau2", TAU2_SOLO)
    [path] = files
    trajs = [t for t in fmt.parse(path, spec, "tau2") if isinstance(t, Trajectory)]
    ctxs = [RunContext.of(t, None) for t in trajs]
    mon = Monitor.load(
        save_model_dir(_small_model(trajs, ctxs), tmp_path_factory.mktemp("tau2") / "m")
    )
    return {
        "mon": mon,
        "trajs": trajs,
        "ctxs": ctxs,
        "sims": _load(path)["simulations"],
        "path": path,
        "fmt": fmt,
        "spec": spec,
    }


def test_inspect_ai_on_continue_builds_the_ingestor_steps_on_a_real_tau2_run(tau2):
    n_checked = 0
    for t, c in list(zip(tau2["trajs"], tau2["ctxs"]))[:N_RUNS]:
        sim = tau2["sims"][t.meta["simulation_index"]]
        rec = up.inspect_live(
            lambda: RecordingMonitor(tau2["mon"], c), t.prompt, sim["messages"], "per_step"
        )
        _compare(rec, t.steps, t)
        n_checked += len(t.steps)
    assert n_checked >= 10


def test_inspect_ai_decisions_whatever_the_usage(tau2, tmp_path):
    mon, th = tau2["mon"], tau2["mon"].thresholds
    doc = _load(tau2["path"])
    bare = json.loads(json.dumps(doc))
    for s in bare["simulations"]:
        s["messages"] = up.strip_tau2_usage(s["messages"])
    out = tmp_path / tau2["path"].name
    with (
        gzip.open(out, "wt", encoding="utf-8") if out.name.endswith(".gz") else open(out, "w") as f
    ):
        json.dump(bare, f)
    bare_runs = {
        t.run_id: t
        for t in tau2["fmt"].parse(out, tau2["spec"], "tau2")
        if isinstance(t, Trajectory)
    }
    results, halted = [], 0
    for t, c in list(zip(tau2["trajs"], tau2["ctxs"]))[:N_USAGE]:
        msgs = tau2["sims"][t.meta["simulation_index"]]["messages"]
        cases = [
            up.from_recording(
                f"live {u}", up.inspect_live(lambda: RecordingMonitor(mon, c), t.prompt, msgs, u)
            )
            for u in ("per_step", "totals", "none")
        ]
        cases.append(up.from_replay("offline per-step (the file as it is)", mon, t, None))
        cases.append(up.from_replay("offline none (usage removed)", mon, bare_runs[t.run_id], None))
        ok, why = up.agree(cases, th)
        results.append((t.run_id, ok, why))
        halted += up.decision(cases[0], min(len(x.p_s) for x in cases), th)[0] > 0
    share = sum(ok for _, ok, _ in results) / len(results)
    print(
        f"\nusage parity, inspect_ai on_continue (tau2 runs): {sum(ok for _, ok, _ in results)}/{len(results)} real runs "
        f"agree across 5 usage cases ({share:.0%}); {halted} of them halt"
    )
    assert share == 1.0, [r for r in results if not r[1]][:3]

"""The unit-tier twin of test_adapter_parity.py: the same checks on the hand-written fixtures (tests/fixtures/),
with a tiny model trained here on synthetic runs, so that a renderer, Step-builder or usage regression fails
the unit tier too, not only the integration tier on the real runs.

Per adapter, on each fixture run: the adapter builds the ingestor's Steps, the Monitor gives the batch
features and probabilities (to 1e-9), and every usage case (per step, totals only, none; live and offline;
tests/_usage_parity.py) gives the same probabilities and decision.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import _paths
import _usage_parity as up
import pytest
from _monitor_helpers import make_runs, make_tasks, train_bundle
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
from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.trajectory import Trajectory
from earlyeval.features import RunContext
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import save_model_dir

FX = _paths.FIXTURES
# mid thresholds: the fixtures' decisions are not all "continue"
TH = {
    "success": 0.6,
    "failure": 0.6,
    "min_halt_step": 1,
}


@pytest.fixture(scope="module")
def mon(tmp_path_factory) -> Monitor:
    """A behaviour-family model on synthetic SWE-bench-like runs (with token counts), as the shipped one is trained."""
    bundle, _, _ = train_bundle(
        make_runs(40, 0), make_tasks(12), families=("behaviour",), thresholds=dict(TH)
    )
    return Monitor.load(save_model_dir(bundle, tmp_path_factory.mktemp("parity") / "m"))


def _spec(name: str, fmt: str, glob: str, folder: str = "run") -> RunSpec:
    return RunSpec(
        name=name,
        folder=folder,
        agent=f"{name}__fake",
        scaffold=name,
        model="fake",
        format=fmt,
        glob=glob,
        labels=[LabelSpec(format="inline", path="")],
    )


def _runs(src: Path, spec: RunSpec, bench: str = "swebench", keep=lambda native: True):
    """(native document, path, ingested Trajectory) of each fixture file the ingestor reads."""
    fmt = ingest_mod.format_module(spec.format)
    out = []
    for path in ingest_mod.discover(src, spec):
        if path.name.startswith("bad__") or "bad__" in str(path.parent.name):
            continue
        native = json.loads(path.read_text())
        if not keep(native):
            continue
        [t] = [x for x in fmt.parse(path, spec, bench) if isinstance(x, Trajectory)][:1]
        out.append((native, path, t))
    assert out, src
    return fmt, out


def _agree(cases, label):
    ok, why = up.agree(cases, TH)
    assert ok, f"{label}: {why}"
    return why


def test_swe_agent_fixture(mon, tmp_path):
    pytest.importorskip(
        "sweagent", reason="SWE-agent 1.1.0 is installed by `make install-sweagent`"
    )
    spec = _spec("swe-agent", "swe-agent-traj", "*.traj*")
    fmt, runs = _runs(FX / "swe-agent-traj", spec)
    for i, (native, path, t) in enumerate(runs):
        ctx = RunContext.of(t, None)
        # as the ingestor: no per-step usage
        rec = up.swe_agent_live(lambda: RecordingMonitor(mon, ctx), native, "none")
        up.compare_steps(
            rec,
            [
                s
                for s, e in zip(t.steps, native["trajectory"])
                if not up.SWE_DONE.match(e["action"])
            ],
            t,
        )
        _agree(
            up.swe_agent_cases(
                mon, native, path, t, None, tmp_path / str(i), fmt, spec, "swebench"
            ),
            t.run_id,
        )


def test_mini_swe_agent_fixture(mon, tmp_path):
    pytest.importorskip("minisweagent")
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    spec = _spec("mini-swe-agent", "mini-swe-agent-v1", "trajs/*/*.traj.json*")
    fmt, runs = _runs(FX / "export-atif" / "mini-swe-agent", spec)
    for i, (native, path, t) in enumerate(runs):
        # the fixture has per-call usage: the cases differ in it
        assert any(s.input_tokens for s in t.steps)
        ctx = RunContext.of(t, None)
        rec = up.mini_live(
            lambda: RecordingMonitor(mon, ctx), native["messages"], t.run_id, tmp_path / f"l{i}"
        )
        up.compare_steps(rec, t.steps[:-1], t)
        _agree(
            up.mini_cases(mon, native, path, t, None, tmp_path / str(i), fmt, spec, "swebench"),
            t.run_id,
        )


@pytest.mark.parametrize("kind", ["standin", pytest.param("sdk", marks=pytest.mark.openhands)])
def test_openhands_fixture(mon, tmp_path, kind):
    """On the stand-ins (Python 3.11) and on the real openhands.sdk event classes (the Python 3.12 stage)."""
    if kind == "sdk":
        pytest.importorskip(
            "openhands.sdk", reason="openhands-sdk needs Python >= 3.12 (make test-openhands)"
        )
    spec = _spec("openhands", "openhands-completions", "llm_completions/*/*.json*")
    # a turn without a tool call ends an SDK run (an agent MessageEvent): only runs whose every turn calls a tool
    fmt, runs = _runs(FX / "openhands-completions", spec, keep=all_turns_call_tools)
    make = SdkEvents() if kind == "sdk" else StandinEvents()
    from earlyeval.integrations.openhands import EarlyStopCallback

    for i, (native, path, t) in enumerate(runs):
        ctx = RunContext.of(t, None)
        evs, scored = events_of(conversation(native), make)
        rec = RecordingMonitor(mon, ctx)
        cb = EarlyStopCallback(rec, run_id=t.run_id)
        for ev in evs:
            cb(ev)
        assert cb.stopper.errors == []
        up.compare_steps(rec, [t.steps[k] for k in scored], t)
        n = sum(1 for m in conversation(native) if m["role"] == "assistant")
        cases = [
            up.from_recording(
                f"live {u}",
                up.openhands_live(
                    lambda: RecordingMonitor(mon, ctx),
                    evs,
                    t.run_id,
                    u,
                    [(1500, 40, 0.01)] * n,
                    response_id,
                ),
            )
            for u in ("per_step", "totals", "none")
        ]
        bare = json.loads(json.dumps(native))
        bare.get("response", {}).pop("usage", None)
        cases += [
            up.from_replay("offline as is", mon, t, None),
            up.from_replay(
                "offline none",
                mon,
                up.reparse(bare, path, tmp_path / str(i), fmt, spec, "swebench"),
                None,
            ),
        ]
        _agree(cases, t.run_id)


def test_inspect_ai_fixture(mon, tmp_path):
    pytest.importorskip("inspect_ai")
    spec = _spec("tau2", "tau2", "solo_no_user.json", folder="tau2")
    fmt = ingest_mod.format_module("tau2")
    path = FX / "tau2" / "solo_no_user.json"
    doc = json.loads(path.read_text())
    trajs = [t for t in fmt.parse(path, spec, "tau2") if isinstance(t, Trajectory)]
    bare = json.loads(json.dumps(doc))
    for s in bare["simulations"]:
        s["messages"] = up.strip_tau2_usage(s["messages"])
    (tmp_path / path.name).write_text(json.dumps(bare))
    bare_runs = {
        t.run_id: t
        for t in fmt.parse(tmp_path / path.name, spec, "tau2")
        if isinstance(t, Trajectory)
    }
    for t in trajs:
        assert any(s.input_tokens for s in t.steps)
        ctx = RunContext.of(t, None)
        msgs = doc["simulations"][t.meta["simulation_index"]]["messages"]
        rec = up.inspect_live(lambda: RecordingMonitor(mon, ctx), t.prompt, msgs, "per_step")
        up.compare_steps(rec, t.steps, t)
        cases = [
            up.from_recording(
                f"live {u}", up.inspect_live(lambda: RecordingMonitor(mon, ctx), t.prompt, msgs, u)
            )
            for u in ("per_step", "totals", "none")
        ]
        cases += [
            up.from_replay("offline per-step", mon, t, None),
            up.from_replay("offline none", mon, bare_runs[t.run_id], None),
        ]
        _agree(cases, t.run_id)


def test_the_usage_cases_really_differ_in_usage(mon, tmp_path):
    """The check is not vacuous: the cases hand the Monitor different token counts (a model that read them
    would be caught), shown on the mini-swe-agent fixture's Steps."""
    pytest.importorskip("minisweagent")
    spec = _spec("mini-swe-agent", "mini-swe-agent-v1", "trajs/*/*.traj.json*")
    _, [(native, path, t)] = _runs(FX / "export-atif" / "mini-swe-agent", spec)
    ctx = RunContext.of(t, None)
    with_usage = up.mini_live(
        lambda: RecordingMonitor(mon, ctx), native["messages"], t.run_id, tmp_path / "a"
    )
    without = up.mini_live(
        lambda: RecordingMonitor(mon, ctx),
        up.strip_message_usage(native["messages"]),
        t.run_id,
        tmp_path / "b",
    )
    assert [s["input_tokens"] for s in with_usage.steps][0] == 1500
    assert all(s["input_tokens"] is None and s["cost_usd"] is None for s in without.steps)

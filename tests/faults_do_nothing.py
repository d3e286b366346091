"""Fault cases of the class "runs that do nothing are never credited": a run of 50 steps of ``echo hi``, of 50
empty steps, or a forfeit at once, on easy tasks (every public run of them resolved), scored with the real shipped
model (``models/swebench``, after ``make train``) through the Monitor and through ``earlyeval score``.  Shared by
tests/test_faults.py and tools/fault_summary.py.

"ok": no such run is halted as a success; "silent": one is (its recorded outcome is a success it never earned).
A success halt needs the run's own evidence (features.evidence, the catalog's ``success_evidence``): none of these
runs has any, so none may be credited, whatever the task prior says."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from faults import HERE, Env
from faults29 import _no_traceback, child

REPO = HERE.parent
MODEL = REPO / "models" / "swebench"
DATA = REPO / "data" / "swebench"
KINDS = ("50 steps of echo hi", "50 empty steps", "a forfeit at once")


def _absent() -> str | None:
    if not (MODEL / "manifest.json").is_file() or not (DATA / "trajectories.parquet").is_file():
        return f"needs {MODEL} and {DATA} (make train BENCH=swebench)"
    return None


def easy_tasks(n: int = 3) -> list[str]:
    """Tasks every public run (at least five) resolved: the easiest the shipped model knows."""
    import pandas as pd

    tr = pd.read_parquet(DATA / "trajectories.parquet", columns=["task_id", "outcome"])
    g = tr.groupby("task_id")["outcome"].agg(["mean", "size"])
    return sorted(g[(g["size"] >= 5) & (g["mean"] == 1.0)].index)[:n]


def idle_steps(kind: str) -> list[Any]:
    from earlyeval.core.trajectory import Action, make_step

    if kind == "50 steps of echo hi":
        return [make_step(i, [Action("bash", "echo hi")], observation="hi") for i in range(50)]
    if kind == "50 empty steps":
        return [make_step(i, [], observation="") for i in range(50)]
    return [make_step(0, [Action("submit", "")], thought="I give up.", observation="")]


def _monitor_case(kind: str):
    """The live loop: an EarlyStopper on the shipped model, started with the task, fed the idle steps."""

    def case(env: Env):
        if _absent():
            return ("absent", _absent())
        from earlyeval import Monitor
        from earlyeval.integrations import EarlyStopper
        from earlyeval.tables.store import read_tasks

        tasks = read_tasks(DATA / "tasks.parquet")
        mon = env._cache.get("swebench_monitor") or Monitor.load(MODEL, halt_on="both")
        env._cache["swebench_monitor"] = mon
        credited = []
        for tid in easy_tasks():
            st = EarlyStopper(mon.spawn())
            st.start(task=tasks[tid], run_id=f"{tid}__idle")
            for s in idle_steps(kind):
                d = st.after_step(action=s.action, observation=s.observation, thought=s.thought)
                if d.halt:
                    if d.outcome == "success":
                        credited.append(
                            f"{tid} at step {s.index + 1} (P(success) {d.p_success:.2f})"
                        )
                    break
        if credited:
            return ("silent", f"{kind}: halted as a success: {'; '.join(credited)}")
        return ("ok", f"{kind}: never halted as a success on {len(easy_tasks())} easy tasks")

    return case


def _runs_folder(env: Env, kind: str) -> Path:
    from earlyeval.core.trajectory import Trajectory
    from earlyeval.workflows.export import export_runs

    d = env.base / "do_nothing" / kind.replace(" ", "_")
    if d.exists():
        shutil.rmtree(d)
    trajs = [
        Trajectory(f"{tid}__idle", "idle-agent", "swebench", tid, idle_steps(kind), outcome=0)
        for tid in easy_tasks()
    ]
    export_runs(trajs, d)
    return d


def _score_case(kind: str, extra: tuple[str, ...] = ()):
    """``earlyeval score`` (halting on both outcomes, a benchmark pass's rule) of a folder of such runs."""

    def case(env: Env):
        if _absent():
            return ("absent", _absent())
        runs = _runs_folder(env, kind)
        out = env.base / "do_nothing" / f"out_{kind.replace(' ', '_')}{'_pass' if extra else ''}"
        args = ["score", "--model", str(MODEL), "--runs", str(runs), "--format", "atif"]
        args += ["--out", str(out), "--force", "--as-of", "all", *extra]
        rc, _, err = child(args, REPO, env={"EARLYEVAL_HOME": str(REPO)}, timeout=300)
        last = _no_traceback(rc, err)
        if rc != 0:
            raise RuntimeError(f"score failed, rc {rc}: {last}")
        rep = json.loads((out / "score.json").read_text())
        credited = [
            f"{r['task_id']} at step {r['halt_t']}"
            for r in rep["per_run"]
            if r["halted"] and r.get("predicted") == "success"
        ]
        if credited:
            return ("silent", f"{kind}: halted as a success: {'; '.join(credited)}")
        return ("ok", f"{kind}: {len(rep['per_run'])} runs, none halted as a success")

    return case


C = "runs that do nothing are never credited"
CASES_DO_NOTHING: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    *[(C, f"Monitor: {k} on easy tasks", _monitor_case(k)) for k in KINDS],
    *[(C, f"score: {k} on easy tasks", _score_case(k)) for k in KINDS],
    *[
        (C, f"score --pass: {k} on easy tasks", _score_case(k, ("--pass", "--audit-share", "0")))
        for k in KINDS[:2]
    ],
]
XFAIL: dict[str, str] = {}  # every case holds since the success evidence rule (issue 41)

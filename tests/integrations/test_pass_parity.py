"""A benchmark pass live and simulated (issue 28, "Live"), on real runs (``pytest -m integration``).

Real SWE-bench runs of one agent go through the real mini-swe-agent loop (``EarlyStopAgent`` on ``DefaultAgent.run``
and ``LocalEnvironment``, the package's scripted model replaying each run's recorded turns) on W parallel workers
(threads sharing one Pass, or processes sharing its state file), every run's monitor from one ``earlyeval: {pass:
...}`` block; the pass's decisions must be those of ``pass_sim.simulate_pass`` (the evaluation's simulator) for the
same runs, order, seed, W and audit share, the simulator's schedule imposed on the workers (``Schedule``).
"""

from __future__ import annotations

import copy
import gzip
import json
import multiprocessing as mp
import os
import subprocess
import threading
import traceback
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import models_dir
from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.evaluation.pass_sim import simulate_pass
from earlyeval.features.passref import PassReference, profile_of
from earlyeval.fitting.metrics import RunSet, runset_of_runs
from earlyeval.fitting.warm import halting_policy
from earlyeval.ingest import ingest_run
from earlyeval.integrations.config import monitor_from_config
from earlyeval.live.benchpass import AuditMonitor, Pass, pass_order
from earlyeval.model.outcome import split_proba
from earlyeval.model.policy import NEVER, SUCCESS, first_halt, halting_pair
from earlyeval.tables.store import bench_dir
from earlyeval.tables.tasks import load_tasks

pytestmark = pytest.mark.integration

MINI = "verified__mini-swe-agent-v1.15.0__gemini-3-pro-preview-20251118"
N_RUNS = 40  # real runs per pass
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"  # the last recorded turn ends the run the way mini's env ends it
WAIT = 120.0  # seconds a gate waits before the test fails (a broken schedule, never a timing assertion)
# a label-free pair too bold for this agent: the audit moves it
BOLD = {
    "success": 0.6,
    "failure": 0.6,
    "min_halt_step": 1,
}


# ---------------------------------------------------------------------------------------------------- the runs


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> dict[str, Any]:
    """Every labelled run of MINI (ingested as ``earlyeval ingest`` does), the task prompts and a work tree."""
    pytest.importorskip("minisweagent")
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    if not (models_dir("swebench") / "manifest.json").exists():
        pytest.skip("no shipped model: run `make train BENCH=swebench`")
    tasks_file = bench_dir("swebench") / "tasks.parquet"
    if not data_root().exists() or not tasks_file.exists():
        pytest.skip(f"real data absent: {data_root()} or {tasks_file} (make ingest BENCH=swebench)")
    cat = load_catalog("swebench")
    trajs, _ = ingest_run(cat.run(MINI), "swebench", data_root())
    trajs = sorted((t for t in trajs if t.outcome is not None), key=lambda t: t.run_id)
    tasks = load_tasks(cat, data_root())
    prompts = {t.run_id: tasks[t.task_id].prompt if t.task_id in tasks else "" for t in trajs}
    return {
        "trajs": trajs,
        "prompts": prompts,
        "tasks_file": tasks_file,
        "repo": _dirty_repo(tmp_path_factory.mktemp("repo")),
    }


def _runs(corpus: dict[str, Any], trajs: list[Trajectory]) -> dict[str, Any]:
    """The pass's runs and their recorded messages."""
    return {
        **corpus,
        "trajs": trajs,
        "messages": {t.run_id: _native(Path(t.meta["source_file"]))["messages"] for t in trajs},
    }


def _spread(trajs: list[Trajectory], n: int) -> list[Trajectory]:
    return [trajs[int(k * len(trajs) / n)] for k in range(min(n, len(trajs)))]


@pytest.fixture(scope="module")
def real(corpus) -> dict[str, Any]:
    """N_RUNS runs evenly spread over the agent's runs (sorted by run id)."""
    return _runs(corpus, _spread(corpus["trajs"], N_RUNS))


@pytest.fixture(scope="module")
def misjudged(corpus, tmp_path_factory) -> dict[str, Any]:
    """N_RUNS runs for which the BOLD pair is visibly wrong: the first 10 (by run id) it halts as successes that
    failed, and runs it does not halt as successes, evenly spread.  Their audit sample rejects its success side."""
    rs, _, _ = batch_runset(
        corpus, block(corpus, tmp_path_factory.mktemp("s") / "p.json", 0.5, 0, BOLD)
    )
    t, o = first_halt(rs.p_s, rs.p_f, BOLD["success"], BOLD["failure"], BOLD["min_halt_step"])
    wrong = [
        x for x, ti, oi in zip(corpus["trajs"], t, o) if ti > 0 and oi == SUCCESS and x.outcome == 0
    ][:10]
    others = [x for x, ti, oi in zip(corpus["trajs"], t, o) if not (ti > 0 and oi == SUCCESS)]
    if len(wrong) < 5:
        pytest.fail(
            f"only {len(wrong)} runs the BOLD pair halts wrongly as successes: the moving case needs more"
        )
    return _runs(
        corpus, sorted(wrong + _spread(others, N_RUNS - len(wrong)), key=lambda x: x.run_id)
    )


@pytest.fixture(scope="module")
def misjudged_failures(corpus, tmp_path_factory) -> dict[str, Any]:
    """For a failure-only pass (halt_on failure) at BOLD: the runs its rule halts as failures that succeeded while a
    rule halting on both sides halts them as successes first (so only the rule applied sees these errors), and runs
    it does not halt, evenly spread; the seed audits at least 3 of the former (``seed``)."""
    rs, _, _ = batch_runset(
        corpus, block(corpus, tmp_path_factory.mktemp("f") / "p.json", 0.5, 0, BOLD)
    )
    tf, _ = first_halt(rs.p_s, rs.p_f, NEVER, BOLD["failure"], BOLD["min_halt_step"])
    tb, ob = first_halt(rs.p_s, rs.p_f, BOLD["success"], BOLD["failure"], BOLD["min_halt_step"])
    hidden = [
        x
        for x, a, b, c in zip(corpus["trajs"], tf, tb, ob)
        if a > 0 and x.outcome == 1 and b > 0 and c == SUCCESS
    ]
    if len(hidden) < 3:
        pytest.fail(
            f"{len(hidden)} runs only the failure-only rule halts wrongly: too few for the case"
        )
    others = _spread([x for x, a in zip(corpus["trajs"], tf) if a == 0], N_RUNS - len(hidden))
    return _runs(corpus, sorted(hidden + others, key=lambda x: x.run_id))


def moving_seed(real: dict[str, Any], share: float, workers: int, halt_on: str) -> int:
    """The first seed whose simulated pass at BOLD starts runs under two pairs (the audit draw and the order are
    the seed's): the case then covers runs started after a move, not only a final pair."""
    rs, pair, min_t = batch_runset(
        real, block(real, Path("unused.json"), share, 0, BOLD, halt_on=halt_on)
    )
    for seed in range(50):
        if (
            len(
                {
                    tuple(p)
                    for p in simulated(rs, pair, min_t, seed, workers, share, halt_on)[0][
                        "thresholds"
                    ]
                }
            )
            > 1
        ):
            return seed
    pytest.fail("no seed in 0..49 moves the pair before the last start")


def _native(path: Path) -> dict[str, Any]:
    path = path if path.is_absolute() else data_root() / path
    with (
        gzip.open(path, "rt", encoding="utf-8")
        if path.name.endswith(".gz")
        else open(path, encoding="utf-8")
    ) as f:
        return json.load(f)


def _dirty_repo(root: Path) -> Path:
    """A git work tree with an uncommitted change: the candidate patch a success halt submits is never empty."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    (root / "mod.py").write_text("a = 1\n")
    for cmd in (["git", "init", "-q"], ["git", "add", "mod.py"], ["git", "commit", "-qm", "init"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)
    (root / "mod.py").write_text("a = 2\n")
    return root


def _turns(messages: list[dict]) -> list[tuple[dict, list[dict]]]:
    """(assistant message, the messages that answered it) per recorded turn."""
    turns: list[tuple[dict, list[dict]]] = []
    for m in messages:
        if m.get("role") == "assistant":
            turns.append((m, []))
        elif turns and m.get("role") != "exit":
            turns[-1][1].append(m)
    return turns


def block(
    real: dict[str, Any],
    state: Path,
    share: float,
    seed: int,
    thresholds: dict | None = None,
    model: Path | None = None,
    halt_on: str = "both",
) -> dict:
    """The one ``earlyeval`` block every run's monitor is built from (a benchmark pass halts on both by default)."""
    cfg = {
        "model": str(model or models_dir("swebench")),
        "halt_on": halt_on,
        "tasks": str(real["tasks_file"]),
        "pass": {"state": str(state), "audit_share": share, "seed": seed},
    }
    return {**cfg, "thresholds": thresholds} if thresholds else cfg


# ---------------------------------------------------------------------------------------------- the simulator


def batch_runset(real: dict[str, Any], cfg: dict) -> tuple[RunSet, tuple[float, float], int]:
    """The runs' RunSet by the offline path (features of the whole trajectory, then the model), each run in the
    context the live monitor starts it with; the label-free pair and min_halt_step."""
    mon = monitor_from_config({k: v for k, v in cfg.items() if k != "pass"})
    fz, model = mon.bundle.featurizer, mon.bundle.model
    ps, pf = [], []
    for t in real["trajs"]:
        ctx = mon.spawn().start(
            task=Task(task_id=t.task_id, prompt=real["prompts"][t.run_id]), run_id=t.run_id
        )
        X = fz.prefix_matrix([t], [ctx], max_t=[len(t.steps)])[: len(t.steps) - 1]
        a, b = split_proba(model.predict_proba(X))
        ps.append(a)
        pf.append(b)
    return (
        runset_of_runs(real["trajs"], ps, pf, *halting_policy(mon.bundle)),
        (mon.rule.success, mon.rule.failure),
        mon.rule.min_halt_step,
    )


def simulated(
    rs: RunSet,
    base: tuple[float, float],
    min_t: int,
    seed: int,
    workers: int,
    share: float,
    halt_on: str = "both",
) -> tuple[dict[str, Any], dict[int, list[int]]]:
    """``simulate_pass`` and, per run, the audited runs it had delivered when the run started (its reference)."""
    refs: dict[int, list[int]] = {}

    def repredict(i: int, delivered: list[int]) -> None:
        refs[i] = list(delivered)
        return None  # the static predictions: the shipped model has no pass feature

    return simulate_pass(
        rs, base, min_t, seed, workers, share, repredict=repredict, halt_on=halt_on
    ), refs


# ------------------------------------------------------------------------------------------ the live workers


class Schedule:
    """The simulator's order imposed on the live workers (the same order, see the test's docstring).

    Run i spawns its monitor only once every run the simulator delivered before i started (``before[i]``: those
    started earlier and finished at or before i's start, in steps) has finished in the live pass and, if audited,
    been graded; and run j's last model call waits until every run the simulator started before delivering j has
    spawned its monitor.  Nothing else is ordered: the workers run in parallel in between."""

    def __init__(self, sim: dict[str, Any], event: Callable[[], Any] = threading.Event):
        pos, start, fin = sim["position"], sim["start"], sim["finish"]
        n = len(pos)
        self.before = [
            {j for j in range(n) if pos[j] < pos[i] and fin[j] <= start[i]} for i in range(n)
        ]
        self.after = [[k for k in range(n) if k != j and j not in self.before[k]] for j in range(n)]
        self.last_call = [
            int(t) if t > 0 else int(T) for t, T in zip(sim["t_halt"], sim["finish"] - sim["start"])
        ]
        self.spawned = [event() for _ in range(n)]  # threading or multiprocessing events
        self.delivered = [event() for _ in range(n)]

    @staticmethod
    def wait(events: list[Any], why: str) -> None:
        for e in events:
            if not e.wait(WAIT):
                raise TimeoutError(f"schedule stuck: {why}")

    def on_call(self, i: int) -> Callable[[int], None]:
        """The hook of run i's model: call c (1-based) is about to be answered."""

        def hook(c: int) -> None:
            if c == 1:
                self.spawned[
                    i
                ].set()  # the agent spawned the run's monitor before its first model call
            if c == self.last_call[i]:
                self.wait(
                    [self.spawned[k] for k in self.after[i]],
                    f"run {i}'s end waits for later starts",
                )

        return hook


def replay_model(messages: list[dict], hook: Callable[[int], None]) -> Any:
    """mini-swe-agent's own scripted model replaying one real run: call k returns the k-th recorded assistant message
    and, as its observation, the recorded answers; the last turn submits, so the real LocalEnvironment ends the run."""
    from minisweagent.models.test_models import DeterministicModel

    turns = _turns(messages)
    outputs = [copy.deepcopy(a) for a, _ in turns]
    outputs[-1]["extra"] = {**(outputs[-1].get("extra") or {}), "actions": [{"command": SUBMIT}]}

    class Replay(DeterministicModel):
        def query(self, msgs: list[dict], **kwargs: Any) -> dict:
            hook(self.current_index + 2)
            return super().query(msgs, **kwargs)

        def format_observation_messages(
            self, message: dict, outs: list[dict], template_vars: dict | None = None
        ) -> list[dict]:
            if (
                outs
            ):  # the submitting turn (the environment raised Submitted before this is reached)
                return super().format_observation_messages(message, outs, template_vars)
            return copy.deepcopy(turns[self.current_index][1])

    return Replay(outputs=outputs, cost_per_call=0.0)


def play(real: dict[str, Any], cfg: dict, i: int, sched: Schedule) -> dict[str, Any]:
    """Run i through the real mini-swe-agent loop; what its monitor was spawned with and what it decided."""
    from minisweagent.environments.local import LocalEnvironment

    from earlyeval.integrations.mini_swe_agent import EarlyStopAgent

    t: Trajectory = real["trajs"][i]
    seen: dict[str, Any] = {}

    def hook(c: int) -> None:
        if (
            c == 1
        ):  # the monitor was spawned in run() before this call; nothing was delivered in between
            seen["finished_at_start"] = len(agent.stopper.monitor.the_pass.state["finished"])
        sched.on_call(i)(c)

    agent = EarlyStopAgent(
        replay_model(real["messages"][t.run_id], hook),
        LocalEnvironment(cwd=str(real["repo"])),
        earlyeval={**cfg, "task": t.task_id, "run_id": t.run_id},
        system_template="Replay.",
        instance_template="{{task}}",
        step_limit=0,
        cost_limit=0,
    )
    agent.run(real["prompts"][t.run_id])
    pm = agent.stopper.monitor
    mon = pm.current.monitor if isinstance(pm.current, AuditMonitor) else pm.current
    h = agent.stopper.halted
    assert agent.stopper.errors == [] and pm.warnings == [], (agent.stopper.errors, pm.warnings)
    return {
        **seen,
        "audited": isinstance(pm.current, AuditMonitor),
        "pair": tuple(mon.rule.pair),
        "t_halt": h.n_steps if h else 0,
        "pred": -1 if h is None else int(h.outcome == "success"),
        "ref": mon.pass_reference,
        "pass": pm.the_pass,  # the Pass stays in the worker
        "probs": [(d.p_success, d.p_failure) for d in agent.stopper.decisions],
    }


def _work(
    real: dict[str, Any],
    cfg: dict,
    order: list[int],
    sched: Schedule,
    nxt: Any,
    late_grades: bool,
    results: Any,
) -> None:
    """One worker, a thread or a process: the next run in pass order until none is left; an audited run is graded
    with its real label as soon as it ends (``late_grades``: by the test after the pass, a broken delivery)."""
    try:
        while True:
            with nxt.get_lock():
                k, nxt.value = nxt.value, nxt.value + 1
            if k >= len(order):
                return
            i = order[k]
            sched.wait([sched.delivered[j] for j in sorted(sched.before[i])], f"run {i}'s start")
            rec = play(real, cfg, i, sched)
            the_pass, t = rec.pop("pass"), real["trajs"][i]
            if rec["audited"] and not late_grades:
                # the harness's grade, right after the run ends
                the_pass.grade(t.run_id, int(t.outcome))
            sched.delivered[i].set()
            results.put((i, rec))
    except BaseException:  # noqa: BLE001 - reported by the test, which fails on it rather than on a hang
        results.put((-1, traceback.format_exc()))
        for ev in sched.delivered + sched.spawned:
            ev.set()


def live_pass(
    real: dict[str, Any],
    cfg: dict,
    sim: dict[str, Any],
    seed: int,
    workers: int,
    late_grades: bool = False,
    processes: bool = False,
) -> tuple[list[dict[str, Any]], Pass]:
    """The pass on ``workers`` threads (or processes, sharing it through its state file only) taking runs in pass
    order; each run's record, and the pass as its state file holds it at the end."""
    ctx = mp.get_context("spawn")
    sched, order = Schedule(sim, ctx.Event), pass_order([t.run_id for t in real["trajs"]], seed)
    nxt, results = ctx.Value("i", 0), ctx.Queue()
    kind = ctx.Process if processes else threading.Thread
    ws = [
        kind(target=_work, args=(real, cfg, order, sched, nxt, late_grades, results))
        for _ in range(workers)
    ]
    for w in ws:
        w.start()
    got: dict[int, dict[str, Any]] = {}
    while len(got) < len(order):
        i, rec = results.get(timeout=WAIT)
        assert i >= 0, rec
        got[i] = rec
    for w in ws:
        w.join(WAIT)
    pc = cfg["pass"]
    the_pass = Pass(
        monitor_from_config({k: v for k, v in cfg.items() if k != "pass"}),
        pc["state"],
        audit_share=pc["audit_share"],
        seed=pc["seed"],
    )
    for i in sorted(got) if late_grades else []:
        if got[i]["audited"]:
            the_pass.grade(real["trajs"][i].run_id, int(real["trajs"][i].outcome))
    return [got[i] for i in range(len(order))], the_pass


# ------------------------------------------------------------------------------------------------- compare


def mismatches(
    real: dict[str, Any],
    live: list[dict[str, Any]],
    sim: dict[str, Any],
    refs: dict[int, list[int]],
    with_refs: bool,
) -> list[str]:
    """Each run's live decisions against the simulator's: audited, the pair in force at its start, the runs
    finished then, the halt (prefix t, outcome) and, for a model with the pass family (``with_refs``: else the pass
    keeps no profile), the pass reference its features read (the audited runs the simulator had delivered)."""
    out = []
    for i, r in enumerate(live):
        want = {
            "audited": bool(sim["audited"][i]),
            "pair": tuple(float(x) for x in sim["thresholds"][i]),
            "finished_at_start": int(sim["finished_at_start"][i]),
            "t_halt": int(sim["t_halt"][i]),
            "pred": int(sim["pred"][i]),
        }
        got = {k: r[k] for k in want}
        if got != want:
            out.append(f"{real['trajs'][i].run_id}: live {got} != simulated {want}")
        want_ref = (
            PassReference.of(profile_of(real["trajs"][j]) for j in refs[i]) if with_refs else None
        )
        if (r["ref"] is None) != (want_ref is None) or (
            want_ref is not None and r["ref"] != want_ref
        ):
            out.append(
                f"{real['trajs'][i].run_id}: its pass reference is not the simulator's ({len(refs[i])} audited runs)"
            )
    return out


def moves(history: list[dict[str, Any]], key: str) -> list[list[float]]:
    """The pairs a pass moved to, in order (the runs finished at a move depend on how finish events the schedule
    leaves unordered interleave; which runs started under which pair is compared run by run)."""
    out: list[list[float]] = []
    for h in history:
        if not out or h[key] != out[-1]:
            out.append([float(x) for x in h[key]])
    return out


def check_probabilities(live: list[dict[str, Any]], rs: RunSet) -> None:
    """The precondition: the live monitors' probabilities are the offline ones (to 1e-9) at every step scored."""
    for r, a, b in zip(live, rs.p_s, rs.p_f):
        got = np.asarray(r["probs"], dtype=float).reshape(-1, 2)
        n = len(got)
        assert n == (r["t_halt"] or len(a)), (n, r["t_halt"], len(a))
        np.testing.assert_allclose(got[:, 0], a[:n], rtol=0, atol=1e-9)
        np.testing.assert_allclose(got[:, 1], b[:n], rtol=0, atol=1e-9)


# ---------------------------------------------------------------------------------------------------- tests


def _pass_case(
    real: dict[str, Any],
    tmp_path: Path,
    seed: int,
    workers: int,
    share: float,
    thresholds: dict | None = None,
    late_grades: bool = False,
    model: Path | None = None,
    halt_on: str = "both",
    processes: bool = False,
) -> dict[str, Any]:
    """One pass live and simulated, and what differs between them."""
    cfg = block(
        real,
        tmp_path / f"pass-{seed}-{workers}-{late_grades}.json",
        share,
        seed,
        thresholds,
        model,
        halt_on,
    )
    rs, model_pair, min_t = batch_runset(real, cfg)
    sim, refs = simulated(rs, model_pair, min_t, seed, workers, share, halt_on)
    live, the_pass = live_pass(real, cfg, sim, seed, workers, late_grades, processes)
    base = halting_pair(*model_pair, halt_on)
    assert the_pass.base == base
    with_refs = (
        "pass" in monitor_from_config({"model": cfg["model"]}).bundle.featurizer.family_names
    )
    live_moves = [m for m in moves(the_pass.history, "thresholds") if m != list(base)]
    return {
        "rs": rs,
        "sim": sim,
        "live": live,
        "bad": mismatches(real, live, sim, refs, with_refs),
        "pass": the_pass,
        "moves": live_moves,
        "sim_moves": moves(sim["history"], "pair"),
        "base": base,
    }


@pytest.mark.parametrize(
    "seed,workers,processes", [(0, 1, False), (1, 4, False), (2, 8, False), (5, 3, True)]
)
def test_a_live_pass_on_parallel_mini_swe_agent_workers_decides_as_the_simulator(
    real, tmp_path, seed, workers, processes
):
    """The same order: runs spawn in ``pass_order(run ids, seed)``, and each run's monitor is spawned after exactly
    the finish events (and audited grades) the simulator delivered before that run started, on W workers in time
    counted in steps (``Schedule``).  Then every run's audit draw, the pair in force at its start, the runs finished
    then, its halt (step and outcome) and its pass reference are the simulator's.  At the model's own pair and
    share 0.25 the thresholds do not move in 40 runs (certification needs hundreds of graded halts).  Workers are
    threads sharing one Pass, or processes sharing only its state file (each with its own Pass)."""
    c = _pass_case(real, tmp_path, seed, workers, 0.25, processes=processes)
    check_probabilities(c["live"], c["rs"])
    assert c["bad"] == []
    assert (
        c["moves"] == [] == c["sim_moves"] and list(c["pass"].thresholds) == c["sim"]["final_pair"]
    )
    n_halted = int((c["sim"]["t_halt"] > 0).sum())
    assert (
        n_halted >= 5
        and c["sim"]["audited"].sum() >= 5
        and set(c["sim"]["pred"][c["sim"]["t_halt"] > 0]) == {0, 1}
    )
    kind = "processes" if processes else "threads"
    print(
        f"\npass parity, {len(c['live'])} real runs, W={workers} {kind}, seed {seed}: {n_halted} halted, "
        f"{int(c['sim']['audited'].sum())} audited, all decisions equal"
    )


@pytest.mark.parametrize("processes", [False, True])
def test_a_moving_threshold_pair_moves_at_the_same_run_live_and_simulated(
    misjudged, tmp_path, processes
):
    """A label-free pair too bold for these runs (0.6, 0.6, the block's ``thresholds``) and half of them audited: the
    graded audit runs reject its success side mid-pass; live and simulated, the pair moves after the same finished
    runs and every later run starts under the new pair (W = 4 threads, or 4 processes)."""
    c = _pass_case(
        misjudged,
        tmp_path,
        moving_seed(misjudged, 0.5, 4, "both"),
        4,
        0.5,
        BOLD,
        processes=processes,
    )
    check_probabilities(c["live"], c["rs"])
    assert c["bad"] == []
    assert (
        c["moves"] == c["sim_moves"] != [] and list(c["pass"].thresholds) == c["sim"]["final_pair"]
    )
    pairs = sorted({tuple(float(x) for x in p) for p in c["sim"]["thresholds"]})
    assert len(pairs) >= 2  # runs started under different pairs
    print(
        f"\npass parity, moving pair: {c['base']} -> {c['sim_moves']}; pairs in force at starts: {pairs}"
    )


def test_the_parity_check_fails_when_the_grades_are_delivered_late(misjudged, tmp_path):
    """The comparison is not vacuous: the same pass with every audited grade told to the pass only after the last run
    started (the finish events late) gives runs started under another pair than the simulator's."""
    c = _pass_case(
        misjudged, tmp_path, moving_seed(misjudged, 0.5, 4, "both"), 4, 0.5, BOLD, late_grades=True
    )
    assert any("'pair'" in m for m in c["bad"]), c["bad"][:3]


def test_the_pass_reference_live_is_the_one_training_and_the_simulator_read(real, tmp_path):
    """With a model of the pass family (constant probabilities, never halting: only the reference is at stake), each
    audited run's profile in the state file is ``profile_of`` its trajectory, and every run's monitor reads the
    reference the simulator hands ``repredict``: the audited runs delivered before it started (W = 4)."""
    from _monitor_helpers import NEVER_HALT, constant_model

    model = constant_model(tmp_path / "m", 0.5, NEVER_HALT, families=("behaviour", "pass"))
    c = _pass_case(real, tmp_path, 4, 4, 0.5, model=model)
    fin = c["pass"].state["finished"]
    got = {t.run_id: fin[t.run_id]["profile"] for t in real["trajs"] if fin[t.run_id]["audited"]}
    assert got == {r: profile_of(t).to_dict() for t in real["trajs"] if (r := t.run_id) in got}
    assert c["bad"] == []
    assert sum(r["ref"] is not None for r in c["live"]) >= 10


def test_a_failure_only_pass_certifies_the_halts_its_monitors_make(misjudged_failures, tmp_path):
    """``halt_on: failure`` (every live adapter's default) at BOLD: the audited runs only the failure-only rule halts
    wrongly (a rule halting on both sides would halt them as successes first) reject the failure side, live as
    simulated, and the success side stays off throughout (W = 4)."""
    seed = moving_seed(misjudged_failures, 0.5, 4, "failure")
    c = _pass_case(misjudged_failures, tmp_path, seed, 4, 0.5, BOLD, halt_on="failure")
    check_probabilities(c["live"], c["rs"])
    assert c["bad"] == []
    assert c["moves"] == c["sim_moves"] == [[NEVER, NEVER]] and list(c["pass"].thresholds) == [
        NEVER,
        NEVER,
    ]
    assert not (c["sim"]["pred"] == SUCCESS).any() and {p[0] for p in c["sim"]["thresholds"]} == {
        NEVER
    }
    print(f"\npass parity, failure-only (seed {seed}): {c['base']} -> {c['sim_moves']}")

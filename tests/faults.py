"""Fault-injection cases for issue 15's findings, shared by tests/test_faults.py and tools/fault_summary.py.

Each case injects one fault and checks what earlyeval did.  It returns ("ok", detail) when the
outcome is the right one (e.g. no halt, the run still monitored, the value unknown), ("named", detail)
when the input was refused with an error naming the file/field, or ("silent", detail) when something
was dropped or decided wrongly without a word.  A case that raises, or whose child process dies, is a
"crash" (counted by the runner, ``run_case``).  Cases that might abort the interpreter (LightGBM on a
corrupt booster) run the risky call in a child process, so an abort is counted, not fatal.

Findings (issue 15): 1 Monitor without context / bad input; 2 tau2 run ids; 3 per-file validation;
4 atomic writes; 5 loader refusal; 6 the smaller silent items (symlinks, labels, ATIF rewards, size
limit, --bench, score --runs, O(1) features, deterministic hashes).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))


@dataclass
class Env:
    """What the cases share, built once: a temp folder, a tiny trained model (thresholds that halt often
    with full context, so "no halt" without context is a real test), its runs and tasks."""

    base: Path
    _cache: dict[str, Any] = field(default_factory=dict)

    def tiny(self) -> tuple[Path, Any, list, dict]:
        if "tiny" not in self._cache:
            from _monitor_helpers import make_runs, make_tasks, train_bundle

            from earlyeval.model.modeldir import save_model_dir

            tasks = make_tasks(12)
            trajs = make_runs(80, seed=0)
            bundle, _, _ = train_bundle(
                trajs,
                tasks,
                families=("behaviour", "gold", "prior"),
                thresholds={"success": 0.62, "failure": 0.62, "min_halt_step": 1},
            )
            d = save_model_dir(bundle, self.base / "tiny")
            self._cache["tiny"] = (d, bundle, trajs, tasks)
        return self._cache["tiny"]

    def copy_model(self, name: str) -> Path:
        d = self.base / name
        if d.exists():
            shutil.rmtree(d)
        shutil.copytree(self.tiny()[0], d)
        return d


def rehash(mdir: Path) -> None:
    """Recompute every hash of a model dir after editing a file (an attacker or a careless edit can)."""
    from earlyeval.model.modeldir import MANIFEST, _sha, manifest_hash

    m = json.loads((mdir / MANIFEST).read_text())
    m["files"] = {n: _sha((mdir / n).read_bytes()) for n in m["files"]}
    m["content_hash"] = _sha("".join(f"{n}:{h}\n" for n, h in sorted(m["files"].items())).encode())
    m["manifest_hash"] = manifest_hash(m)
    (mdir / MANIFEST).write_text(json.dumps(m, indent=1))


# ------------------------------------------------------------------ 1. Monitor


def _monitor(env: Env, **kw: Any):
    from earlyeval import Monitor

    return Monitor.load(env.tiny()[0], **kw)


def _halts_with_full_context(env: Env) -> int:
    """Precondition: with its task, this model halts (else "no halt" would test nothing)."""
    from earlyeval.features import RunContext

    if "full_halts" not in env._cache:
        mon = _monitor(env)
        _, _, trajs, tasks = env.tiny()
        n = 0
        for t in trajs[:30]:
            mon.start_context(RunContext.of(t, tasks.get(t.task_id)), t.run_id)
            n += any(mon.observe(s).halt for s in t.steps[:-1])
        env._cache["full_halts"] = n
    return env._cache["full_halts"]


def _stopper_halts(env: Env, start: Callable[[Any, Any], None], runs: list) -> tuple[int, list]:
    from earlyeval.integrations import EarlyStopper

    stopper = EarlyStopper(_monitor(env))
    halts, ds = 0, []
    for t in runs:
        start(stopper, t)
        for s in t.steps[:-1]:
            d = stopper.after_step(
                action=s.action,
                observation=s.observation,
                thought=s.thought,
                error=s.error,
                input_tokens=s.input_tokens,
                output_tokens=s.output_tokens,
            )
            ds.append(d)
            if d.halt:
                halts += 1
                break
    return halts, ds


def case_no_start(env: Env):
    assert _halts_with_full_context(env) > 0
    _, _, trajs, _ = env.tiny()

    def start(st, t):  # a stopper that is never started: only its counters are reset
        from earlyeval.live.runstate import RunState

        st.decisions, st.halted, st.n_steps = [], None, 0
        st.monitor.run = RunState()  # a run never started

    h, ds = _stopper_halts(env, start, trajs[:30])
    ok = h == 0 and all(d.context == "none" for d in ds if d.p_success is not None)
    return ("ok" if ok else "silent", f"{h} of 30 runs halted without start()")


def case_task_none(env: Env):
    assert _halts_with_full_context(env) > 0
    _, _, trajs, _ = env.tiny()
    h, ds = _stopper_halts(env, lambda st, t: st.start(task=None, run_id=t.run_id), trajs[:30])
    return (
        "ok" if h == 0 and ds[0].context == "none" else "silent",
        f"{h} of 30 runs halted with task=None",
    )


def case_unknown_task(env: Env):
    _, _, trajs, _ = env.tiny()
    h, ds = _stopper_halts(
        env,
        lambda st, t: st.start(
            task={"task_id": "nobody__knows-1", "prompt": "fix"}, run_id=t.run_id
        ),
        trajs[:30],
    )
    return (
        "ok" if h == 0 and ds[0].context == "partial" else "silent",
        f"{h} of 30 runs halted with an unknown task id (context {ds[0].context})",
    )


def case_garbage_runs(env: Env):
    from earlyeval.integrations import EarlyStopper

    rng = np.random.default_rng(7)
    halts = 0
    for k in range(7):
        st = EarlyStopper(_monitor(env))
        st.start(task=None)
        for i in range(int(rng.integers(3, 30))):
            junk = "".join(chr(int(c)) for c in rng.integers(32, 0x2FF, int(rng.integers(0, 300))))
            d = st.after_step(action=junk, observation=junk[::-1], error=bool(rng.random() < 0.5))
            halts += d.halt
    return ("ok" if halts == 0 else "silent", f"{halts} halts on 7 garbage runs without a task")


def _predictor_case(value: float):
    def case(env: Env):
        mon = _monitor(env)
        _, _, trajs, tasks = env.tiny()
        t = trajs[0]
        mon.start(task=tasks[t.task_id], run_id="x")
        mon.loaded.raw["success"] = lambda x: value
        d = mon.observe(t.steps[0])
        d2 = mon.observe(t.steps[1])
        ok = (
            not d.halt
            and d.p_success is None
            and d.flags
            and "non-finite" in d.flags[-1]
            and not d2.halt
        )
        return ("ok" if ok else "silent", f"predictor {value}: halt={d.halt}, flags={d.flags}")

    return case


def _bad_step_case(make: Callable[[Any], Any], what: str):
    def case(env: Env):
        mon = _monitor(env)
        _, _, trajs, tasks = env.tiny()
        t = trajs[1]
        mon.start(task=tasks[t.task_id], run_id="x")
        mon.observe(t.steps[0])
        d = mon.observe(make(t.steps[1]))
        later = [mon.observe(s) for s in t.steps[2:5]]
        ok = (
            not d.halt
            and d.p_success is None
            and "skipped" in d.reason
            and d.flags
            and all(x.p_success is not None for x in later)
        )
        return (
            "ok" if ok else "silent",
            f"{what}: skipped={('skipped' in d.reason)}, later monitored={all(x.p_success is not None for x in later)}",
        )

    return case


def _bad_usage_case(field_name: str, value: Any):
    def case(env: Env):
        import dataclasses

        mon = _monitor(env)
        _, _, trajs, tasks = env.tiny()
        t = trajs[2]
        mon.start(task=tasks[t.task_id], run_id="x")
        bad = dataclasses.replace(t.steps[0], **{field_name: value})
        d = mon.observe(bad)
        # the usage is dropped as unknown and said so; the outcome features never read usage
        ok = d.p_success is not None and bool(d.flags) and "unknown" in d.flags[0]
        return ("ok" if ok else "silent", f"{field_name}={value!r}: flags={d.flags}")

    return case


def _bad_dict_field(key: str, value: Any, expect: str):
    def case(env: Env):
        mon = _monitor(env)
        _, _, _, tasks = env.tiny()
        mon.start(task=tasks["repo__repo-1"], run_id="x")
        d = mon.observe({"action": "ls", "observation": "a.py", key: value})
        d2 = mon.observe({"action": "cat a.py", "observation": "x = 1"})
        if expect == "skip":
            ok = d.p_success is None and "skipped" in d.reason and d2.p_success is not None
        else:
            ok = d.p_success is not None and d.flags and d2.p_success is not None
        return ("ok" if ok else "silent", f"dict step {key}={value!r}: {d.reason[:80]}")

    return case


# ------------------------------------------------------------------ 2. tau2 run ids


def _other_run(src: Path, dst: Path, tag: str) -> None:
    """A tau2 result file of ``src``'s tasks and layout whose agent said something else (``tag``) in every turn."""
    doc = json.loads(src.read_text())
    for sim in doc.get("simulations") or []:
        for m in sim.get("messages") if isinstance(sim.get("messages"), list) else []:
            if isinstance(m, dict) and isinstance(m.get("content"), str):
                m["content"] += f" ({tag})"
    dst.write_text(json.dumps(doc))


def case_tau2_folder(env: Env):
    from earlyeval.workflows.score import read_runs, run_specs

    d = env.base / "tau2_many"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    for name in (
        "a.json",
        "b.json",
        "c.json",
    ):  # the same task ids in every file: other agents, other runs (their words differ: not copies of one run,
        # which a folder counts once, issue 43)
        _other_run(FIXTURES / "tau2" / "shop_2025.json", d / name, name)
    (d / "nested").mkdir()
    for name in ("run_2026", "run_2026b"):
        (d / "nested" / name).mkdir()
        _other_run(
            FIXTURES / "tau2" / "run_2026" / "results.json",
            d / "nested" / name / "results.json",
            name,
        )
    trajs, skipped, _ = read_runs(run_specs(d, "tau2"))
    one, _, _ = read_runs(run_specs(FIXTURES / "tau2" / "shop_2025.json", "tau2"))
    nested, _, _ = read_runs(run_specs(FIXTURES / "tau2" / "run_2026", "tau2"))
    expect = 3 * len(one) + 2 * len(nested)
    dups = [s for s in skipped if s["field"] == "run_id"]
    ok = len(trajs) == expect and not dups and len({t.run_id for t in trajs}) == len(trajs)
    return (
        "ok" if ok else "silent",
        f"{len(trajs)} of {expect} simulations kept, {len(dups)} 'duplicates'",
    )


# ------------------------------------------------------------------ 3. per-file validation


def _tau2_variant(edit: Callable[[dict], None], name: str, base: Path) -> Path:
    doc = json.loads((FIXTURES / "tau2" / "shop_2025.json").read_text())
    edit(doc)
    p = base / name
    p.write_text(json.dumps(doc))
    return p


def _validation_case(edit: Callable[[dict], None], what: str, field_part: str):
    def case(env: Env):
        from earlyeval.config.catalog import LabelSpec, RunSpec
        from earlyeval.ingest import ingest_run
        from earlyeval.tables.store import read_trajectories, write_trajectories

        d = env.base / f"val_{abs(hash(what))}"
        if d.exists():
            shutil.rmtree(d)
        (d / "runs").mkdir(parents=True)
        shutil.copy(FIXTURES / "tau2" / "solo_no_user.json", d / "runs" / "good.json")
        _tau2_variant(edit, "bad.json", d / "runs")
        spec = RunSpec(
            name="r",
            folder="runs",
            agent="a",
            scaffold="a",
            model="m",
            format="tau2",
            glob="*.json",
            labels=[LabelSpec("inline", "")],
        )
        trajs, rep = ingest_run(spec, "tau2", d)
        # the batch is stored: no UnicodeEncodeError / OverflowError
        write_trajectories(trajs, d / "t.parquet")
        back = read_trajectories(d / "t.parquet")
        named = [
            s for s in rep.skipped if s["file"].endswith("bad.json") and field_part in s["field"]
        ]
        good = [t for t in back if t.meta["source_file"].endswith("good.json")]
        ok = bool(named) and len(good) >= 1 and len(back) == len(trajs)
        return ("named" if ok else "silent", f"{what}: {named[:1] or rep.skipped[:1]}")

    return case


def _sim0_msg(i: int, key: str, value: Any) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        doc["simulations"][0]["messages"][i][key] = value

    return edit


def _sim0_usage(value: Any) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        doc["simulations"][0]["messages"][2]["usage"]["prompt_tokens"] = value

    return edit


def case_score_validates_too(env: Env):
    """score reads through the same boundary: the bad file is a named skip there too, the rest is scored."""
    from earlyeval.workflows.score import read_runs, run_specs

    d = env.base / "score_val"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir()
    shutil.copy(FIXTURES / "tau2" / "solo_no_user.json", d / "good.json")
    _tau2_variant(_sim0_msg(1, "content", "bad \udc80 byte"), "bad.json", d)
    trajs, skipped, _ = read_runs(run_specs(d, "tau2"))
    named = [
        s
        for s in skipped
        if s["file"].endswith("bad.json")
        and ("observation" in s["field"] + s["reason"] or "prompt" in s["field"])
    ]
    ok = bool(named) and any(t.meta["source_file"].endswith("good.json") for t in trajs)
    return ("named" if ok else "silent", f"score: {skipped[:1]}")


# ------------------------------------------------------------------ 4. atomic writes (real processes, kill -9)

_WRITER = r"""
import sys, time
sys.path.insert(0, {tests!r})
from earlyeval.tables.store import write_trajectories
from _monitor_helpers import make_runs
runs = make_runs(int(sys.argv[2]), seed=int(sys.argv[3]))
for t in runs:
    for s in t.steps:
        s.observation = s.observation * 40
print("ready", flush=True)
while True:
    write_trajectories(runs, __import__("pathlib").Path(sys.argv[1]))
"""

_SAVER = r"""
import sys
sys.path.insert(0, {tests!r})
from earlyeval.model.modeldir import load_model_dir, save_model_dir
b = load_model_dir(sys.argv[1], probe_boosters=False)
print("ready", flush=True)
while True:
    save_model_dir(b, sys.argv[2])
"""


def _spawn(code: str, *args: str) -> subprocess.Popen:
    p = subprocess.Popen(
        [sys.executable, "-c", code.format(tests=str(HERE)), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "EARLYEVAL_BOOSTER_PROBE": "0"},
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    return p


def _kill(p: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        p.send_signal(signal.SIGKILL)
    p.wait(timeout=30)


def case_kill_parquet_write(env: Env):
    from _monitor_helpers import make_runs

    from earlyeval.tables.store import read_trajectories, write_trajectories

    path = env.base / "atomic" / "trajectories.parquet"
    path.parent.mkdir(exist_ok=True)
    prev = make_runs(40, seed=1)
    write_trajectories(prev, path)
    torn = 0
    rng = np.random.default_rng(3)
    for k in range(4):
        p = _spawn(_WRITER, str(path), "200", str(10 + k))
        time.sleep(float(rng.uniform(0.05, 1.5)))
        _kill(p)
        try:
            back = read_trajectories(path)
            torn += len(back) not in (40, 200)
        except Exception:
            torn += 1
    left = [q.name for q in path.parent.iterdir() if q.name != path.name]
    return (
        "ok" if torn == 0 else "silent",
        f"4 kills mid-write: {torn} unreadable/torn; temp files left: {len(left)}",
    )


def case_concurrent_parquet(env: Env):
    from _monitor_helpers import make_runs

    from earlyeval.tables.store import read_trajectories, write_trajectories

    path = env.base / "atomic2" / "trajectories.parquet"
    path.parent.mkdir(exist_ok=True)
    write_trajectories(make_runs(30, seed=2), path)
    ws = [_spawn(_WRITER, str(path), str(n), str(s)) for n, s in ((60, 4), (90, 5))]
    torn = reads = 0
    errs: list[str] = []
    t_end = time.time() + 3
    try:
        while time.time() < t_end:
            try:
                n = len(read_trajectories(path))
                torn += n not in (30, 60, 90)
            except Exception as e:
                torn += 1
                errs.append(f"{type(e).__name__}: {str(e)[:80]}")
            reads += 1
    finally:
        for w in ws:
            _kill(w)
    return (
        "ok" if torn == 0 and reads > 0 else "silent",
        f"{reads} reads during two concurrent writers: {torn} torn {errs[:2]}",
    )


def case_kill_model_save(env: Env):
    from earlyeval.model.modeldir import load_model_dir

    src = env.tiny()[0]
    target = env.base / "atomic_model" / "m"
    target.parent.mkdir(exist_ok=True)
    if not target.exists():
        shutil.copytree(src, target)
    bad = 0
    rng = np.random.default_rng(4)
    for _ in range(4):
        p = _spawn(_SAVER, str(src), str(target))
        time.sleep(float(rng.uniform(0.02, 0.6)))
        _kill(p)
        try:
            load_model_dir(target, probe_boosters=False)
        except Exception:
            bad += 1
    return ("ok" if bad == 0 else "silent", f"4 kills mid-save: {bad} unloadable model dirs")


def case_racing_saves(env: Env):
    from earlyeval.model.modeldir import load_model_dir

    src = env.tiny()[0]
    target = env.base / "atomic_model2" / "m"
    target.parent.mkdir(exist_ok=True)
    if not target.exists():
        shutil.copytree(src, target)
    ws = [_spawn(_SAVER, str(src), str(target)) for _ in range(2)]
    bad = loads = 0
    t_end = time.time() + 3
    try:
        while time.time() < t_end:
            try:
                load_model_dir(target, probe_boosters=False)
            except Exception:
                bad += 1
            loads += 1
    finally:
        for w in ws:
            _kill(w)
    return (
        "ok" if bad == 0 and loads > 0 else "silent",
        f"{loads} loads during two racing saves: {bad} failed",
    )


# ------------------------------------------------------------------ 5. loader

_LOAD_CHILD = r"""
import sys, json
from earlyeval.core.errors import ModelDirError
from earlyeval.model.modeldir import load_model_dir
out = []
for d in sys.argv[1:]:
    try:
        b = load_model_dir(d)
        out.append(["loaded", sorted(b.extra_errors)])
    except ModelDirError as e:
        out.append(["named", e.field])
    except BaseException as e:
        out.append(["raw", type(e).__name__ + ": " + str(e)[:100]])
print(json.dumps(out))
"""


def _load_in_child(dirs: list[Path], probe: bool = True) -> list[list[Any]] | None:
    """Load each dir in one child process (an abort kills the child, not us); None when the child died.
    ``probe=False``: the structural check alone stands between LightGBM and the text (any abort shows)."""
    env = {**os.environ, "EARLYEVAL_BOOSTER_PROBE": "1" if probe else "0"}
    r = subprocess.run(
        [sys.executable, "-c", _LOAD_CHILD, *map(str, dirs)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    if r.returncode != 0:
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def _booster_line_variants(env: Env) -> list[tuple[str, Path]]:
    """One model dir per deleted line of booster_success.txt (header lines and every line of tree 1), rehashed."""
    if "line_variants" in env._cache:
        return env._cache["line_variants"]
    src = env.tiny()[0]
    lines = (src / "booster_success.txt").read_text().split("\n")
    t1 = lines.index("Tree=1")
    # 9 header lines, then "Tree=1" and its 18 lines
    cands = list(range(1, 10)) + list(range(t1, t1 + 19))
    out = []
    for i in cands:
        d = env.base / "lines" / f"v{i}"
        if d.exists():
            shutil.rmtree(d)
        shutil.copytree(src, d)
        (d / "booster_success.txt").write_text("\n".join(lines[:i] + lines[i + 1 :]))
        rehash(d)
        out.append((lines[i][:24] or "<blank>", d))
    env._cache["line_variants"] = out
    return out


def _line_case(k: int):
    def case(env: Env):
        variants = _booster_line_variants(env)
        if k >= len(variants):
            return ("ok", "no such line")
        if "line_results" not in env._cache:
            env._cache["line_results"] = _load_in_child([d for _, d in variants], probe=False)
        res = env._cache["line_results"]
        if res is None:
            raise RuntimeError("the loading child process died (LightGBM abort?)")
        kind, detail = res[k]
        line = variants[k][0]
        if kind == "named":
            return ("named", f"line {line!r} deleted: ModelDirError {detail}")
        if (
            kind == "loaded"
        ):  # an optional line (split_gain, tree_sizes, ...): LightGBM reads it fine
            return ("ok", f"line {line!r} deleted: still a valid model, loaded")
        return ("silent", f"line {line!r} deleted: raw {detail}")

    return case


def case_budget_booster_line(env: Env):
    """A corrupt booster inside extra_budget.json: refused by the check, and only the budget part is left out."""
    d = env.copy_model("budget_bad")
    text = (d / "booster_success.txt").read_text()
    lines = text.split("\n")
    i = lines.index("Tree=1") + 3  # a line of tree 1
    bad = "\n".join(lines[:i] + lines[i + 1 :])
    (d / "extra_budget.json").write_text(json.dumps({"dimensions": {"steps": {"boosters": [bad]}}}))
    m = json.loads((d / "manifest.json").read_text())
    m["files"]["extra_budget.json"] = ""
    (d / "manifest.json").write_text(json.dumps(m))
    rehash(d)
    res = _load_in_child([d])
    if res is None:
        raise RuntimeError("the loading child process died")
    kind, detail = res[0]
    ok = kind == "loaded" and detail == ["budget"]
    return (
        "named" if ok else "silent",
        f"corrupt budget booster: {kind} {detail} (budget left out, named in extra_errors)",
    )


_PROBE_CHILD = r"""
import sys, json
import earlyeval.model.modeldir as md
import earlyeval.model.modelfiles as files
from earlyeval.core.errors import ModelDirError
files.check_model_text = lambda text, n=None: text  # the structural check switched off: the probe alone
try:
    md.load_model_dir(sys.argv[1], probe_boosters=True)
    print(json.dumps(["loaded", ""]))
except ModelDirError as e:
    print(json.dumps(["named", e.reason[:120]]))
"""


def case_probe_alone(env: Env):
    """The child-process probe on its own refuses a booster that makes LightGBM abort (tree_sizes kept)."""
    d = env.copy_model("probe_alone")
    lines = (d / "booster_success.txt").read_text().split("\n")
    i = lines.index("Tree=1") + 2  # split_feature of tree 1: LightGBM aborts on this one
    (d / "booster_success.txt").write_text("\n".join(lines[:i] + lines[i + 1 :]))
    rehash(d)
    r = subprocess.run(
        [sys.executable, "-c", _PROBE_CHILD, str(d)], capture_output=True, text=True, timeout=300
    )
    if r.returncode != 0:
        raise RuntimeError(f"the loading process died (rc {r.returncode})")
    kind, why = json.loads(r.stdout.strip().splitlines()[-1])
    return (
        "named" if kind == "named" and "child process" in why else "silent",
        f"probe alone: {kind}: {why}",
    )


def _manifest_case(edit: Callable[[dict, Path], None], what: str, field_part: str):
    def case(env: Env):
        from earlyeval.core.errors import ModelDirError
        from earlyeval.model.modeldir import load_model_dir

        d = env.copy_model(f"mf_{abs(hash(what))}")
        m = json.loads((d / "manifest.json").read_text())
        edit(m, d)
        try:
            load_model_dir(d)
        except ModelDirError as e:
            return (
                "named" if field_part in f"{e.field} {e.reason}" else "silent",
                f"{what}: {e.field}: {e.reason[:70]}",
            )
        return ("silent", f"{what}: loaded")

    return case


def _write_manifest(m: dict, d: Path, fix_hash: bool = True) -> None:
    from earlyeval.model.modeldir import manifest_hash

    if fix_hash:
        m["manifest_hash"] = manifest_hash(m)
    (d / "manifest.json").write_text(json.dumps(m))


def _deep(m: dict, d: Path) -> None:
    (d / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)


def _families_str(m: dict, d: Path) -> None:
    m["families"] = "behaviour,gold"
    _write_manifest(m, d)


def _soon(m: dict, d: Path) -> None:
    m["thresholds"]["min_halt_step"] = "soon"
    _write_manifest(m, d)
    th = json.loads((d / "thresholds.json").read_text())
    th["min_halt_step"] = "soon"
    (d / "thresholds.json").write_text(json.dumps(th))
    rehash(d)


def _no_hash(m: dict, d: Path) -> None:
    m.pop("manifest_hash")
    m["thresholds"]["failure"] = 0.01  # an edit the missing hash would hide
    (d / "manifest.json").write_text(json.dumps(m))


def _dev_zero(m: dict, d: Path) -> None:
    (d / "manifest.json").unlink()
    os.symlink("/dev/zero", d / "manifest.json")


def _symlinked_file(m: dict, d: Path) -> None:
    (d / "model.json").rename(d / "elsewhere.json")
    os.symlink(d / "elsewhere.json", d / "model.json")


def _fifo(m: dict, d: Path) -> None:
    (d / "thresholds.json").unlink()
    os.mkfifo(d / "thresholds.json")


def _huge(m: dict, d: Path) -> None:
    from earlyeval.model import modeldir

    with open(d / "family_prior.json", "ab") as f:
        f.truncate(modeldir.MAX_FILE_BYTES + 1)  # sparse: no real disk use


def _families_entry_bad(m: dict, d: Path) -> None:
    m["families"] = [{"name": "behaviour", "n_features": "73"}]
    _write_manifest(m, d)


def _files_not_dict(m: dict, d: Path) -> None:
    m["files"] = ["model.json"]
    _write_manifest(m, d)


def _threshold_nan(m: dict, d: Path) -> None:
    m["thresholds"]["success"] = "NaN"
    _write_manifest(m, d)


# ------------------------------------------------------------------ 6. smaller items


def case_dangling_symlink(env: Env):
    from earlyeval.config.catalog import LabelSpec, RunSpec
    from earlyeval.ingest import ingest_run

    d = env.base / "dangling" / "runs"
    if d.parent.exists():
        shutil.rmtree(d.parent)
    d.mkdir(parents=True)
    shutil.copy(FIXTURES / "tau2" / "solo_no_user.json", d / "good.json")
    os.symlink(d / "gone.json", d / "link.json")
    spec = RunSpec(
        name="r",
        folder="runs",
        agent="a",
        scaffold="a",
        model="m",
        format="tau2",
        glob="*.json",
        labels=[LabelSpec("inline", "")],
    )
    trajs, rep = ingest_run(spec, "tau2", d.parent)
    hit = [s for s in rep.skipped if s["file"].endswith("link.json") and "dangling" in s["reason"]]
    return ("named" if hit and trajs else "silent", f"dangling symlink: {hit[:1]}")


def case_not_in_label_list(env: Env):
    from earlyeval.report.score_table import score_table
    from earlyeval.workflows.export import export_runs
    from earlyeval.workflows.score import score_runs
    from earlyeval.workflows.score_options import ScoreOptions

    mdir, _, _, tasks = env.tiny()
    from _monitor_helpers import make_runs

    runs = make_runs(8, seed=21, agents=("agent-a",))
    d = env.base / "labels_runs"
    if d.exists():
        shutil.rmtree(d)
    export_runs(runs, d, fmt="atif")
    listed = sorted({t.task_id for t in runs})[:2]
    (d / "report.json").write_text(
        json.dumps({"resolved_ids": listed[:1], "unresolved_ids": listed[1:]})
    )
    p = score_runs(
        mdir,
        d,
        ScoreOptions("atif", out=env.base / "labels_out", labels="sb-cli:report.json"),
        tasks=tasks,
        progress=False,
    )
    rep = json.loads(p["score"].read_text())
    n_out = sum(t.task_id not in listed for t in runs)
    table = score_table(rep)
    ok = len(rep["not_in_label_list"]) == n_out > 0 and "in no label list" in table
    return (
        "named" if ok else "silent",
        f"{len(rep['not_in_label_list'])} of {n_out} unlisted runs flagged",
    )


def _atif_reward_case(writer: Callable[[Path], None], what: str):
    def case(env: Env):
        from earlyeval.config.catalog import LabelSpec, RunSpec
        from earlyeval.ingest import ingest_run

        d = env.base / f"atif_{abs(hash(what))}"
        if d.exists():
            shutil.rmtree(d)
        shutil.copytree(FIXTURES / "atif", d / "runs")
        trials = sorted({p.parent.parent for p in (d / "runs").rglob("agent/trajectory.json")})
        victim = trials[0]
        for f in ("result.json", "result.json.gz"):
            (victim / f).unlink(missing_ok=True)
        shutil.rmtree(victim / "verifier", ignore_errors=True)
        writer(victim)
        spec = RunSpec(
            name="r",
            folder="runs",
            agent="a",
            scaffold="a",
            model="m",
            format="atif",
            glob="**/*",
            labels=[LabelSpec("inline", "")],
        )
        trajs, rep = ingest_run(spec, "atif", d)
        hit = [s for s in rep.skipped if str(victim) in s["file"]]
        kept = [t for t in trajs if str(victim) in t.meta.get("source_file", "")]
        return (
            "named" if hit and not kept else "silent",
            f"{what}: {hit[:1] or [t.outcome for t in kept]}",
        )

    return case


def _reward_txt(text: str) -> Callable[[Path], None]:
    def w(trial: Path) -> None:
        (trial / "verifier").mkdir(exist_ok=True)
        (trial / "verifier" / "reward.txt").write_text(text)

    return w


def _reward_json(value: Any) -> Callable[[Path], None]:
    def w(trial: Path) -> None:
        (trial / "verifier").mkdir(exist_ok=True)
        (trial / "verifier" / "reward.json").write_text(
            json.dumps({"reward": value}) if not isinstance(value, str) else value
        )

    return w


def case_atif_symlink_outside(env: Env):
    from earlyeval.config.catalog import LabelSpec, RunSpec
    from earlyeval.ingest import ingest_run

    d = env.base / "atif_link"
    if d.exists():
        shutil.rmtree(d)
    shutil.copytree(FIXTURES / "atif", d / "runs")
    trials = sorted({p.parent.parent for p in (d / "runs").rglob("agent/trajectory.json")})
    victim = trials[0]
    outside = d / "outside.json"
    shutil.move(victim / "agent" / "trajectory.json", outside)
    os.symlink(outside, victim / "agent" / "trajectory.json")
    spec = RunSpec(
        name="r",
        folder="runs",
        agent="a",
        scaffold="a",
        model="m",
        format="atif",
        glob="**/*",
        labels=[LabelSpec("inline", "")],
    )
    trajs, rep = ingest_run(spec, "atif", d)
    hit = [s for s in rep.skipped if "outside the trial" in s["reason"]]
    return ("named" if hit else "silent", f"symlinked trajectory.json outside its trial: {hit[:1]}")


def case_gz_bomb(env: Env):
    from earlyeval.config.catalog import LabelSpec, RunSpec
    from earlyeval.ingest import ingest_run

    d = env.base / "bomb" / "runs"
    if d.parent.exists():
        shutil.rmtree(d.parent)
    d.mkdir(parents=True)
    shutil.copy(FIXTURES / "tau2" / "solo_no_user.json", d / "good.json")
    with gzip.open(d / "bomb.json.gz", "wb", compresslevel=9) as f:  # 64 MB of spaces in ~64 KB
        chunk = b" " * (1 << 20)
        for _ in range(64):
            f.write(chunk)
    spec = RunSpec(
        name="r",
        folder="runs",
        agent="a",
        scaffold="a",
        model="m",
        format="tau2",
        glob="*.json*",
        labels=[LabelSpec("inline", "")],
    )
    old = os.environ.get("EARLYEVAL_MAX_INPUT_BYTES")
    os.environ["EARLYEVAL_MAX_INPUT_BYTES"] = str(8 << 20)
    try:
        trajs, rep = ingest_run(spec, "tau2", d.parent)
    finally:
        if old is None:
            os.environ.pop("EARLYEVAL_MAX_INPUT_BYTES")
        else:
            os.environ["EARLYEVAL_MAX_INPUT_BYTES"] = old
    hit = [
        s
        for s in rep.skipped
        if s["file"].endswith("bomb.json.gz") and "EARLYEVAL_MAX_INPUT_BYTES" in s["reason"]
    ]
    return (
        "named" if hit and trajs else "silent",
        f"gz bomb (64 MB of 64 KB, limit 8 MB): {hit[:1]}",
    )


def _cli(args: list[str], cwd: Path) -> tuple[int, str]:
    r = subprocess.run(
        [sys.executable, "-m", "earlyeval.app.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "EARLYEVAL_HOME": str(cwd)},
    )
    return r.returncode, (r.stderr or r.stdout)[-300:]


def _bench_escape_case(verb: list[str]):
    def case(env: Env):
        ws = env.base / "ws" / "inner"
        ws.mkdir(parents=True, exist_ok=True)
        before = {p.name for p in env.base.iterdir()}
        rc, msg = _cli([*verb, "--bench", "../.."], ws)
        after = {p.name for p in env.base.iterdir()}
        created = after - before
        return (
            "named" if rc != 0 and not created and "bench" in msg.lower() else "silent",
            f"{' '.join(verb)} --bench ../..: rc {rc}, created outside {sorted(created)}; {msg.strip()[-90:]}",
        )

    return case


def case_score_missing_runs(env: Env):
    rc, msg = _cli(
        [
            "score",
            "--model",
            str(env.tiny()[0]),
            "--runs",
            str(env.base / "no_such_folder"),
            "--format",
            "atif",
        ],
        env.base,
    )
    return (
        "named" if rc != 0 and "no such" in msg else "silent",
        f"score --runs <missing>: rc {rc}",
    )


def case_o1_features_equal(env: Env):
    """The O(1) counters equal the O(n) expressions they replaced, bit for bit, on every step of a
    new-file-every-step run (and on the tiny model's real-looking runs)."""
    from earlyeval.features import RunContext
    from earlyeval.features.behaviour import BehaviourFamily
    from earlyeval.features.gold import GoldFamily
    from earlyeval.workflows.benchmark_runs import new_file_run

    _, _, trajs, tasks = env.tiny()
    runs = [new_file_run(trajs[0], 400)] + trajs[:20]
    beh, gold = BehaviourFamily(), GoldFamily()
    j = beh.names.index("max_edits_same_file")
    k = gold.names.index("gold_idents_jaccard")
    bad = 0
    for t in runs:
        ctx = RunContext.of(t, tasks.get(t.task_id))
        sb, sg = beh.start(ctx), gold.start(ctx)
        for s in t.steps:
            beh.update(sb, s)
            gold.update(sg, s)
            vb, vg = beh.values(sb), gold.values(sg)
            ref_b = float(max(sb.files_edited.values())) if sb.files_edited else 0.0
            g = sg.gold
            ref_g = (
                len(sg.edit_idents) / len(g.added_idents | sg.edit_idents_all)
                if g is not None and (g.added_idents or sg.edit_idents_all)
                else float("nan")
            )
            bad += vb[j].tobytes() != np.float64(ref_b).tobytes()
            bad += g is not None and vg[k].tobytes() != np.float64(ref_g).tobytes()
    return ("ok" if bad == 0 else "silent", f"{bad} feature values differ from the O(n) formulas")


def case_hash_determinism(env: Env):
    from _monitor_helpers import make_runs, make_tasks, train_bundle

    from earlyeval.model.modeldir import save_model_dir

    tasks = make_tasks(12)
    hs = []
    for k in range(2):
        b, _, _ = train_bundle(make_runs(60, seed=5), tasks, families=("behaviour", "gold"))
        d = save_model_dir(b, env.base / f"det{k}")
        m = json.loads((d / "manifest.json").read_text())
        hs.append((m["content_hash"], m["manifest_hash"]))
    return (
        "ok" if hs[0] == hs[1] else "silent",
        f"two identical trainings: {hs[0][0][:12]} / {hs[1][0][:12]}",
    )


# ------------------------------------------------------------------ the registry


def _surrogate_obs(doc: dict) -> None:
    doc["simulations"][0]["messages"][3]["content"] = "order \udc80 B-17"


CASES: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    ("1 monitor", "no start()", case_no_start),
    ("1 monitor", "start(task=None)", case_task_none),
    ("1 monitor", "unknown task id, no gold patch", case_unknown_task),
    ("1 monitor", "garbage runs without task", case_garbage_runs),
    ("1 monitor", "predictor +inf", _predictor_case(float("inf"))),
    ("1 monitor", "predictor -inf", _predictor_case(float("-inf"))),
    ("1 monitor", "predictor NaN", _predictor_case(float("nan"))),
    (
        "1 monitor",
        "observation is an int",
        _bad_step_case(
            lambda s: __import__("dataclasses").replace(s, observation=123), "observation=123"
        ),
    ),
    (
        "1 monitor",
        "observation is bytes",
        _bad_step_case(
            lambda s: __import__("dataclasses").replace(s, observation=b"x"), "observation=b'x'"
        ),
    ),
    (
        "1 monitor",
        "action is a dict",
        _bad_step_case(
            lambda s: __import__("dataclasses").replace(s, action={"a": 1}), "action={}"
        ),
    ),
    (
        "1 monitor",
        "actions not a list",
        _bad_step_case(
            lambda s: __import__("dataclasses").replace(s, actions="ls"), "actions='ls'"
        ),
    ),
    ("1 monitor", "step is an int", _bad_step_case(lambda s: 12345, "step=12345")),
    ("1 monitor", "step is None", _bad_step_case(lambda s: None, "step=None")),
    ("1 monitor", "input_tokens NaN", _bad_usage_case("input_tokens", float("nan"))),
    ("1 monitor", "input_tokens negative", _bad_usage_case("input_tokens", -5)),
    ("1 monitor", "input_tokens 1e30", _bad_usage_case("input_tokens", 10**30)),
    ("1 monitor", "input_tokens inf", _bad_usage_case("input_tokens", float("inf"))),
    ("1 monitor", "input_tokens a string", _bad_usage_case("input_tokens", "many")),
    ("1 monitor", "output_tokens 1.5", _bad_usage_case("output_tokens", 1.5)),
    ("1 monitor", "cost NaN", _bad_usage_case("cost_usd", float("nan"))),
    ("1 monitor", "cost negative", _bad_usage_case("cost_usd", -1.0)),
    ("1 monitor", "error 'yes'", _bad_usage_case("error", "yes")),
    ("1 monitor", "dict step: observation a list", _bad_dict_field("observation", ["x"], "skip")),
    ("1 monitor", "dict step: thought an int", _bad_dict_field("thought", 7, "skip")),
    ("1 monitor", "dict step: input_tokens 1e30", _bad_dict_field("input_tokens", 1e30, "unknown")),
    ("1 monitor", "dict step: cost 'free'", _bad_dict_field("cost_usd", "free", "unknown")),
    ("2 tau2 ids", "folder of result files with the same task ids", case_tau2_folder),
    (
        "3 validation",
        "lone surrogate in a tool result",
        _validation_case(_surrogate_obs, "surrogate in observation", "observation"),
    ),
    (
        "3 validation",
        "lone surrogate in the first user message",
        _validation_case(_sim0_msg(1, "content", "refund \udcff now"), "surrogate in prompt", ""),
    ),
    (
        "3 validation",
        "lone surrogate in assistant text",
        _validation_case(_sim0_msg(2, "content", "look \ud800"), "surrogate in thought", ""),
    ),
    (
        "3 validation",
        "prompt_tokens 1e30",
        _validation_case(_sim0_usage(10**30), "tokens 1e30", "input_tokens"),
    ),
    (
        "3 validation",
        "prompt_tokens 2**63",
        _validation_case(_sim0_usage(2**63), "tokens 2**63", "input_tokens"),
    ),
    (
        "3 validation",
        "prompt_tokens negative",
        _validation_case(_sim0_usage(-3), "tokens -3", "input_tokens"),
    ),
    ("3 validation", "score: surrogate file", case_score_validates_too),
    ("4 atomic", "kill -9 during parquet write (x4)", case_kill_parquet_write),
    ("4 atomic", "readers during two concurrent writers", case_concurrent_parquet),
    ("4 atomic", "kill -9 during model save (x4)", case_kill_model_save),
    ("4 atomic", "loads during two racing saves", case_racing_saves),
    *[("5 loader", f"booster line {k} deleted, rehashed", _line_case(k)) for k in range(28)],
    ("5 loader", "budget booster line deleted (budget=True)", case_budget_booster_line),
    ("5 loader", "probe alone refuses an aborting booster", case_probe_alone),
    ("5 loader", "100k-deep manifest", _manifest_case(_deep, "deep manifest", "nested too deeply")),
    ("5 loader", "families as a string", _manifest_case(_families_str, "families str", "families")),
    (
        "5 loader",
        "families entry n_features a string",
        _manifest_case(_families_entry_bad, "families n_features", "families"),
    ),
    ("5 loader", "files as a list", _manifest_case(_files_not_dict, "files list", "files")),
    ("5 loader", "min_halt_step 'soon'", _manifest_case(_soon, "soon", "min_halt_step")),
    (
        "5 loader",
        "threshold 'NaN'",
        _manifest_case(_threshold_nan, "nan threshold", "thresholds.success"),
    ),
    (
        "5 loader",
        "manifest_hash deleted",
        _manifest_case(_no_hash, "no manifest_hash", "manifest_hash"),
    ),
    (
        "5 loader",
        "manifest.json -> /dev/zero",
        _manifest_case(_dev_zero, "dev zero", "regular file"),
    ),
    (
        "5 loader",
        "model.json a symlink",
        _manifest_case(_symlinked_file, "symlinked file", "regular file"),
    ),
    ("5 loader", "thresholds.json a FIFO", _manifest_case(_fifo, "fifo", "regular file")),
    ("5 loader", "file over the size bound", _manifest_case(_huge, "huge", "bytes")),
    ("6 small", "dangling symlink run file", case_dangling_symlink),
    ("6 small", "runs in no label list", case_not_in_label_list),
    (
        "6 small",
        "ATIF reward inf (reward.json)",
        _atif_reward_case(_reward_json('{"reward": Infinity}'), "reward inf"),
    ),
    ("6 small", "ATIF reward 2.0", _atif_reward_case(_reward_json(2.0), "reward 2.0")),
    ("6 small", "ATIF reward -0.5", _atif_reward_case(_reward_json(-0.5), "reward -0.5")),
    ("6 small", "ATIF reward.txt '1_0'", _atif_reward_case(_reward_txt("1_0"), "reward 1_0")),
    ("6 small", "ATIF reward.txt 'inf'", _atif_reward_case(_reward_txt("inf"), "reward txt inf")),
    ("6 small", "ATIF reward.txt 'nan'", _atif_reward_case(_reward_txt("nan"), "reward txt nan")),
    ("6 small", "symlinked ATIF trajectory.json outside its trial", case_atif_symlink_outside),
    ("6 small", ".gz that expands past the size limit", case_gz_bomb),
    ("6 small", "--bench ../.. (bench)", _bench_escape_case(["bench"])),
    ("6 small", "--bench ../.. (ingest)", _bench_escape_case(["ingest"])),
    ("6 small", "--bench ../.. (export)", _bench_escape_case(["export"])),
    ("6 small", "score --runs <missing>", case_score_missing_runs),
    ("6 small", "O(1) counters equal the O(n) formulas", case_o1_features_equal),
    ("6 small", "two identical trainings, one content hash", case_hash_determinism),
]


# the class of each finding's cases in the table by class (tools/fault_summary.py)
CLASS_OF_FINDING = {
    "1 monitor": "monitor inputs",
    "2 tau2 ids": "run files",
    "3 validation": "run files",
    "4 atomic": "machine faults",
    "5 loader": "model dirs",
}
CLASS_OF_CASE = {
    "--bench ../.. (bench)": "verbs and options",
    "--bench ../.. (ingest)": "verbs and options",
    "--bench ../.. (export)": "verbs and options",
    "score --runs <missing>": "verbs and options",
    "O(1) counters equal the O(n) formulas": "determinism",
    "two identical trainings, one content hash": "determinism",
}


def class_of(finding: str, name: str) -> str:
    return CLASS_OF_CASE.get(name) or CLASS_OF_FINDING.get(finding) or "run files"


KINDS = ("ok", "named", "silent", "absent")


def run_case(env: Env, fn: Callable[[Env], tuple[str, str]]) -> tuple[str, str]:
    """("ok" | "named" | "silent" | "crash" | "absent", detail); "absent": the machine cannot stage the fault."""
    try:
        kind, detail = fn(env)
    except Exception as e:  # noqa: BLE001 - a crash is what this counts
        return "crash", f"{type(e).__name__}: {str(e)[:200]}"
    assert kind in KINDS, kind
    return kind, detail


def new_env() -> Env:
    return Env(Path(tempfile.mkdtemp(prefix="earlyeval-faults-")))

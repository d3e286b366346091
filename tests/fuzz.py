"""Property-based fault classes (hypothesis): catalogs, run files of every format, model directories, Monitor
steps and tasks, environment variables, dates, warm-start outcomes, threshold-selection settings.

A class draws a fresh sample each run (no fixed seed unless ``EARLYEVAL_FUZZ_SEED`` is set; the seed is printed
on failure) and checks every example against an oracle written from the documented meaning, not from the
validator under test: an example ends "ok" (accepted, and its meaning kept), "named" (refused with an error or
a flag naming the file and field), "silent" (accepted with another meaning, or dropped without a word) or, when
an exception escapes, "crash".  The gate (tests/test_faults.py): no crash and no silent outcome.
``tools/fault_summary.py`` counts the examples per class.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import os
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from faults import FIXTURES, Env, rehash
from faults24 import _env
from hypothesis import strategies as st

# ------------------------------------------------------------------ values

WEIRD_STRINGS = [
    "false",
    "true",
    "none",
    "None",
    "2024-13-45",
    "9999-99-99",
    "2024-02-30",
    "/etc/*",
    "../../x",
    "**a",
    "",
    " ",
    "tau2",
    "subprocess:Popen",
    "os:system",
    "1e999",
    "nan",
    "-1",
    "0",
    "\x00",
    "\udc80",
]
SCALARS = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(WEIRD_STRINGS),
    st.dates(),
    st.datetimes(),
)
VALUES = st.recursive(
    SCALARS,
    lambda ch: (
        st.lists(ch, max_size=3) | st.dictionaries(st.text(min_size=1, max_size=6), ch, max_size=3)
    ),
    max_leaves=6,
)
JSONISH = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=16),
        st.sampled_from(WEIRD_STRINGS),
    ),
    lambda ch: st.lists(ch, max_size=3) | st.dictionaries(st.text(max_size=6), ch, max_size=3),
    max_leaves=6,
)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _real_date(v: Any) -> str | None:
    """The ISO date a value means, if it is one (a TOML date or a real YYYY-MM-DD string)."""
    if isinstance(v, dt.date) and not isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
        try:
            dt.date.fromisoformat(v)
            return v
        except ValueError:
            return None
    return None


# ------------------------------------------------------------------ TOML (tomllib reads, nothing writes)


def toml_value(v: Any, depth: int = 0) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return (
            "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        )
    if isinstance(v, dt.datetime):
        return v.isoformat()
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, str):
        # JSON's escapes are TOML's (a lone surrogate makes invalid TOML: a named error)
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x, depth + 1) for x in v) + "]"
    if isinstance(v, dict):
        return (
            "{"
            + ", ".join(f"{json.dumps(k)} = {toml_value(x, depth + 1)}" for k, x in v.items())
            + "}"
        )
    raise TypeError(type(v))


def toml_doc(doc: dict[str, Any]) -> str:
    return "".join(f"{json.dumps(k)} = {toml_value(v)}\n" for k, v in doc.items())


# ------------------------------------------------------------------ catalogs

BASE_CATALOG: dict[str, Any] = {
    "bench": "fz",
    "families": ["behaviour"],
    "settings": {
        "min_steps": 3,
        "holdout_min_runs": 10,
        "target_accuracy": 0.95,
        "confidence": 0.9,
        "constraint": "recall",
        "inner_holdout": "agent",
    },
    "runs": [
        {
            "folder": "runs/a",
            "agent": "a",
            "format": "tau2",
            "glob": "*.json",
            "date": "2024-06-01",
            "small": False,
            "public_submissions": ["s1"],
            "price": {"source": "per-step", "usd_per_step": 0.01},
            "labels": [{"format": "inline"}],
            "scaffold": "sc",
            "model": "m",
            "split": "x",
        }
    ],
}
SETTINGS_KEYS = [
    "min_steps",
    "holdout_min_runs",
    "target_accuracy",
    "confidence",
    "constraint",
    "inner_holdout",
    "twin",
    "model_families",
    "monotone",
    "peer_prior",
    "min_step",
]
RUN_KEYS = [
    "folder",
    "agent",
    "format",
    "glob",
    "date",
    "small",
    "public_submissions",
    "price",
    "labels",
    "scaffold",
    "model",
    "split",
    "name",
    "prior_match",
    "success_min_reward",
    "smal",
    "options",
]
TARGETS = (
    [
        ("bench",),
        ("families",),
        ("settings",),
        ("runs",),
        ("defaults",),
        ("priors",),
        ("tasks",),
        ("extra_top",),
    ]
    + [("settings", k) for k in SETTINGS_KEYS]
    + [("runs", 0, k) for k in RUN_KEYS]
    + [("runs", 0, "labels", 0, k) for k in ("format", "path", "success_min_reward")]
    + [("runs", 0, "price", k) for k in ("usd_per_step", "source")]
    + [("defaults", k) for k in ("small", "date", "glob")]
)

DOCUMENTED_RUN_KEYS = {
    "name",
    "folder",
    "agent",
    "scaffold",
    "model",
    "format",
    "split",
    "glob",
    "labels",
    "public_submissions",
    "small",
    "price",
    "date",
    "prior_match",
    "success_min_reward",
    "reward_key",
    "trailing_commas",
    "domain",
    "user_model",
    "options",
}


def catalog_examples() -> Any:
    op = st.sampled_from(["set", "set", "set", "delete"])
    return st.tuples(
        st.sampled_from(TARGETS), op, VALUES | st.integers(0, 400).map(lambda n: "[" * n + "]" * n)
    )


def _apply(doc: dict[str, Any], path: tuple, op: str, value: Any) -> None:
    node: Any = doc
    for p in path[:-1]:
        if isinstance(node, dict):
            node = node.setdefault(p, {} if not isinstance(p, int) else [])
        elif isinstance(node, list) and isinstance(p, int) and p < len(node):
            node = node[p]
        else:
            return
    last = path[-1]
    if isinstance(node, dict):
        if op == "delete":
            node.pop(last, None)
        else:
            node[last] = value
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        if op == "delete":
            node.pop(last)
        else:
            node[last] = value


def _run_meaning(raw: dict[str, Any], spec: Any) -> list[str]:
    """What an accepted run entry must mean: the value written, with its type (the catalog's documented keys)."""
    bad = []
    for k in ("folder", "agent", "format"):
        if not (isinstance(raw.get(k), str) and raw[k].strip() and getattr(spec, k) == raw[k]):
            bad.append(k)
    for k in ("model", "split"):
        if k in raw and not (isinstance(raw[k], str) and getattr(spec, k) == raw[k]):
            bad.append(k)
    if "small" in raw and not (isinstance(raw["small"], bool) and spec.small is raw["small"]):
        bad.append("small")
    if "public_submissions" in raw and not (
        isinstance(raw["public_submissions"], list)
        and all(isinstance(x, str) and x for x in raw["public_submissions"])
        and spec.public_submissions == raw["public_submissions"]
    ):
        bad.append("public_submissions")
    if "date" in raw and not (_real_date(raw["date"]) and spec.date == _real_date(raw["date"])):
        bad.append("date")
    g = raw.get("glob", "**/*")
    if not (
        isinstance(g, str)
        and g
        and not g.startswith(("/", "~", "\\"))
        and ".." not in re.split(r"[/\\]", g)
        and spec.glob == g
    ):
        bad.append("glob")
    if "price" in raw:
        p = raw["price"]
        if not (
            isinstance(p, dict)
            and spec.price == p
            and (
                "usd_per_step" not in p
                or (
                    _is_num(p["usd_per_step"])
                    and math.isfinite(p["usd_per_step"])
                    and p["usd_per_step"] >= 0
                )
            )
        ):
            bad.append("price")
    if "labels" in raw:
        ls = raw["labels"] if isinstance(raw["labels"], list) else [raw["labels"]]
        if not all(
            isinstance(x, dict) and isinstance(x.get("format"), str) and x["format"] for x in ls
        ) or [x["format"] for x in ls] != [x.format for x in spec.labels]:
            bad.append("labels")
    bad += [k for k in raw if k not in DOCUMENTED_RUN_KEYS]
    return bad


def _settings_meaning(s: Any) -> list[str]:
    if not isinstance(s, dict):
        return ["settings"]
    ok = {
        "min_steps": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
        "holdout_min_runs": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
        "target_accuracy": lambda v: _is_num(v) and 0.5 < v <= 1,
        "confidence": lambda v: v == "none" or (_is_num(v) and 0 < v < 1),
        "constraint": lambda v: v in ("recall", "accuracy"),
        "inner_holdout": lambda v: v in ("agent", "scaffold"),
        "twin": lambda v: v in ("mirror", "flipped", "balanced"),
        "model_families": lambda v: (
            isinstance(v, list) and bool(v) and all(isinstance(x, str) and x for x in v)
        ),
        "monotone": lambda v: (
            isinstance(v, dict)
            and all(x in (-1, 0, 1) and not isinstance(x, bool) for x in v.values())
        ),
        "peer_prior": lambda v: (
            isinstance(v, dict)
            and set(v) <= {"strength", "counts"}
            and ("strength" not in v or (_is_num(v["strength"]) and 0 < v["strength"] < math.inf))
            and isinstance(v.get("counts", False), bool)
        ),
    }
    return [k for k, v in s.items() if k not in ok or not ok[k](v)]


def check_catalog(env: Env, ex: tuple) -> tuple[str, str]:
    from earlyeval.config.catalog import load_catalog
    from earlyeval.core.errors import CatalogError

    path, op, value = ex
    doc = json.loads(json.dumps(BASE_CATALOG))
    _apply(doc, path, op, value)
    try:
        text = toml_doc(doc)
    except (TypeError, RecursionError):
        return ("ok", "not representable in TOML")
    p = env.base / "fz_catalogs" / uuid.uuid4().hex / "fz.toml"
    p.parent.mkdir(parents=True)
    p.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        cat = load_catalog(p)
    except CatalogError as e:
        return (
            "named" if str(p) in str(e) and e.field else "silent",
            f"{path} {op}: {str(e)[-90:]}",
        )
    finally:
        shutil.rmtree(p.parent, ignore_errors=True)
    import tomllib

    raw = tomllib.loads(text)
    bad = [
        k
        for k in raw
        if k not in ("bench", "families", "settings", "runs", "defaults", "priors", "tasks")
    ]
    if not (isinstance(raw.get("bench"), str) and cat.bench == raw["bench"]):
        bad.append("bench")
    if "families" in raw and not (
        isinstance(raw["families"], list) and all(isinstance(x, str) for x in raw["families"])
    ):
        bad.append("families")
    bad += _settings_meaning(raw.get("settings", {}))
    runs = raw.get("runs", [])
    if not isinstance(runs, list) or len(runs) != len(cat.runs):
        bad.append("runs")
    else:
        defaults = raw.get("defaults", {}) if isinstance(raw.get("defaults", {}), dict) else {}
        for r, spec in zip(runs, cat.runs):
            bad += _run_meaning({**defaults, **r} if isinstance(r, dict) else {}, spec)
    return (
        "silent" if bad else "ok",
        f"{path} {op} {str(value)[:40]!r}: accepted"
        + (f" with another meaning: {bad}" if bad else ""),
    )


# ------------------------------------------------------------------ run files (every format's reader)

RUN_FORMATS = [
    ("swe-agent-traj", "swe-agent-traj"),
    ("coder-traj", "coder-traj"),
    ("moatless-transitions", "moatless-transitions"),
    ("moatless-steps", "moatless-steps"),
    ("tau2", "tau2"),
    ("toolathlon", "toolathlon"),
    ("openhands-events", "openhands-events"),
    ("openhands-completions", "openhands-completions"),
    ("mini-swe-agent-v1", "export-atif/mini-swe-agent"),
    ("atif", "atif"),
]


def run_file_examples() -> Any:
    mutation = st.one_of(
        st.tuples(st.just("set"), st.integers(0, 10**6), JSONISH),
        st.tuples(st.just("delete"), st.integers(0, 10**6), st.none()),
        st.tuples(st.just("truncate"), st.integers(0, 10**6), st.none()),
        st.tuples(st.just("bytes"), st.integers(0, 10**6), st.binary(min_size=1, max_size=8)),
    )
    return st.tuples(st.sampled_from(RUN_FORMATS), st.integers(0, 100), mutation)


def _nodes(doc: Any, path: tuple = (), out: list | None = None, depth: int = 0) -> list[tuple]:
    out = [] if out is None else out
    if depth > 12 or len(out) > 4000:
        return out
    if isinstance(doc, dict):
        for k, v in doc.items():
            out.append(path + (k,))
            _nodes(v, path + (k,), out, depth + 1)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out.append(path + (i,))
            _nodes(v, path + (i,), out, depth + 1)
    return out


def _mutate(data: bytes, mutation: tuple) -> bytes:
    kind, pos, value = mutation
    if kind == "truncate":
        return data[: pos % max(len(data), 1)]
    if kind == "bytes":
        i = pos % max(len(data), 1)
        return data[:i] + value + data[i:]
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return data[: pos % max(len(data), 1)]
    nodes = _nodes(doc)
    if not nodes:
        return data
    target = nodes[pos % len(nodes)]
    parent = doc
    for p in target[:-1]:
        parent = parent[p]
    if kind == "delete":
        del parent[target[-1]]
    else:
        parent[target[-1]] = value
    return json.dumps(doc).encode("utf-8", errors="surrogatepass")


def check_run_file(env: Env, ex: tuple) -> tuple[str, str]:
    from earlyeval.tables.store import read_trajectories, write_trajectories
    from earlyeval.workflows.score import read_runs, run_specs

    (fmt, fixture), pick, mutation = ex
    d = env.base / "fz_runs" / uuid.uuid4().hex
    shutil.copytree(FIXTURES / fixture, d)
    try:
        key = f"fz_files_{fmt}"
        if (
            key not in env._cache
        ):  # the fixture's files the format reads, relative to the folder (once per format)
            plain, _, _ = read_runs(run_specs(d, fmt))
            found = sorted({Path(str(t.meta.get("source_file", ""))) for t in plain})
            found = [f / "agent" / "trajectory.json" if f.is_dir() else f for f in found]
            env._cache[key] = [f.relative_to(d) for f in found if f.is_file()]
        files = [d / r for r in env._cache[key]]
        if not files:
            return ("ok", f"{fmt}: no file read in the fixture")
        f = files[pick % len(files)]
        raw = f.read_bytes()
        data = gzip.decompress(raw) if f.name.endswith(".gz") else raw
        new = _mutate(data, mutation)
        f.write_bytes(gzip.compress(new) if f.name.endswith(".gz") else new)
        trajs, skipped, _ = read_runs(run_specs(d, fmt))
        unit = f.parent.parent if fmt == "atif" else f  # an ATIF run is its trial folder
        read = [t for t in trajs if str(t.meta.get("source_file", "")).startswith(str(unit))]
        named = [s for s in skipped if str(s.get("file", "")).startswith(str(unit))]
        if trajs:
            back = read_trajectories(write_trajectories(trajs, d.parent / f"{d.name}.parquet"))
            if len(back) != len(trajs):
                return ("silent", f"{fmt}: {len(trajs)} runs read, {len(back)} stored")
        bad = [t.run_id for t in trajs if t.outcome not in (0, 1, None)]
        if bad:
            return ("silent", f"{fmt}: outcome not 0/1/None for {bad[:2]}")
        if named:
            return (
                "named",
                f"{fmt} {mutation[0]}: {named[0]['field']}: {str(named[0]['reason'])[:60]}",
            )
        if read:
            return ("ok", f"{fmt} {mutation[0]}: still read ({len(read)} runs)")
        return ("silent", f"{fmt} {mutation[0]}: {f.name} neither read nor named in the skips")
    finally:
        shutil.rmtree(d, ignore_errors=True)
        (d.parent / f"{d.name}.parquet").unlink(missing_ok=True)


# ------------------------------------------------------------------ model directories

MODEL_FILES = [
    "thresholds.json",
    "model.json",
    "family_behaviour.json",
    "family_gold.json",
    "family_prior.json",
    "manifest.json",
]


def model_dir_examples() -> Any:
    return st.tuples(
        st.sampled_from(MODEL_FILES),
        st.sampled_from(["set", "set", "delete"]),
        st.integers(0, 10**6),
        JSONISH,
        st.booleans(),
    )


def _model_invariants(bundle: Any, env: Env) -> list[str]:
    """What a loaded model must be: thresholds in (0.5, 1] or above 1 (never), a step number, finite
    calibration, and decisions that are finite probabilities or flagged."""
    from earlyeval import Monitor
    from earlyeval.config.monitor_config import MonitorConfig

    bad = []
    th = bundle.thresholds
    for k in ("success", "failure"):
        v = th.get(k)
        if not (_is_num(v) and math.isfinite(v) and v > 0.5):
            bad.append(f"thresholds.{k}={v!r}")
    mh = th.get("min_halt_step", 1)
    if not (isinstance(mh, int) and not isinstance(mh, bool) and mh >= 1):
        bad.append(f"min_halt_step={mh!r}")
    _, _, trajs, tasks = env.tiny()
    mon = Monitor(bundle, MonitorConfig(budget=False))
    mon.start(task=tasks[trajs[0].task_id], run_id="x")
    for s in trajs[0].steps[:4]:
        d = mon.observe(s)
        if d.p_success is None and not (d.flags or "fail-open" in d.reason):
            bad.append("a decision without probability or flag")
        if d.p_success is not None and not (0 <= d.p_success <= 1):
            bad.append(f"p_success={d.p_success}")
        if "disabled" in d.reason:
            bad.append(f"the monitor cannot run the loaded model: {d.reason[:80]}")
    return bad


def check_model_dir(env: Env, ex: tuple) -> tuple[str, str]:
    from earlyeval.core.errors import ModelDirError
    from earlyeval.model.modeldir import load_model_dir

    name, op, pos, value, fix_hashes = ex
    d = env.base / "fz_models" / uuid.uuid4().hex
    shutil.copytree(env.tiny()[0], d)
    try:
        p = d / name
        doc = json.loads(p.read_text())
        nodes = _nodes(doc)
        if nodes:
            target = nodes[pos % len(nodes)]
            parent = doc
            for k in target[:-1]:
                parent = parent[k]
            if op == "delete":
                del parent[target[-1]]
            else:
                parent[target[-1]] = value
        p.write_text(json.dumps(doc), errors="surrogatepass")
        if fix_hashes and name != "manifest.json":
            rehash(d)
        elif fix_hashes:
            from earlyeval.model.modeldir import manifest_hash

            with_hash = json.loads(p.read_text())
            if isinstance(with_hash, dict):
                with_hash["manifest_hash"] = manifest_hash(with_hash)
                p.write_text(json.dumps(with_hash))
        try:
            bundle = load_model_dir(d, probe_boosters=False)
        except ModelDirError as e:
            return ("named", f"{name} {op}: {e.field}: {e.reason[:60]}")
        bad = _model_invariants(bundle, env)
        return ("silent" if bad else "ok", f"{name} {op} loaded" + (f": {bad[:2]}" if bad else ""))
    finally:
        shutil.rmtree(d, ignore_errors=True)


# ------------------------------------------------------------------ Monitor inputs

STEP_KEYS = [
    "action",
    "observation",
    "thought",
    "tool",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
    "cost_usd",
    "error",
    "kind",
    "actions",
    "index",
    "final_answer",
]
STEP_VALUES = st.one_of(JSONISH, st.binary(max_size=6), st.just(float("nan")), st.just(10**30))


def step_examples() -> Any:
    one = st.one_of(
        st.dictionaries(st.sampled_from(STEP_KEYS), STEP_VALUES, max_size=5),
        JSONISH,
        st.binary(max_size=4),
    )
    return st.lists(one, min_size=1, max_size=4)


def _wrong_fields(step: Any) -> list[str]:
    """Fields of a dict step that are not what they mean (text, a token count, a cost, a bool)."""
    if not isinstance(step, dict):
        return ["<step>"]
    bad = []
    for k, v in step.items():
        if k in ("action", "observation", "thought", "tool", "kind", "final_answer"):
            ok = v is None or isinstance(v, str)
        elif k in ("input_tokens", "output_tokens", "cached_tokens"):
            ok = v is None or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10**9)
        elif k == "cost_usd":
            ok = v is None or (_is_num(v) and math.isfinite(v) and 0 <= v <= 1e6)
        elif k == "error":
            ok = v is None or isinstance(v, bool)
        elif k == "index":
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
        elif k == "actions":  # a list of {tool, text, kind} text fields
            ok = (
                v is None
                or v == []
                or (
                    isinstance(v, list)
                    and all(
                        isinstance(a, dict)
                        and set(a) <= {"tool", "text", "kind"}
                        and all(isinstance(x, str) for x in a.values())
                        for a in v
                    )
                )
            )
        else:  # a key no step has: ignored, so it must be said
            ok = False
        if not ok:
            bad.append(k)
    return bad


def check_steps(env: Env, steps: list) -> tuple[str, str]:
    from earlyeval import Monitor

    mdir, _, trajs, tasks = env.tiny()
    mon = env._cache.get("fz_monitor") or env._cache.setdefault(
        "fz_monitor", Monitor.load(mdir, budget=False)
    )
    t = trajs[1]
    mon.start(task=tasks[t.task_id], run_id="fz")
    mon.observe(t.steps[0])
    kinds = []
    for s in steps:
        d = mon.observe(s)
        if "disabled" in d.reason:
            raise RuntimeError(
                f"the monitor broke on a step: {d.reason[:120]} (step {str(s)[:80]})"
            )
        if d.p_success is not None and not (0 <= d.p_success <= 1 and math.isfinite(d.p_success)):
            return ("silent", f"p_success={d.p_success}")
        wrong = _wrong_fields(s)
        flagged = d.p_success is None or bool(d.flags)
        if wrong and not flagged:
            return ("silent", f"fields {wrong} of {str(s)[:80]} accepted without a flag")
        kinds.append("named" if wrong else "ok")
    after = mon.observe(t.steps[1])
    if after.p_success is None:
        return ("silent", f"a good step after the bad ones got no probability: {after.reason[:80]}")
    return ("named" if "named" in kinds else "ok", f"{len(steps)} steps, {kinds}")


TASK_KEYS = [
    "task_id",
    "prompt",
    "gold_patch",
    "test_patch",
    "fail_to_pass",
    "pass_to_pass",
    "meta",
    "instance_id",
    "patch",
    "FAIL_TO_PASS",
    "problem_statement",
]


def task_examples() -> Any:
    return st.dictionaries(st.sampled_from(TASK_KEYS), STEP_VALUES, max_size=5)


def check_task(env: Env, task: dict) -> tuple[str, str]:
    from earlyeval import Monitor

    mdir, _, trajs, _ = env.tiny()
    mon = env._cache.get("fz_monitor") or env._cache.setdefault(
        "fz_monitor", Monitor.load(mdir, budget=False)
    )
    mon.start(task=task, run_id="fz")
    ds = [mon.observe(s) for s in trajs[2].steps[:3]]
    d = ds[-1]
    if "disabled" in d.reason:
        named = any(
            f in d.reason
            for f in (
                "task_id",
                "gold_patch",
                "prompt",
                "fail_to_pass",
                "test_patch",
                "meta",
                "task must",
            )
        )
        if not named:
            raise RuntimeError(f"start broke: {d.reason[:140]}")
        return ("named", d.reason[:100])
    gp = task.get("gold_patch", task.get("patch"))
    if gp is not None and not isinstance(gp, str) and d.context == "full":
        return ("silent", f"a {type(gp).__name__} gold patch taken as full context")
    if any(x.halt for x in ds) and d.context not in ("full", "partial-trained"):
        return ("silent", f"halted with context {d.context}")
    return (
        "named" if mon.run.warnings else "ok",
        f"context {d.context}, warnings {len(mon.run.warnings)}",
    )


# ------------------------------------------------------------------ environment, dates, warm start, selection settings

ENV_VARS = [
    "EARLYEVAL_MAX_MODEL_FILE_BYTES",
    "EARLYEVAL_MAX_INPUT_BYTES",
    "EARLYEVAL_BOOSTER_PROBE",
]


def env_examples() -> Any:
    vals = st.one_of(
        st.text(max_size=8),
        st.integers(-(10**6), 10**12).map(str),
        st.sampled_from(["0", "1", "yes", "off", " 42 ", "1e9", "0x10", "1_000"]),
    )
    return st.tuples(
        st.sampled_from(ENV_VARS), vals.filter(lambda v: "\x00" not in v and "\udc80" not in v)
    )


def _env_valid(name: str, v: str) -> bool:
    if not v.strip():
        return True
    if name == "EARLYEVAL_BOOSTER_PROBE":
        return v.strip().lower() in ("0", "1", "true", "false", "yes", "no", "on", "off")
    return bool(re.fullmatch(r"\+?[0-9]+", v.strip())) and 1 <= int(v.strip()) <= 2**50


def check_env(env: Env, ex: tuple) -> tuple[str, str]:
    from earlyeval.config.catalog import RunSpec
    from earlyeval.core.errors import IngestError, ModelDirError
    from earlyeval.model.modeldir import load_model_dir

    name, value = ex
    valid = _env_valid(name, value)
    with _env(name, value):
        try:
            if name == "EARLYEVAL_MAX_INPUT_BYTES":
                from earlyeval.core.jsonio import read_bytes

                read_bytes(FIXTURES / "tau2" / "solo_no_user.json")
            elif name == "EARLYEVAL_BOOSTER_PROBE":
                from earlyeval.model.boostercheck import probe_enabled

                probe_enabled()
            else:
                load_model_dir(env.tiny()[0], probe_boosters=False)
        except (
            ModelDirError,
            IngestError,
        ) as e:  # a limit smaller than the file: refused by the limit, said
            return (
                "named" if valid and ("bytes" in str(e)) else "silent",
                f"{name}={value!r}: {str(e)[-70:]}",
            )
        except ValueError as e:
            return ("named" if name in str(e) else "silent", f"{name}={value!r}: {str(e)[-70:]}")
    del RunSpec
    return ("ok" if valid else "silent", f"{name}={value!r} accepted")


def date_examples() -> Any:
    return st.one_of(
        st.dates().map(dt.date.isoformat),
        st.text(max_size=12),
        st.tuples(st.integers(0, 9999), st.integers(0, 99), st.integers(0, 99)).map(
            lambda t: f"{t[0]:04d}-{t[1]:02d}-{t[2]:02d}"
        ),
    )


def check_date(env: Env, value: str) -> tuple[str, str]:
    from earlyeval import Monitor

    mdir, _, trajs, tasks = env.tiny()
    mon = env._cache.get("fz_monitor") or env._cache.setdefault(
        "fz_monitor", Monitor.load(mdir, budget=False)
    )
    t = trajs[0]
    mon.start(task=tasks[t.task_id], run_id="fz", as_of=value)
    d = mon.observe(t.steps[0])
    valid = value == "" or _real_date(value) is not None
    if valid:
        return ("ok" if d.p_success is not None else "silent", f"as_of={value!r}: {d.reason[:60]}")
    return (
        "named" if d.p_success is None and "as_of" in d.reason else "silent",
        f"as_of={value!r}: {d.reason[:70]}",
    )


def outcome_examples() -> Any:
    return st.one_of(JSONISH, st.sampled_from([0, 1, True, False, 2, -1, 0.0, 1.0, 0.5]))


def check_outcome(env: Env, value: Any) -> tuple[str, str]:
    import dataclasses

    from earlyeval import Monitor
    from earlyeval.fitting.warm import warm_start

    mdir, _, trajs, tasks = env.tiny()
    mon = Monitor.load(mdir, budget=False)
    runs = [
        dataclasses.replace(t, outcome=value if i == 0 else t.outcome)
        for i, t in enumerate(trajs[:4])
    ]
    valid = type(value) in (int, bool) and value in (0, 1)
    try:
        mon.use_warm_start(warm_start(mon, runs, tasks))
    except ValueError as e:
        return ("named", f"outcome {value!r}: {str(e)[:70]}")
    return ("ok" if valid else "silent", f"warm start with an outcome of {value!r}: accepted")


def selection_examples() -> Any:
    num = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.0, 1.0, 0.5, 0.9, 0.999, 1e-9, -0.1]),
        st.none(),
    )
    return st.tuples(
        num, num.filter(lambda x: x is not None), st.sampled_from(["recall", "accuracy"])
    )


def check_selection(env: Env, ex: tuple) -> tuple[str, str]:
    from earlyeval import Monitor
    from earlyeval.fitting.thresholds import WarmStartRule, select_thresholds
    from earlyeval.fitting.warm import halting_policy, runset_of
    from earlyeval.live.replay import replay

    if "fz_rs" not in env._cache:
        mdir, _, trajs, tasks = env.tiny()
        mon = Monitor.load(mdir, budget=False, explain="never")
        pol = halting_policy(mon.bundle)
        env._cache["fz_rs"] = {
            a: runset_of(ts, [replay(mon, t, tasks.get(t.task_id)) for t in ts], pol)
            for a in ("agent-a", "agent-b")
            for ts in [[t for t in trajs[:40] if t.agent == a]]
        }
    conf, target, constraint = ex
    valid = (conf is None or (0 < conf < 1)) and (0.5 < target <= 1)
    rule = WarmStartRule(
        taus=tuple(x / 100 for x in range(55, 100, 5)) + (10.0,),
        target_accuracy=target,
        constraint=constraint,
        confidence=conf,
    )
    try:
        th = select_thresholds(env._cache["fz_rs"], rule)
    except ValueError as e:
        return ("named", f"confidence={conf!r}, target={target!r}: {str(e)[:70]}")
    if not valid:
        return (
            "silent",
            f"confidence={conf!r}, target={target!r}: selected {th['success']}/{th['failure']}",
        )
    halts = th["success"] < 10 or th["failure"] < 10
    m = th["selection_min_accuracy"]
    if halts and not (m is not None and math.isfinite(m) and m >= target - 1e-9):
        return (
            "silent",
            f"selected {th['success']}/{th['failure']} with min accuracy {m} < target {target}",
        )
    return ("ok", f"{th['success']}/{th['failure']}")


# ------------------------------------------------------------------ the classes


@dataclass(frozen=True)
class FuzzClass:
    name: str
    examples: Callable[[], Any]  # -> a hypothesis strategy
    check: Callable[[Env, Any], tuple[str, str]]
    n: int  # examples per run: together about a minute on two busy cores


FUZZ: list[FuzzClass] = [
    FuzzClass("catalogs", catalog_examples, check_catalog, 150),
    FuzzClass("run files", run_file_examples, check_run_file, 40),
    FuzzClass("model dirs", model_dir_examples, check_model_dir, 30),
    FuzzClass("monitor inputs", step_examples, check_steps, 80),
    FuzzClass("monitor tasks", task_examples, check_task, 40),
    FuzzClass("settings (environment)", env_examples, check_env, 60),
    FuzzClass("dates (as_of)", date_examples, check_date, 40),
    FuzzClass("warm-start outcomes", outcome_examples, check_outcome, 15),
    FuzzClass("selection settings", selection_examples, check_selection, 40),
]


def fuzz_seed() -> int:
    """The run's seed: ``EARLYEVAL_FUZZ_SEED`` to replay one, else a fresh one (printed on failure)."""
    raw = os.environ.get("EARLYEVAL_FUZZ_SEED")
    return int(raw) if raw else int.from_bytes(os.urandom(4), "little")


def run_fuzz(
    fc: FuzzClass,
    env: Env,
    seed: int,
    on_example: Callable[[str, str, Any], None],
    n: int | None = None,
    shrink: bool = True,
) -> None:
    """Draw ``n`` (default ``fc.n``) examples of ``fc`` with hypothesis from ``seed``; ``on_example(kind, detail,
    example)`` sees each (it may raise to fail the run: hypothesis then shrinks and reports the example)."""
    from faults import run_case
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as with_seed

    phases = [Phase.generate, Phase.shrink] if shrink else [Phase.generate]

    @with_seed(seed)
    @settings(
        max_examples=n or fc.n,
        deadline=None,
        database=None,
        phases=phases,
        print_blob=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(fc.examples())
    def inner(ex: Any) -> None:
        kind, detail = run_case(env, lambda e: fc.check(e, ex))
        on_example(kind, detail, ex)

    inner()

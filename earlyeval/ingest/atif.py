"""ATIF (Agent Trajectory Interchange Format, v1.0-v1.8) runs in Harbor trial folders.

One step per ATIF agent step (``earlyeval.steps.atif``), labelled by the verifier's reward; documents are
validated with the ``atif`` package's models, and ``extra.earlyeval`` values are honoured so that
ingest -> export -> ingest is exact.
Layout, step mapping, continuations, subagents, versions and labels: docs/formats.md, "ATIF in Harbor trial
folders".
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("cli", "the ATIF format", ("atif",))

import copy
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterator

import atif
from pydantic import ValidationError

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, read_text
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.chat import reward_outcome, success_min_reward
from earlyeval.ingest.common import first_day, glob_paths, run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.atif import EXT_KEY, steps_of
from earlyeval.steps.values import is_number

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*"
INLINE_LABELS = True

MAX_MINOR = 8  # the installed atif package implements ATIF-v1.8
TRAJECTORY_NAMES = ("trajectory.json", "trajectory.json.gz")

_VERSION = re.compile(r"^(?:ATIF-)?v?1\.(\d+)$", re.I)
_FIELD_IN_MSG = re.compile(
    r"((?:steps|subagent_trajectories)\[\d+\](?:\.[A-Za-z_]\w*(?:\[\d+\])?)*)"
)
_UNION_TAGS = {"str", "int", "float", "bool", "dict", "list", "none", "literal"}


# ---------------------------------------------------------------- discovery


def trajectory_file(trial: Path) -> Path | None:
    for name in TRAJECTORY_NAMES:
        p = trial / "agent" / name
        if p.is_file():
            return p
    return None


def discover(run_dir: Path, spec: RunSpec) -> list[Path]:
    """Trial folders under ``run_dir`` (``run_dir`` itself when it is one)."""
    if trajectory_file(run_dir) is not None:
        return [run_dir]
    if spec.glob and spec.glob not in ("**/*", "*", "**"):
        cands = [p for p in glob_paths(run_dir, spec.glob) if p.is_dir()]
    else:
        cands = [
            p.parent.parent for name in TRAJECTORY_NAMES for p in run_dir.rglob(f"agent/{name}")
        ]
    return sorted({p for p in cands if trajectory_file(p) is not None})


# ---------------------------------------------------------------- validation


def _loc(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str):
            if part.lower() in _UNION_TAGS or any(c in part for c in "[(-,"):
                continue  # pydantic's union-member tags, not fields
            out += f".{part}" if out else part
    return out


def validate_document(raw: Any, file: str | Path) -> atif.Trajectory:
    """The document as an ``atif.Trajectory``, or an IngestError naming the failing field."""
    f = str(file)
    if not isinstance(raw, dict):
        raise IngestError(f, "<root>", f"expected an ATIF object, got {type(raw).__name__}")
    ver = raw.get("schema_version")
    if not isinstance(ver, str):
        raise IngestError(f, "schema_version", "missing or not a string: not an ATIF document")
    m = _VERSION.match(ver.strip())
    if not m:
        raise IngestError(
            f, "schema_version", f"unsupported '{ver}': expected ATIF-v1.0 ... ATIF-v1.{MAX_MINOR}"
        )
    minor = int(m.group(1))
    if minor > MAX_MINOR:
        raise IngestError(
            f,
            "schema_version",
            f"'{ver}' is newer than ATIF-v1.{MAX_MINOR}, the version the installed atif package validates",
        )
    doc = _upgrade(raw, minor)
    try:
        return check_calls(atif.Trajectory.model_validate(doc), f)
    except ValidationError as e:
        err = e.errors()[0]
        field = _loc(tuple(err.get("loc") or ()))
        msg = str(err.get("msg", "invalid"))
        if not field:
            hit = _FIELD_IN_MSG.search(msg)
            field = hit.group(1) if hit else "<trajectory>"
        more = f" (+{e.error_count() - 1} more validation errors)" if e.error_count() > 1 else ""
        raise IngestError(f, field, f"ATIF validation failed: {msg}{more}") from e


def check_calls(doc: atif.Trajectory, f: str) -> atif.Trajectory:
    """What the ``atif`` models leave open: a tool call id repeated in a step (its results could not be told
    apart), and a result naming a call its step did not make (a step without calls, a user or system step: the
    models check only an agent step's calls).  Either is an IngestError naming the field."""
    for i, st in enumerate(doc.steps):
        ids = [tc.tool_call_id for tc in st.tool_calls or []]
        dup = next((c for k, c in enumerate(ids) if c in ids[:k]), None)
        if dup is not None:
            raise IngestError(
                f, f"steps[{i}].tool_calls", f"tool call id {dup!r} repeats in the step"
            )
        for k, r in enumerate(st.observation.results if st.observation else []):
            if r.source_call_id is not None and r.source_call_id not in ids:
                raise IngestError(
                    f,
                    f"steps[{i}].observation.results[{k}].source_call_id",
                    f"{r.source_call_id!r} answers no tool call of its step",
                )
    return doc


def _upgrade(raw: dict, minor: int) -> dict:
    """Make a v1.0-v1.6 document valid under the v1.8 models (the only breaking change was v1.7's)."""
    if minor >= 7:
        return raw
    doc = copy.deepcopy(raw)
    for st in doc.get("steps") or []:
        obs = st.get("observation") if isinstance(st, dict) else None
        for r in (obs.get("results") or []) if isinstance(obs, dict) else []:
            if not isinstance(r, dict) or r.get("subagent_trajectory_ref") is None:
                continue
            refs = r["subagent_trajectory_ref"]
            if isinstance(refs, dict):
                refs = r["subagent_trajectory_ref"] = [refs]
            for ref in refs if isinstance(refs, list) else []:
                if (
                    isinstance(ref, dict)
                    and ref.get("trajectory_id") is None
                    and ref.get("trajectory_path") is None
                    and isinstance(ref.get("session_id"), str)
                ):
                    ref["trajectory_id"] = ref["session_id"]
    return doc


def load_documents(traj_file: Path, trial: Path) -> list[tuple[Path, atif.Trajectory]]:
    """The trajectory and its continuation segments, validated, in order."""
    out: list[tuple[Path, atif.Trajectory]] = []
    seen: set[Path] = set()
    cur = traj_file
    root = trial.resolve()
    while True:
        if (
            root not in cur.resolve().parents
        ):  # a symlinked trajectory.json: read nothing from outside the trial
            raise IngestError(
                str(cur), "<file>", "resolves outside the trial folder (a symlink?): not read"
            )
        seen.add(cur.resolve())
        doc = validate_document(load_json(cur), cur)
        out.append((cur, doc))
        ref = doc.continued_trajectory_ref
        if not ref:
            return out
        if "://" in ref:
            raise IngestError(
                str(cur),
                "continued_trajectory_ref",
                f"'{ref}' is not a local file: the continuation cannot be read",
            )
        nxt = (cur.parent / ref).resolve()
        if not nxt.is_file() and Path(str(nxt) + ".gz").is_file():
            nxt = Path(str(nxt) + ".gz")
        if root not in nxt.parents:
            raise IngestError(
                str(cur), "continued_trajectory_ref", f"'{ref}' points outside the trial folder"
            )
        if nxt in seen:
            raise IngestError(str(cur), "continued_trajectory_ref", f"'{ref}' makes a cycle")
        if not nxt.is_file():
            raise IngestError(
                str(cur),
                "continued_trajectory_ref",
                f"'{ref}' does not exist: the run is truncated",
            )
        cur = nxt


# ---------------------------------------------------------------- labels


def _pick_reward(rewards: Any, file: Path, field: str, spec: RunSpec) -> float:
    if is_number(rewards):
        return _in_range(float(rewards), file, field)
    if not isinstance(rewards, dict) or not rewards:
        raise IngestError(str(file), field, "expected an object of named rewards")
    key = None
    for ls in spec.labels:
        if ls.format == "inline" and "reward_key" in ls.options:
            key = ls.options["reward_key"]
    key = key or spec.options.get("reward_key")
    if key is None:
        if "reward" in rewards:
            key = "reward"
        elif len(rewards) == 1:
            key = next(iter(rewards))
        else:
            raise IngestError(
                str(file),
                field,
                f"several rewards {sorted(rewards)} and no 'reward': set reward_key in the catalog",
            )
    if key not in rewards:
        raise IngestError(str(file), f"{field}.{key}", "missing")
    v = rewards[key]
    if not is_number(v):
        raise IngestError(str(file), f"{field}.{key}", f"expected a number, got {type(v).__name__}")
    return _in_range(float(v), file, f"{field}.{key}")


# a reward in reward.txt: a plain decimal number (no "1_0", which float() reads as 10; no inf / nan)
_REWARD_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _in_range(r: float, file: Path, field: str) -> float:
    """A reward is a number in [0, 1] (Harbor's verifiers write 0/1 or a partial score)."""
    if not (math.isfinite(r) and 0.0 <= r <= 1.0):
        raise IngestError(str(file), field, f"reward {r!r} is outside [0, 1]")
    return r


def _inside(trial: Path, p: Path) -> bool:
    """Whether ``p`` (a label file) resolves inside the trial folder (a symlink may point anywhere)."""
    return trial.resolve() in p.resolve().parents


def trial_reward(trial: Path, spec: RunSpec) -> tuple[float | None, str, str]:
    """(reward, file it came from, field) -- reward None when the trial has none."""
    for name in ("result.json", "result.json.gz"):
        res = trial / name
        if res.is_file():
            if not _inside(trial, res):
                raise IngestError(
                    str(res), "<file>", "resolves outside the trial folder (a symlink?): not read"
                )
            d = load_json(res)
            if not isinstance(d, dict):
                raise IngestError(str(res), "<root>", f"expected an object, got {type(d).__name__}")
            vr = d.get("verifier_result")
            if vr is not None:
                if not isinstance(vr, dict):
                    raise IngestError(
                        str(res), "verifier_result", f"expected an object, got {type(vr).__name__}"
                    )
                if vr.get("rewards") is not None:
                    return (
                        _pick_reward(vr["rewards"], res, "verifier_result.rewards", spec),
                        str(res),
                        "verifier_result.rewards",
                    )
            break
    rj = trial / "verifier" / "reward.json"
    if rj.is_file():
        if not _inside(trial, rj):
            raise IngestError(
                str(rj), "<file>", "resolves outside the trial folder (a symlink?): not read"
            )
        return _pick_reward(load_json(rj), rj, "<root>", spec), str(rj), "reward.json"
    rt = trial / "verifier" / "reward.txt"
    if rt.is_file():
        if not _inside(trial, rt):
            raise IngestError(
                str(rt), "<file>", "resolves outside the trial folder (a symlink?): not read"
            )
        txt = read_text(rt).strip()
        if not _REWARD_TEXT.fullmatch(txt):
            raise IngestError(str(rt), "<text>", f"not a plain number: {txt[:40]!r}")
        return _in_range(float(txt), rt, "<text>"), str(rt), "reward.txt"
    return None, "", ""


def _task_id(trial: Path, doc: atif.Trajectory) -> str:
    for name in ("result.json", "result.json.gz"):
        res = trial / name
        if res.is_file():
            d = load_json(res)
            if isinstance(d, dict) and isinstance(d.get("task_name"), str) and d["task_name"]:
                return d["task_name"]
    ext = doc.extra or {}
    for k in ("task_id", "task_name"):
        if isinstance(ext.get(k), str) and ext[k]:
            return ext[k]
    mine = ext.get(EXT_KEY)
    if isinstance(mine, dict) and isinstance(mine.get("task_id"), str):
        return mine["task_id"]
    return trial.name.rsplit("__", 1)[0]  # Harbor trial names are <task>__<short id>


# ---------------------------------------------------------------- parse


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    if path.is_dir():
        trial = path
        traj_file = trajectory_file(trial)
        if traj_file is None:
            raise IngestError(
                str(trial), "agent/trajectory.json", "missing: not a Harbor trial folder"
            )
    else:
        traj_file = path
        trial = path.parent.parent if path.parent.name == "agent" else path.parent
    segments = load_documents(traj_file, trial)
    docs = [d for _, d in segments]
    counts: Counter = Counter()
    steps, prompt = steps_of(docs, counts)
    reward, reward_file, reward_field = trial_reward(trial, spec)
    threshold = success_min_reward(spec)
    outcome = (
        None if reward is None else reward_outcome(reward, threshold, reward_file, reward_field)
    )
    main = docs[0]
    task_id = _task_id(trial, main)
    yield run_trajectory(
        spec,
        bench,
        str(traj_file),
        task_id,
        steps,
        prompt=prompt,
        outcome=outcome,
        run_id=f"{spec.name}/{trial.name}",
        trial_dir=str(trial),
        schema_version=main.schema_version,
        atif_agent=main.agent.name,
        atif_agent_version=main.agent.version,
        atif_model=main.agent.model_name,
        native_model=main.agent.model_name,
        run_date=first_day(st.timestamp for d in docs for st in d.steps),
        session_id=main.session_id,
        segments=[str(p) for p, _ in segments],
        reward=reward,
        reward_source=reward_file or None,
        success_min_reward=threshold,
        final_metrics=main.final_metrics.model_dump(exclude_none=True)
        if main.final_metrics
        else None,
        **{k: int(v) for k, v in counts.items()},
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): a trial folder whose ``agent/trajectory.json`` has a ``schema_version``."""
    f = trajectory_file(path) if path.is_dir() else path
    h = heads.of(f) if f is not None else None
    return (
        h is not None
        and h.root == "{"
        and "schema_version" in h.keys
        and ("steps" in h.keys or h.mentions(r'"ATIF-'))
    )

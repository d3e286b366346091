"""Export ingested runs as ATIF (v1.8) in a Harbor trial layout.

``write_atif`` writes one trial folder, so that any run earlyeval can ingest can be read back by the ``atif``
ingestor, or by any ATIF consumer; what standard ATIF cannot say goes to ``extra.earlyeval``. The mapping:
docs/formats.md, "Exporting ATIF".
"""

from __future__ import annotations

from earlyeval.core.extras import require

require("cli", "earlyeval export (ATIF)", ("atif",))

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

import atif

from earlyeval.core import atomic
from earlyeval.core.errors import EarlyEvalError
from earlyeval.core.render import SHELL_TOOLS, tool_call_text
from earlyeval.core.trajectory import Step, Trajectory, classify_action
from earlyeval.steps import atif as atif_steps

ATIF_VERSION = "ATIF-v1.8"
EXPORT_FORMATS = ("atif",)
EXT = atif_steps.EXT_KEY


def _arguments(tool: str, text: str) -> tuple[dict[str, Any], bool]:
    """Tool-call arguments for an action text, and whether the text must ride along in ``extra``."""
    args: dict[str, Any] | None = None
    try:
        parsed = json.loads(text) if text.strip().startswith("{") else None
        if isinstance(parsed, dict):
            args = parsed
    except ValueError:
        pass
    if args is None:
        args = {"command": text} if tool in SHELL_TOOLS else ({"input": text} if text else {})
    return args, tool_call_text(tool, args) != text


def _json_safe(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


def _agent_step(s: Step, pos: int, step_id: int) -> dict[str, Any]:
    d: dict[str, Any] = {"step_id": step_id, "source": "agent"}
    calls = []
    for k, a in enumerate(s.actions):
        args, needs_text = _arguments(a.tool, a.text)
        tc: dict[str, Any] = {
            "tool_call_id": f"call_{pos}_{k}",
            "function_name": a.tool,
            "arguments": args,
        }
        ext: dict[str, Any] = {}
        if needs_text:
            ext["text"] = a.text
        if a.kind != classify_action(a.tool, a.text):
            ext["kind"] = a.kind
        if ext:
            tc["extra"] = {EXT: ext}
        calls.append(tc)
    if calls:
        d["tool_calls"] = calls
        d["message"] = s.thought
    else:
        d["message"] = s.action
        if s.thought:
            d["reasoning_content"] = s.thought
    if s.observation:
        res: dict[str, Any] = {"content": s.observation}
        if len(calls) == 1:
            res["source_call_id"] = calls[0]["tool_call_id"]
        d["observation"] = {"results": [res]}
    metrics = {
        k: v
        for k, v in (
            ("prompt_tokens", s.input_tokens),
            ("completion_tokens", s.output_tokens),
            ("cached_tokens", s.cached_tokens),
            ("cost_usd", s.cost_usd),
        )
        if v is not None
    }
    if metrics:
        d["metrics"] = metrics
    # what the ATIF ingestor would re-derive; anything different rides in extra
    derived, _ = atif_steps.agent_step(atif.Step.model_validate(d), pos, Counter())
    over: dict[str, Any] = {}
    if s.error is not None:
        over["error"] = s.error
    if derived.action != s.action:
        over["action"] = s.action
    if derived.kind != s.kind:
        over["kind"] = s.kind
    if s.index != pos:
        over["index"] = s.index
    if over:
        d["extra"] = {EXT: over}
    return d


def _total(values: list[Any]) -> Any:
    if not values or any(v is None for v in values):
        return None
    return sum(values)


def to_atif(traj: Trajectory) -> dict[str, Any]:
    """The trajectory as a validated ATIF-v1.8 document (a JSON-ready dict)."""
    steps: list[dict[str, Any]] = []
    if traj.prompt:
        steps.append({"step_id": 1, "source": "user", "message": traj.prompt})
    for pos, s in enumerate(traj.steps):
        steps.append(_agent_step(s, pos, len(steps) + 1))
    meta = traj.meta or {}
    final = {
        "total_prompt_tokens": _total([s.input_tokens for s in traj.steps]),
        "total_completion_tokens": _total([s.output_tokens for s in traj.steps]),
        "total_cached_tokens": _total([s.cached_tokens for s in traj.steps]),
        "total_cost_usd": _total([s.cost_usd for s in traj.steps]),
        "total_steps": len(traj.steps),
    }
    doc: dict[str, Any] = {
        "schema_version": ATIF_VERSION,
        "session_id": traj.run_id,
        "agent": {
            "name": str(meta.get("scaffold") or traj.agent),
            "version": str(meta.get("scaffold_version") or "unknown"),
            "model_name": str(meta["model"]) if meta.get("model") else None,
            "extra": {EXT: {"agent": traj.agent}},
        },
        "steps": steps,
        "notes": "Exported by earlyeval from an ingested run; one agent step per earlyeval Step.",
        "final_metrics": {k: v for k, v in final.items() if v is not None},
        "extra": {
            EXT: {
                "run_id": traj.run_id,
                "agent": traj.agent,
                "bench": traj.bench,
                "task_id": traj.task_id,
                "outcome": traj.outcome,
                "source_meta": _json_safe(meta),
            }
        },
    }
    try:
        model = atif.Trajectory.model_validate(doc)
    except Exception as e:  # a bug here, never the user's data: say which run
        raise EarlyEvalError(f"{traj.run_id}: exported ATIF does not validate: {e}") from e
    return model.to_json_dict(exclude_none=True)


def trial_name(traj: Trajectory) -> str:
    """A folder name unique per run: ``<task>__<hash of run_id>`` (Harbor's ``<task>__<id>`` shape)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", traj.task_id).strip("._") or "task"
    return f"{safe[:60]}__{hashlib.sha1(traj.run_id.encode('utf-8')).hexdigest()[:10]}"


def result_json(traj: Trajectory, name: str) -> dict[str, Any]:
    meta = traj.meta or {}
    return {
        "task_name": traj.task_id,
        "trial_name": name,
        "source": "earlyeval-export",
        "agent_info": {
            "name": str(meta.get("scaffold") or traj.agent),
            "version": str(meta.get("scaffold_version") or "unknown"),
            "model_info": {"name": meta.get("model")},
        },
        "verifier_result": None
        if traj.outcome is None
        else {"rewards": {"reward": float(traj.outcome)}},
        EXT: {
            "run_id": traj.run_id,
            "agent": traj.agent,
            "bench": traj.bench,
            "outcome": traj.outcome,
            "source_reward": _json_safe(meta.get("reward")),
        },
    }


def write_atif(traj: Trajectory, out_dir: str | Path) -> Path:
    """Write one run as a Harbor trial folder; returns the folder."""
    name = trial_name(traj)
    trial = Path(out_dir) / name
    doc = to_atif(traj)
    # atomic per file, and a full disk is a WriteError naming the file (core.atomic); a symlinked trial
    # folder leading outside ``out_dir`` is refused, not written through
    atomic.write_text(
        trial / "agent" / "trajectory.json",
        json.dumps(doc, ensure_ascii=False, indent=2),
        root=out_dir,
    )
    atomic.write_text(
        trial / "result.json",
        json.dumps(result_json(traj, name), ensure_ascii=False, indent=2),
        root=out_dir,
    )
    return trial


def export_runs(trajs: Iterable[Trajectory], out_dir: str | Path, fmt: str = "atif") -> list[Path]:
    """Write every run in ``fmt`` (only "atif" for now) under ``out_dir``; returns the trial folders."""
    if fmt not in EXPORT_FORMATS:
        raise EarlyEvalError(f"unknown export format '{fmt}' (known: {', '.join(EXPORT_FORMATS)})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    seen: set[str] = set()
    for t in trajs:
        name = trial_name(t)
        if name in seen:
            raise EarlyEvalError(
                f"{t.run_id}: two runs share the trial folder {name} (duplicate run_id)"
            )
        seen.add(name)
        written.append(write_atif(t, out))
    return written

"""mini-swe-agent v1 trajectories (``trajectory_format: mini-swe-agent-1``).

One step per assistant message and the message that answers it, per-call usage, live-swe-agent's reflection
prompt cut: docs/formats.md, "mini-swe-agent v1".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, require, strip_gz
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Action, Step, Trajectory, make_step
from earlyeval.ingest.common import dig, first_day, run_trajectory
from earlyeval.ingest.sniff import Heads

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/*.traj.json*"
INLINE_LABELS = False


_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_REFLECT = re.compile(
    r"\n?Reflect on the previous trajectories and decide if there are any tools you can create.*\Z",
    re.S,
)
_FORMAT_ERROR = re.compile(
    r"Please always provide EXACTLY ONE action|format_error|did not contain a bash", re.I
)


def split_thought_and_command(text: str) -> tuple[str, list[str]]:
    blocks = _BASH_BLOCK.findall(text)
    thought = _BASH_BLOCK.sub("", text).strip()
    thought = re.sub(r"^THOUGHT:\s*", "", thought)
    return thought, [b.strip() for b in blocks]


def usage_of(msg: dict) -> dict[str, Any]:
    """Token counts and cost of one call, None where the file does not say."""
    extra = msg.get("extra") or {}
    resp = extra.get("response") or {}
    usage = resp.get("usage") if isinstance(resp, dict) else None
    out: dict[str, Any] = {
        "input_tokens": None,
        "output_tokens": None,
        "cached_tokens": None,
        "cost_usd": None,
    }
    if isinstance(usage, dict):
        if isinstance(usage.get("prompt_tokens"), int):
            out["input_tokens"] = usage["prompt_tokens"]
        if isinstance(usage.get("completion_tokens"), int):
            out["output_tokens"] = usage["completion_tokens"]
        det = usage.get("prompt_tokens_details") or {}
        if isinstance(det, dict) and isinstance(det.get("cached_tokens"), int):
            out["cached_tokens"] = det["cached_tokens"]
        if isinstance(usage.get("cost"), (int, float)):
            out["cost_usd"] = float(usage["cost"])
    if out["cost_usd"] is None and isinstance(extra.get("cost"), (int, float)):
        out["cost_usd"] = float(extra["cost"])
    return out


def steps_from_messages(messages: list, file: str) -> tuple[list[Step], str]:
    """Steps and the task prompt (first user message) of a mini-swe-agent message list."""
    prompt = ""
    steps: list[Step] = []
    pending: dict[str, Any] | None = None
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m:
            raise IngestError(file, f"messages[{i}].role", "missing")
        role = m["role"]
        text = content_text(m.get("content"))
        if role == "system":
            continue
        if role == "user" and pending is None and not steps:
            if not prompt:
                prompt = text
            continue
        if role == "assistant":
            if pending is not None:
                steps.append(_finish(pending, len(steps)))
            thought, cmds = split_thought_and_command(text)
            pending = {"thought": thought, "cmds": cmds, "obs": [], **usage_of(m)}
            continue
        if role in ("user", "tool") and pending is not None:
            pending["obs"].append(_REFLECT.sub("", text))
    if pending is not None:
        steps.append(_finish(pending, len(steps)))
    return steps, prompt


def _finish(p: dict[str, Any], index: int) -> Step:
    obs = "\n".join(p["obs"]).strip()
    rc = _RETURNCODE.search(obs)
    rejected = not p["cmds"] or (rc is None and bool(_FORMAT_ERROR.search(obs)))
    error: bool | None = None
    if rc:
        error = int(rc.group(1)) != 0
    elif rejected:
        error = True
    acts = [] if rejected else [Action(tool="bash", text=c) for c in p["cmds"]]
    return make_step(
        index,
        acts,
        thought=p["thought"],
        observation=obs,
        input_tokens=p["input_tokens"],
        output_tokens=p["output_tokens"],
        cached_tokens=p["cached_tokens"],
        cost_usd=p["cost_usd"],
        error=error,
    )


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    d = load_json(path)
    messages = require(d, "messages", list, f)
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    task_id = d.get("instance_id")
    if not isinstance(task_id, str) or not task_id:
        task_id = strip_gz(path.name).split(".traj")[0].split(".json")[0]
    steps, prompt = steps_from_messages(messages, f)
    stats = info.get("model_stats") or {}
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=prompt,
        # who and when, as the file records them (``earlyeval score``: training overlap, the prior's date)
        native_model=dig(info, "config", "model", "model_name"),
        run_date=first_day(
            dig(m, "extra", "response", "created") for m in messages if isinstance(m, dict)
        ),
        exit_status=info.get("exit_status"),
        instance_cost=stats.get("instance_cost"),
        api_calls=stats.get("api_calls"),
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): mini-swe-agent saves ``info`` first (its exit status and
    submission), then ``messages``; ``trajectory_format`` names it when the prefix reaches it."""
    h = heads.of(path)
    others = (
        "trajectory",
        "transitions",
        "steps",
        "nodes",
        "simulations",
        "pass",
        "response",
        "kwargs",
    )
    if h.root != "{" or any(k in h.keys for k in others):
        return False
    if "trajectory_format" in h.keys and h.mentions(r'"trajectory_format"\s*:\s*"mini-swe-agent'):
        return True
    info_first = h.mentions(
        r'^\s*\{\s*"info"\s*:\s*\{\s*"(exit_status|submission|model_stats|config|mini_version)"'
    )
    return "messages" in h.keys or (h.keys[:1] == ("info",) and info_first)

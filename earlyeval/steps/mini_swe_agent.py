"""mini-swe-agent messages as steps: one step per assistant message and the messages that answer it.

1.x (``mini-swe-agent-1`` files, and a live 1.x run) writes the command in the text (a ```bash block); a live
2.x run carries its parsed commands in ``extra.actions`` and return codes in ``extra.returncode``.  Usage is per
call; live-swe-agent's reflection prompt is cut.  docs/formats.md, "mini-swe-agent v1".
"""

from __future__ import annotations

import re
from typing import Any

from earlyeval.core.errors import IngestError
from earlyeval.core.render import content_text
from earlyeval.core.trajectory import Action, Step, make_step

_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_REFLECT = re.compile(
    r"\n?Reflect on the previous trajectories and decide if there are any tools you can create.*\Z",
    re.S,
)
_FORMAT_ERROR = re.compile(
    r"Please always provide EXACTLY ONE action|format_error|did not contain a bash", re.I
)
LIVE = "<live mini-swe-agent run>"


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
        if role not in ("user", "tool"):
            raise IngestError(file, f"messages[{i}].role", f"unknown role {role!r}")
        if pending is None:  # a tool message before the first turn (a user one is the task, above)
            raise IngestError(file, f"messages[{i}]", "a tool result before any assistant turn")
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


# ------------------------------------------------------------------ a live run's new messages (1.x and 2.x)


def steps_from_new_messages(messages: list[dict], first_index: int) -> list[Step]:
    """Steps of the messages a live run added since the last model call.

    Turn grouping follows ``steps_from_messages``: an assistant message plus the user/tool messages that answer
    it.  Text-format (1.x, ```bash) turns go through ``steps_from_messages`` itself; 2.x turns carry their
    parsed commands in ``extra.actions`` and return codes in the observations' ``extra.returncode``.  A 2.x
    ``FormatError`` message with no assistant message before it is a rejected turn: no action, ``error=True``.
    """
    steps: list[Step] = []
    pending: dict | None = None
    obs: list[dict] = []

    def flush() -> None:
        nonlocal pending, obs
        if pending is not None:
            steps.append(turn_step(pending, obs, first_index + len(steps)))
        pending, obs = None, []

    for m in messages:
        if not isinstance(m, dict):
            continue
        role = m.get("role")
        extra = m.get("extra") or {}
        if role == "assistant":
            flush()
            pending = m
        elif (
            isinstance(extra, dict)
            and extra.get("interrupt_type") == "FormatError"
            and pending is None
        ):
            steps.append(rejected_step(m, first_index + len(steps)))
        elif role in ("user", "tool") and pending is not None:
            obs.append(m)
        # system/exit messages and stray user messages carry no step
    flush()
    return steps


def turn_step(asst: dict, obs_msgs: list[dict], index: int) -> Step:
    """One assistant message and the messages answering it as the Step at ``index``."""
    extra = asst.get("extra") or {}
    if not isinstance(extra, dict) or not isinstance(extra.get("actions"), list):
        # 1.x text format: exactly the file reader's rules
        steps, _ = steps_from_messages([asst, *obs_msgs], LIVE)
        step = steps[0]
        step.index = index
        return step
    text = content_text(asst.get("content"))
    thought, _ = split_thought_and_command(text.replace("```mswea_bash_command", "```bash"))
    cmds = [str(a.get("command", "")) for a in extra["actions"] if isinstance(a, dict)]
    observation = "\n".join(content_text(m.get("content")) for m in obs_msgs).strip()
    rcs = [(m.get("extra") or {}).get("returncode") for m in obs_msgs]
    rcs = [r for r in rcs if isinstance(r, int)]
    error = any(r != 0 for r in rcs) if rcs else None
    return make_step(
        index,
        [Action(tool="bash", text=c) for c in cmds],
        thought=thought,
        observation=observation,
        error=error,
        **usage_of(asst),
    )


def rejected_step(msg: dict, index: int) -> Step:
    """A 2.x ``FormatError`` message: the model's reply the scaffold refused, as a step without action."""
    extra = msg.get("extra") or {}
    reply = extra.get("model_response") if isinstance(extra.get("model_response"), str) else ""
    thought, _ = split_thought_and_command(reply.replace("```mswea_bash_command", "```bash"))
    return make_step(
        index,
        [],
        thought=thought,
        observation=content_text(msg.get("content")),
        error=True,
        **usage_of(msg),
    )

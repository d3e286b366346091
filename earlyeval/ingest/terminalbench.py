"""Terminal-Bench 1 (TB1 harness) mini-swe-agent session logs: ``sessions/agent.log[.gz]``.

Steps are parsed from the raw tmux transcript, one per ``mini-swe-agent (step N, ...)`` block with its reply
(``earlyeval.steps.terminalbench``);
the label is the trial's ``results.json``. Details: docs/formats.md, "Terminal-Bench 1".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from earlyeval.config.catalog import RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.core.jsonio import load_json, read_text
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest.common import run_trajectory
from earlyeval.ingest.sniff import Heads
from earlyeval.steps.terminalbench import block_step

# this format's facts, for a folder no catalog entry describes (``ingest.format_facts``): where its run
# files are, and whether they carry their own outcome (a reward, a pass flag)
DEFAULT_GLOB = "**/sessions/agent.log*"
INLINE_LABELS = True


_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Za-z0-9]|\x1b[=>78]"
)
_SPINNER = re.compile(r"^.*Waiting for the LM to respond.*$\n?", re.M)
# the agent process's own logging
_LITELLM_NOISE = re.compile(r"^\d{2}:\d{2}:\d{2} - LiteLLM:.*$\n?", re.M)
_HEADER = re.compile(r"^mini-swe-agent \(step (\d+), \$([0-9.]+)\):[ \t]*$", re.M)
_USER = re.compile(r"^User:[ \t]*$", re.M)
_RULE = re.compile(r"^[─━-]{20,}\s*$", re.M)
_END = re.compile(r"^(Saved trajectory to |root@[^\n]*[#$] )", re.M)
_NOT_STARTED = re.compile(
    r"(command not found|No such file or directory|Traceback \(most recent call last\))[^\n]*", re.I
)


def clean_log(text: str) -> str:
    """The transcript without ANSI escapes, carriage returns, spinner lines and LiteLLM's log lines."""
    return _LITELLM_NOISE.sub("", _SPINNER.sub("", _ANSI.sub("", text).replace("\r", "")))


def _results_file(log: Path) -> Path | None:
    trial = log.parent.parent if log.parent.name == "sessions" else log.parent
    for name in ("results.json", "results.json.gz"):
        if (trial / name).is_file():
            return trial / name
    return None


def split_steps(text: str) -> list[tuple[int, float, str, str]]:
    """(step number, cumulative cost, assistant text, observation) per step block."""
    heads = list(_HEADER.finditer(text))
    out = []
    for k, h in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        block = text[h.end() : end]
        u = _USER.search(block)
        said, reply = (block[: u.start()], block[u.end() :]) if u else (block, "")
        cut = [m.start() for m in (_RULE.search(reply), _END.search(reply)) if m]
        if cut:
            reply = reply[: min(cut)]
        out.append((int(h.group(1)), float(h.group(2)), said.strip(), reply.strip()))
    return out


def parse(path: Path, spec: RunSpec, bench: str) -> Iterator[Trajectory]:
    f = str(path)
    text = clean_log(read_text(path))
    blocks = split_steps(text)
    if not blocks:
        why = _NOT_STARTED.search(text)
        reason = (
            f"no agent step: the agent never started ({why.group(0).strip()[:120]})"
            if why
            else "no agent step in the log"
        )
        raise IngestError(f, "steps", reason)
    nums = [n for n, _, _, _ in blocks]
    back = next((k for k in range(1, len(nums)) if nums[k] <= nums[k - 1]), None)
    if back is not None:  # a block repeated or redrawn: which one the agent took cannot be told
        raise IngestError(
            f,
            "steps",
            f"step {nums[back]} comes after step {nums[back - 1]} in the log: a repeated or out-of-order "
            "block cannot be placed",
        )
    res_file = _results_file(path)
    if res_file is None:
        raise IngestError(f, "results.json", "missing next to sessions/: no label for this trial")
    res = load_json(res_file)
    if not isinstance(res, dict):
        raise IngestError(str(res_file), "<root>", f"expected an object, got {type(res).__name__}")
    if "is_resolved" not in res:
        raise IngestError(str(res_file), "is_resolved", "missing: no label")
    y = res["is_resolved"]
    if y is not None and not isinstance(y, bool):
        raise IngestError(
            str(res_file), "is_resolved", f"expected true, false or null, got {type(y).__name__}"
        )
    trial = res_file.parent
    task_id = (
        res.get("task_id") if isinstance(res.get("task_id"), str) else trial.name.split(".1-of-")[0]
    )
    steps = [block_step(i, said, reply) for i, (_, _, said, reply) in enumerate(blocks)]
    yield run_trajectory(
        spec,
        bench,
        f,
        task_id,
        steps,
        prompt=res.get("instruction") if isinstance(res.get("instruction"), str) else "",
        outcome=None if y is None else int(y),
        run_id=f"{spec.name}/{res.get('trial_name') or trial.name}",
        trial=trial.name,
        cumulative_cost_usd=[c for _, c, _, _ in blocks],
        instance_cost=blocks[-1][1],
        step_numbers_in_log=[n for n, _, _, _ in blocks],
    )


def sniff(path: Path, heads: Heads, fmt: str) -> bool:
    """For ``--format auto`` (``ingest.sniff``): a ``sessions/agent.log`` (its glob) that is a transcript, not JSON."""
    h = heads.of(path)
    return h.error is None and h.root == "" and path.parent.name == "sessions"

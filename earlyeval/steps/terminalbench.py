"""Terminal-Bench 1 (TB1 harness) transcript blocks as steps: one ``mini-swe-agent (step N, ...)`` block's text
(the model's reply, a ```bash block) and the terminal's reply; a turn without exactly one bash block is one the
scaffold rejects.  docs/formats.md, "Terminal-Bench 1".
"""

from __future__ import annotations

import re

from earlyeval.core.trajectory import Action, Step, make_step

_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")


def block_step(index: int, said: str, reply: str) -> Step:
    cmds = [b.strip() for b in _BASH_BLOCK.findall(said)]
    thought = re.sub(r"^THOUGHT:\s*", "", _BASH_BLOCK.sub("", said).strip())
    rc = _RETURNCODE.search(reply)
    if rc:
        error: bool | None = int(rc.group(1)) != 0
    elif len(cmds) != 1:
        error = True  # no or several bash blocks: the scaffold rejects the turn
    else:
        error = None
    acts = [Action(tool="bash", text=c) for c in cmds] if len(cmds) == 1 else []
    return make_step(index, acts, thought=thought, observation=reply, error=error)

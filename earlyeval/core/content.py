"""What a run is, apart from where it is stored: its content fingerprint (what ``score`` compares with a model's
training runs) and its copy key (what two stored copies of one run share, so that a folder counts a copy once).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from earlyeval.core.trajectory import Trajectory

FINGERPRINT = "v1: sha256 of the JSON [task_id, [[action, thought, observation] of every step]], first 32 hex digits"


def fingerprint(t: Trajectory) -> str:
    """The run's content: its task and the text of its steps as ingested (not its file, folder, agent or run
    id, nor usage numbers), so a copy of a run matches whatever it is called and however stored: how ``score``
    recognises a training run (``model.overlap``).  A copy within a folder is ``copy_key``'s stricter test."""
    body = json.dumps(
        [t.task_id, [[s.action, s.thought, s.observation] for s in t.steps]], separators=(",", ":")
    )
    return hashlib.sha256(body.encode("ascii")).hexdigest()[:32]


def _stored_where(v: Any) -> bool:
    """Whether a meta value says where the run is stored (an absolute path, or a list of them), not what it is."""
    if isinstance(v, str):
        return v.startswith(("/", "\\")) or (len(v) > 2 and v[1:3] in (":\\", ":/"))
    return isinstance(v, (list, tuple)) and bool(v) and all(_stored_where(x) for x in v)


def copy_key(t: Trajectory) -> str:
    """What two stored copies of one run share and two runs do not: the task, the prompt, the outcome, every
    field of every step (usage too) and what its reader recorded (``meta``), less where it is stored (its file,
    folder and catalog run).  Two agents can say the same words on a short task (their usage differs); a copied
    file cannot differ.  ``ingest.once.copy_of`` counts a copy once."""
    meta = {
        k: v for k, v in t.meta.items() if k not in ("source_file", "run") and not _stored_where(v)
    }
    body = json.dumps(
        [t.task_id, t.prompt, t.outcome, [s.to_dict() for s in t.steps], meta],
        sort_keys=True,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(body.encode("utf-8", "surrogatepass")).hexdigest()[:32]

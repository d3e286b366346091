"""A run is read once: a plain and a gzipped copy of one file, a run id two files claim, the same content in two
files of one folder (``core.content.copy_key``).  Each is a skip naming the other file, never a second run
whose halts, savings and audit evidence would count double."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("earlyeval.ingest")


def one_file_per_run(paths: list[Path]) -> tuple[list[Path], list[dict[str, str]]]:
    """A run stored twice, plain and gzipped (``x.traj`` and ``x.traj.gz``), is read once: the plain copy is
    kept and the other named in the skips (its records would otherwise be a second run of the same task)."""
    plain = {str(p) for p in paths if p.name and not p.name.endswith(".gz")}
    keep, skipped = [], []
    for p in paths:
        twin = str(p)[:-3] if p.name.endswith(".gz") else ""
        if twin and twin in plain:
            skipped.append(
                {
                    "file": str(p),
                    "field": "<file>",
                    "reason": f"the same run as {twin} (a plain and a gzipped copy): read once, from the plain file",
                }
            )
        else:
            keep.append(p)
    return keep, skipped


def unique_run_id(
    run_id: str, src: str, seen: dict[str, str], run_dir: Path
) -> tuple[str, dict[str, str] | None]:
    """The run id a trajectory of file ``src`` keeps among the ``seen`` ones (id -> file) of its run, and the
    skip when it is a duplicate.  Another file of the same task (formats whose id is <run>/<task>) is a run
    of its own, named by its file; a second record of the same id from the same file is a duplicate."""
    if run_id in seen and seen[run_id] != src:
        run_id = f"{run_id}@{_rel(src, run_dir)}"
    if run_id in seen:
        return run_id, {"file": src, "field": "run_id", "reason": f"duplicate of {seen[run_id]}"}
    return run_id, None


def copy_of(fp: str, src: str, seen: dict[str, str], where: str = "") -> dict[str, str] | None:
    """The skip of a run whose content (``core.content.copy_key``: task, steps, what its reader recorded) another
    file of the same folder gave first (``seen``: copy key -> file), else None (and the run is recorded in ``seen``).  A copy is
    counted once, the first one read, and a warning names both files: scored twice, its halts, savings and audit
    evidence would count double.  Two runs of one file alike are not copies (a tau2 file's trials of a
    deterministic agent can be): both count."""
    first = seen.setdefault(fp, src)
    if first == src:
        return None
    reason = (
        f"the same run as {first} (identical content: its task, steps and record): counted once"
    )
    log.warning("%s%s: %s", where, src, reason)
    return {"file": src, "field": "<run>", "reason": reason}


def _rel(path: str, run_dir: Path) -> str:
    try:
        return Path(path).relative_to(run_dir).as_posix()
    except ValueError:
        return str(path)

"""Which scheduler a verb runs on: the ``--scheduler`` / ``$EARLYEVAL_SCHEDULER`` value, parsed.

No scheduler (the default) means everything runs in this process, exactly as without the option;
``local[:N]`` starts a ``dask.distributed`` LocalCluster of N worker processes (one thread each) on this
machine for the verb's lifetime; an address (``tcp://HOST:PORT``, also ``tls://``, ``ws://``, ``wss://``)
connects to a running scheduler.  Parsing imports nothing of dask, so the CLI checks the value on a
machine without the ``dask`` extra and the in-process path never loads it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

SCHEDULER_ENV = "EARLYEVAL_SCHEDULER"
IN_PROCESS = ("", "none", "in-process")  # values that mean: no scheduler
ADDRESS = re.compile(r"^(tcp|tls|ws|wss)://[^\s/]+:\d+/?$")


@dataclass(frozen=True)
class SchedulerSpec:
    """``local`` with a worker count, or the address of a running scheduler."""

    kind: str  # "local" | "address"
    workers: int = 0  # local: worker processes (0 = one per core)
    address: str = ""

    def __str__(self) -> str:
        return (
            self.address
            if self.kind == "address"
            else f"local:{self.workers}"
            if self.workers
            else "local"
        )


def parse_scheduler(value: str | None) -> SchedulerSpec | None:
    """None for in-process (None, "", "none", "in-process"); else the scheduler, or a ValueError saying the forms."""
    text = (value or "").strip()
    if text.lower() in IN_PROCESS:
        return None
    m = re.fullmatch(r"local(?::(\d+))?", text)
    if m:
        n = int(m.group(1) or 0)
        if m.group(1) is not None and n < 1:
            raise ValueError(f"{value!r}: local:N needs N >= 1 worker processes")
        return SchedulerSpec("local", workers=n)
    if ADDRESS.match(text):
        return SchedulerSpec("address", address=text.rstrip("/"))
    raise ValueError(
        f"{value!r} is not a scheduler: use local, local:N (N worker processes on this machine) "
        f"or a scheduler address tcp://HOST:PORT (unset, or 'none': in this process)"
    )


def scheduler_from_env() -> SchedulerSpec | None:
    """``$EARLYEVAL_SCHEDULER`` parsed (None when unset)."""
    return parse_scheduler(os.environ.get(SCHEDULER_ENV))


def local_workers(spec: SchedulerSpec) -> int:
    """The worker processes ``local`` starts: N, or one per core this process may use."""
    if spec.workers:
        return spec.workers
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not Linux
        return max(os.cpu_count() or 1, 1)

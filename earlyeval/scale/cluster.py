"""The cluster a verb runs on (``dask.distributed``), and what every task does first on a worker.

``connect`` opens a ``Client``: on a ``LocalCluster`` it starts for the verb (``local[:N]``: N worker
processes, one thread each, its HTTP port a free one) or on a running scheduler (an address: an existing cluster,
e.g. one started by dask-jobqueue or dask-kubernetes; docs/scale.md).  Workers get no process state from
the caller: a task receives the workspace and the data root as arguments (``in_workspace``), so they must
see the same paths (one machine, or a shared file system).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import dask
from distributed import Client, KilledWorker, LocalCluster
from distributed.client import FutureCancelledError
from distributed.comm.core import CommClosedError
from distributed.diagnostics.plugin import WorkerPlugin

from earlyeval.config.workspace import set_workspace, workspace_root
from earlyeval.core.env import env_int
from earlyeval.core.errors import ClusterError, SettingError
from earlyeval.model.threads import configure
from earlyeval.scale.spec import SchedulerSpec, local_workers, parse_scheduler

log = logging.getLogger(__name__)
# a task's result lost with a worker (killed more often than the scheduler's allowed-failures, or its inputs gone
# with it: cancelled), as opposed to an error the task raised
LOST = (KilledWorker, FutureCancelledError, CommClosedError)
TASK_TRIES = 3


def task_tries() -> int:
    """How many times a lost chunk is submitted in all (``$EARLYEVAL_TASK_TRIES``, default 3)."""
    return env_int("EARLYEVAL_TASK_TRIES", TASK_TRIES, lo=1, hi=100)


@contextlib.contextmanager
def connect(
    spec: SchedulerSpec | str, *, memory_limit: str | float | None = "auto"
) -> Iterator[Client]:
    """A ``Client`` on ``spec`` for the duration of the block; a LocalCluster it started is closed after it."""
    if isinstance(spec, str):
        parsed = parse_scheduler(spec)
        if parsed is None:
            raise ValueError(f"{spec!r} names no scheduler")
        spec = parsed
    if spec.kind == "address":
        with _client(spec.address) as client:
            log.info("connected to %s (%d workers)", spec.address, len(workers_of(client)))
            client.register_plugin(ThreadPolicy())
            yield client
        return
    n = local_workers(spec)
    configure()  # the workers inherit the driver's environment, OMP_WAIT_POLICY with it
    with _no_sigint():
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",
            memory_limit=memory_limit,
            silence_logs=logging.ERROR,
        )
    with cluster, Client(cluster) as client:
        log.info("LocalCluster of %d worker processes", n)
        client.register_plugin(ThreadPolicy())
        yield client


class ThreadPolicy(WorkerPlugin):
    """``model.threads.configure`` in every worker process when it joins, before a task loads LightGBM (a
    worker that already loaded it keeps its policy, and says so in its log)."""

    name = "earlyeval-thread-policy"

    def setup(self, worker: Any) -> None:
        configure()


@contextlib.contextmanager
def _no_sigint() -> Iterator[None]:
    """SIGINT ignored while the LocalCluster spawns its workers, which inherit it: Ctrl-C reaches the whole process
    group, and only the driver acts on it (it closes the cluster; a worker would print its own traceback)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


TLS_KEYS = ("distributed.comm.tls.ca-file", "distributed.comm.tls.client.cert")


def _client(address: str) -> Client:
    """A ``Client`` on a running scheduler, or a ``SettingError`` naming ``--scheduler`` (one line, exit 2): a
    ``tls://`` address without the dask config's certificates, or an address where no dask scheduler answers
    (nothing listening, another service: its bytes read as a dask frame once asked for 3 EiB)."""
    if address.startswith(("tls://", "wss://")):
        missing = [k for k in TLS_KEYS if not dask.config.get(k, None)]
        if missing:
            raise SettingError(
                "--scheduler",
                address,
                f"a {address.split(':')[0]}:// scheduler needs certificates: set "
                f"{' and '.join(missing)} (and client.key) in the dask config or as DASK_* variables "
                "(docs/scale.md)",
            )
    try:
        return Client(address)
    except (OSError, MemoryError, ValueError, TypeError, EOFError, asyncio.TimeoutError) as e:
        why = " ".join(str(e).split())[:160] or type(e).__name__
        raise SettingError(
            "--scheduler",
            address,
            f"no dask scheduler answered there ({type(e).__name__}: {why}); "
            "is it a running scheduler's address (its default port is 8786)?",
        ) from None


def result_of(fut: Any, what: str) -> Any:
    """``fut.result()``, or a ``ClusterError`` (one line) when it was lost with a worker (``LOST``): the scheduler
    re-runs a task whose worker died up to its ``allowed-failures``; beyond that, or with its inputs gone, the
    verb stops here instead of ending in dask's traceback."""
    try:
        return fut.result()
    except LOST as e:
        raise ClusterError(
            f"{what}: lost on the cluster ({type(e).__name__}: {' '.join(str(e).split())[:120]}); "
            "nothing replaced (run the verb again; see the scheduler's log for the dead worker)"
        ) from None


def workers_of(client: Client) -> list[str]:
    """The workers' addresses, sorted: the one order data and work are placed in (determinism)."""
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


def in_workspace(ws: str | Path) -> None:
    """A task's first step on a worker: the caller's workspace (catalog overrides, data/, features/)."""
    if workspace_root() != Path(ws):
        set_workspace(ws)


def call(ws: str | Path, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` on a worker, in the caller's workspace."""
    in_workspace(ws)
    return fn(*args, **kwargs)

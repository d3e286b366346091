"""How OpenMP waits and how many threads a LightGBM fit uses: one policy, set by every entry point.

OpenMP's default wait policy keeps a thread that waits at a barrier spinning before it sleeps; on cores other
processes share, the spinning thread takes the time slice the thread it waits for needs (one shipped evaluation
took 1,112 s instead of 39 s until ``OMP_WAIT_POLICY=PASSIVE`` was set, with identical numbers: issue 45).
OpenMP reads the policy once, when its library loads (with LightGBM's), so ``configure`` runs before that: in the
CLI (``earlyeval.__main__``), in the offline packages that load LightGBM (``earlyeval.fitting``), in the backends
and on every dask worker (``scale.cluster``; an existing cluster's workers: ``dask worker --preload
earlyeval.model.threads``).

The thread count: LightGBM's trees do not depend on it (``deterministic=True``; measured bit-equal boosters with
1, 2 and 3 threads), so a fit uses the cores other processes leave free, at most the configured ``n_jobs``
(``fit_threads``), through LightGBM's own process-wide cap (``LGBM_SetMaxThreads``, its public C API): the model
file keeps the configured ``num_threads``, so the same data gives the same bytes under any load.  A user's own
choice wins: ``OMP_WAIT_POLICY`` as set; ``EARLYEVAL_THREADS`` or ``OMP_NUM_THREADS`` fix the count.  BLAS threads
are left as they are: a BLAS reduction's last bits can depend on its thread count.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from earlyeval.core.env import env_int
from earlyeval.model.lgbm_capi import LibraryUnavailable, library

log = logging.getLogger(__name__)

WAIT_POLICY = "OMP_WAIT_POLICY"
PASSIVE = "PASSIVE"
REMEASURE_S = 30.0  # how long a measure of the free cores is trusted
SAMPLE_S = 0.1  # the window it is measured over
_OPENMP = ("libgomp", "libiomp", "libomp")

_lock = threading.Lock()
_measured: tuple[float, int] | None = None  # (when, free cores)


def openmp_loaded() -> bool:
    """Whether an OpenMP runtime is already mapped in this process (then it has read its wait policy)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:  # not Linux: unknown, assume not
        return False
    return any(lib in maps for lib in _OPENMP)


def configure(env: MutableMapping[str, str] | None = None) -> str:
    """``OMP_WAIT_POLICY=PASSIVE`` unless the user set a policy; the policy in effect for OpenMP loaded from now
    on (this process's, if OpenMP is not loaded yet, and its children's: a LocalCluster's workers inherit it)."""
    env = os.environ if env is None else env
    own = env.get(WAIT_POLICY, "").strip()
    if own:
        return own
    env[WAIT_POLICY] = PASSIVE
    if env is os.environ and openmp_loaded():
        log.info(
            "OpenMP was loaded before %s could be set: this process keeps OpenMP's default wait policy "
            "(set %s=%s in the environment before starting Python to change it)",
            WAIT_POLICY,
            WAIT_POLICY,
            PASSIVE,
        )
    return PASSIVE


def fixed_threads() -> int | None:
    """The thread count the user fixed (``EARLYEVAL_THREADS``, else ``OMP_NUM_THREADS``), or None."""
    if os.environ.get("EARLYEVAL_THREADS", "").strip():
        return env_int("EARLYEVAL_THREADS", 1, lo=1, hi=4096)
    # OpenMP's list form "4,2": the outer level
    raw = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    return max(int(raw), 1) if raw.isdigit() else None  # a malformed value: OpenMP ignores it too


def cpu_budget() -> int:
    """The cores this process may run on: its CPU affinity, within its cgroup's quota (``cpu.max``)."""
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        n = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            n = min(n, max(int(int(quota) / int(period)), 1))
    except (OSError, ValueError):
        pass
    return max(n, 1)


def _stat_busy() -> tuple[float, float] | None:
    """(busy ticks, all ticks) of every CPU since boot, from /proc/stat (None where there is none)."""
    try:
        first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    ticks = [float(x) for x in first[1:9]]  # user nice system idle iowait irq softirq steal
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def others_busy(window: float = SAMPLE_S) -> float | None:
    """How many cores other processes kept busy over ``window`` seconds (this process's own CPU taken out)."""
    a, own_a = _stat_busy(), sum(os.times()[:2])
    if a is None:
        return None
    time.sleep(window)
    b, own_b = _stat_busy(), sum(os.times()[:2])
    if b is None or b[1] <= a[1]:
        return None
    online = os.cpu_count() or 1
    busy_share = (b[0] - a[0]) / (b[1] - a[1])  # of all online CPUs
    elapsed = max(window, 1e-3)
    return max(busy_share * online - (own_b - own_a) / elapsed, 0.0)


def free_cores() -> int:
    """Cores of ``cpu_budget`` that other processes leave free (at least 1), measured at most every
    ``REMEASURE_S`` seconds."""
    global _measured
    with _lock:
        now = time.monotonic()
        if _measured is not None and now - _measured[0] < REMEASURE_S:
            return _measured[1]
        budget = cpu_budget()
        busy = others_busy()
        online = os.cpu_count() or budget
        free = budget if busy is None else min(budget, int(online - busy + 0.5))
        _measured = (now, max(free, 1))
        return _measured[1]


def fit_threads(n_jobs: int) -> int:
    """The threads a fit configured for ``n_jobs`` uses: the user's fixed count, else the free cores; at most
    ``n_jobs``."""
    fixed = fixed_threads()
    return max(min(n_jobs, fixed if fixed is not None else free_cores()), 1)


def limit_lightgbm(n_jobs: int, lib: Any = None) -> int:
    """Cap LightGBM's threads in this process at ``fit_threads(n_jobs)`` (``LGBM_SetMaxThreads``; the model's
    own ``num_threads`` unchanged); the cap set, or ``n_jobs`` where the library has no such call."""
    n = fit_threads(n_jobs)
    if lib is None:
        try:
            lib = library()
        except LibraryUnavailable:
            return n_jobs
    setter = getattr(lib, "LGBM_SetMaxThreads", None)
    if setter is None:  # LightGBM < 4.2
        return n_jobs
    setter(ctypes.c_int(n))
    return n


def dask_setup(worker: Any = None) -> None:
    """``dask worker --preload earlyeval.model.threads``: the policy before the worker runs anything."""
    configure()


__all__ = [
    "WAIT_POLICY",
    "configure",
    "cpu_budget",
    "fit_threads",
    "free_cores",
    "limit_lightgbm",
    "openmp_loaded",
    "others_busy",
]

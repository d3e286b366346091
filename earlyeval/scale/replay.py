"""``earlyeval score`` on a cluster: the runs replayed through the Monitor on the workers, in chunks.

Each worker loads the model directory with the driver's checks and pin (an edited or swapped directory is never
used) and replays exactly as in-process. docs/scale.md, "Each stage in detail".
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Callable

from distributed import Client

from earlyeval.core.errors import ClusterError, ModelDirError, SettingError
from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.fitting.warm import warm_start
from earlyeval.live.monitor import Monitor
from earlyeval.live.replay import replay
from earlyeval.model.signature import check_pin
from earlyeval.scale.cluster import LOST, task_tries

log = logging.getLogger(__name__)
RUNS_PER_TASK = 32
# per worker thread (a worker process may run several threads, and a LocalCluster without processes runs every
# worker in one process): the monitor of (model dir, thresholds, warm runs, ...); a Monitor is not shared
# between threads, since replaying a run changes its state
_LOCAL = threading.local()


def _monitor(
    model_dir: str,
    thresholds: Any,
    warm: list[Trajectory] | None,
    tasks: dict[str, Task],
    as_of: Any,
    same_agent: str | None,
    halt_on: str = "both",
    warm_rule: str = "certify",
    pin: dict[str, Any] | None = None,
) -> Monitor:
    if pin is None:
        raise ModelDirError(
            model_dir, "<pin>", "no pin of the driver's check came with the task; nothing scored"
        )
    key = (
        model_dir,
        repr(sorted(pin.items())),
        repr(thresholds),
        tuple(t.run_id for t in warm or ()),
        repr(as_of),
        same_agent,
        halt_on,
        warm_rule,
    )
    if not hasattr(_LOCAL, "monitors"):
        _LOCAL.monitors = {}
    cache: dict[tuple, Monitor] = _LOCAL.monitors
    mon = cache.get(key)
    if mon is None:
        cache.clear()  # one model at a time per worker thread
        try:
            mon = Monitor.load(
                model_dir,
                thresholds=thresholds,
                halt_on=halt_on,
                require_signature=pin["require_signature"],
            )
        except SettingError as e:  # no key here: the driver's environment is not the worker's
            raise SettingError(
                f"{e.source} of a worker",
                e.key,
                f"{e.reason} (a worker checks the signature too: "
                "give the workers the key in their environment)",
            ) from None
        check_pin(mon.bundle, pin, model_dir)
        if warm:
            mon.use_warm_start(
                warm_start(mon, warm, tasks, as_of=as_of, same_agent=same_agent, rule=warm_rule)
            )
        cache[key] = mon
    return mon


def replay_chunk(
    model_dir: str,
    thresholds: Any,
    warm: list[Trajectory] | None,
    runs: list[Trajectory],
    tasks: dict[str, Task],
    as_of: Any,
    same_agent: str | None,
    halt_on: str = "both",
    warm_rule: str = "certify",
    pin: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One task: the records of ``runs``, replayed by this worker's monitor (loaded, checked against ``pin`` and
    warmed as the driver's)."""
    mon = _monitor(model_dir, thresholds, warm, tasks, as_of, same_agent, halt_on, warm_rule, pin)
    return [replay(mon, t, tasks.get(t.task_id), as_of, same_agent) for t in runs]


def replay_runs(
    client: Client,
    model_dir: str | Path,
    thresholds: Any,
    warm: list[Trajectory] | None,
    trajs: list[Trajectory],
    tasks: dict[str, Task],
    as_of: Any,
    same_agent: str | None,
    progress: Callable[[str], None] | None = None,
    runs_per_task: int = RUNS_PER_TASK,
    halt_on: str = "both",
    warm_rule: str = "certify",
    pin: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Every run's replay record, in order, computed on the cluster; ``pin``: what the driver verified
    (``signature.pin_of``).  A chunk lost with a worker (killed, or its scattered inputs gone: ``LOST``) is
    submitted again, inputs scattered anew, up to ``task_tries()`` times in all; then a ``ClusterError``.  An
    error the task itself raised (a refused model dir ...) is not retried: it fails the verb as it is."""
    chunks = [trajs[i : i + runs_per_task] for i in range(0, len(trajs), runs_per_task)]
    done: dict[int, list[dict[str, Any]]] = {}
    tries, last = task_tries(), None
    for attempt in range(1, tries + 1):
        tasks_f = client.scatter(tasks, broadcast=True, hash=False)
        warm_f = client.scatter(list(warm), broadcast=True, hash=False) if warm else None
        futs = {
            k: client.submit(
                replay_chunk,
                str(Path(model_dir).resolve()),
                thresholds,
                warm_f,
                chunks[k],
                tasks_f,
                as_of,
                same_agent,
                halt_on,
                warm_rule,
                pin,
                pure=False,
            )
            for k in range(len(chunks))
            if k not in done
        }
        for k, fut in futs.items():
            try:
                done[k] = fut.result()
            except LOST as e:
                last = e
                continue
            if progress:
                progress(f"score: {len(done)}/{len(chunks)} chunks replayed")
        if len(done) == len(chunks):
            return [r for k in range(len(chunks)) for r in done[k]]
        log.warning(
            "score: %d of %d chunks lost on the cluster (%s); try %d of %d",
            len(chunks) - len(done),
            len(chunks),
            type(last).__name__,
            attempt,
            tries,
        )
    raise ClusterError(
        f"score: {len(chunks) - len(done)} of {len(chunks)} chunks of runs were lost on the cluster "
        f"{tries} times ({type(last).__name__}: {' '.join(str(last).split())[:120]}); nothing written "
        "(EARLYEVAL_TASK_TRIES sets the tries)"
    )

"""Score a folder of someone else's completed runs with a trained model.

Each run is read by its format's ingestor and replayed step by step through a ``Monitor``, as a live loop
would feed it, so ``score.json``'s numbers are the offline evaluation's. What it reads, checks and writes:
docs/monitor.md, "Replaying finished runs".
"""

from __future__ import annotations

import errno
import functools
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from earlyeval.config.catalog import data_root as _data_root
from earlyeval.core.atomic import folder_lock, json_bytes, write_files
from earlyeval.core.errors import ScoreRefusedError, WriteError
from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.fitting.warm import _scorable  # warm_start: score_runs' K option
from earlyeval.fitting.warm import warm_start as fit_warm
from earlyeval.live.monitor import Monitor
from earlyeval.live.replay import replay
from earlyeval.model.overlap import training_overlap
from earlyeval.model.signature import pin_of
from earlyeval.model.thresholds import source_of
from earlyeval.workflows.score_checks import (
    MIXED,
    bench_check,
    check_runs_path,
    date_runs,
    load_task_table,
)
from earlyeval.workflows.score_csv import csv_text
from earlyeval.workflows.score_metrics import labelled_metrics, shadow_block
from earlyeval.workflows.score_options import ScoreOptions
from earlyeval.workflows.score_pass import pass_block, replay_pass
from earlyeval.workflows.score_read import RunsRead, read_folder
from earlyeval.workflows.score_read import (
    read_runs as read_runs,  # score's readers, where callers found them
)
from earlyeval.workflows.score_read import run_specs as run_specs
from earlyeval.workflows.score_usage import savings_summary, usage_of

log = logging.getLogger(__name__)

# ------------------------------------------------------------------ main


def score_runs(
    model_dir: str | Path,
    runs_path: str | Path,
    options: ScoreOptions,
    *,
    tasks: dict[str, Task] | Path | None = None,
    progress: bool = True,
    monitor: Any = None,
    replay_all: Any = None,
) -> dict[str, Path]:
    """Replay the runs under ``runs_path`` through the Monitor as ``options`` say; write ``score.json`` (see module doc).

    The keywords are what a record of settings cannot hold: ``tasks`` (Task objects by id, or a task table's
    path; default the model's benchmark's table, ``score_checks.load_task_table``), ``progress`` (bars on a
    terminal), ``monitor`` (a loaded Monitor used in place of loading ``model_dir``) and
    ``replay_all(trajs, tasks, as_of, same_agent, warm_runs, pin=...)``: the records of every run, replayed elsewhere
    by monitors loaded, checked against ``pin`` (``signature.pin_of``: this load's manifest hash, thresholds and
    ``require_signature``) and warmed as this one (a cluster: ``earlyeval.scale.replay``); default here.

    Raises ``NothingScoredError`` (and writes nothing) when no run was read."""
    o = options
    got = read_folder(runs_path, o, _checked_call(runs_path, o, monitor, replay_all), progress)
    mon = monitor or Monitor.load(
        model_dir,
        thresholds=o.thresholds,
        halt_on=o.halt_on,
        require_signature=o.require_signature,
        mode=o.mode,
    )
    bundle = mon.bundle
    overlap = training_overlap(
        bundle, got.trajs, got.fmt if got.fmt != MIXED else {s.name: s.format for s in got.specs}
    )
    if overlap["warning"]:
        log.warning("%s", overlap["warning"])
    tasks_by_id, task_info, benches = _task_table(bundle, got, tasks, model_dir, o.cross_bench)
    cutoff, dates = date_runs(
        got.trajs, o.as_of, [f.name for f in bundle.featurizer.families], ", ".join(got.formats)
    )
    warm_runs, warm_info = _warm_runs(
        mon,
        got.trajs,
        o.warm_start,
        o.seed,
        tasks_by_id,
        cutoff,
        o.same_agent,
        o.warm_rule,
        runs_path,
    )
    records, the_pass = _records(
        mon, got.trajs, tasks_by_id, cutoff, warm_runs, o, replay_all, progress
    )
    fmt_of = {s.name: s.format for s in got.specs}
    for t, r in zip(got.trajs, records):  # each run's own format (per_run.csv's format column)
        r["format"] = fmt_of.get(str(t.meta.get("run")), got.fmt)
    model_th = bundle.manifest.get("thresholds") or bundle.thresholds
    th_source = (
        "pass" if o.pass_replay else source_of(mon.thresholds, model_th, warm=warm_info is not None)
    )
    report: dict[str, Any] = {
        **_scored_with(model_dir, runs_path, got, mon, model_th, th_source),
        "as_of": "each run's own date" if cutoff is None else (cutoff or "all submissions"),
        "as_of_detail": dates,  # how many runs were dated by their catalog entry, by their files, not at all
        "bench_check": benches,
        "catalog_hint": got.hint,
        "same_agent": o.same_agent,
        "task_table": task_info,  # where the tasks came from (--tasks, or the model's benchmark's table) and how many
        "warm_start": warm_info,
        **_tallies(mon, got, records, overlap, the_pass, o.pass_workers),
    }
    report["n_scored"] = sum(_scorable(t, r) for t, r in zip(got.trajs, records))
    if report["n_scored"]:
        warm_ids = {t.run_id for t in warm_runs} or {
            r["run_id"] for r in records if r.get("audited")
        }
        report.update(
            labelled_metrics(mon, got.trajs, records, warm_ids, th_source, o.what_if_taus)
        )
        if mon.shadow:
            report["shadow"] = shadow_block(records)
    elif o.what_if_taus is not None and o.what_if_taus is not False:
        report["what_if"] = None
        log.warning("what-if: no labelled runs with probabilities at every prefix; no frontier")
    report["per_run"] = [
        {**r, "p_success": _nan_none(r["p_success"]), "p_failure": _nan_none(r["p_failure"])}
        for r in records
    ]

    return write_outputs(got.dest, report, records, o.csv)


def _checked_call(
    runs_path: str | Path, options: ScoreOptions, monitor: Any, replay_all: Any
) -> Path:
    """What ``options`` cannot check alone, refused before any work; the data root."""
    check_runs_path(Path(runs_path))
    if monitor is not None and options.thresholds is not None:
        raise ValueError("give thresholds to Monitor.load, or here, not both")
    if options.pass_replay and replay_all is not None:
        raise ValueError(
            "--pass replays the folder as one pass in this process: not with --warm-start or --scheduler"
        )
    return _data_root(options.data_root)


def _task_table(
    bundle: Any,
    got: RunsRead,
    tasks: dict[str, Task] | Path | None,
    model_dir: str | Path,
    cross_bench: bool,
) -> tuple[dict[str, Task], dict[str, Any], dict[str, Any]]:
    """The tasks by id, where they came from, and the benchmark check (``score_checks.bench_check``)."""
    try:
        tasks_by_id, task_info = load_task_table(bundle, tasks, model_dir)
    except ScoreRefusedError:
        # a model of another benchmark: that refusal first
        bench_check(bundle, got.specs, got.trajs, got.fmt, {}, cross_bench)
        raise
    return (
        tasks_by_id,
        task_info,
        bench_check(bundle, got.specs, got.trajs, got.fmt, tasks_by_id, cross_bench),
    )


def _records(
    mon: Any,
    trajs: list[Trajectory],
    tasks_by_id: dict[str, Task],
    cutoff: str | None,
    warm_runs: list[Trajectory],
    o: ScoreOptions,
    replay_all: Any,
    progress: bool,
) -> tuple[list[dict[str, Any]], Any]:
    """One record per run and the pass (None unless ``o.pass_replay``): the folder replayed as one pass, else
    run by run (here, or by ``replay_all``)."""
    if o.pass_replay:
        records, the_pass = replay_pass(
            mon,
            trajs,
            tasks_by_id,
            cutoff,
            o.same_agent,
            audit_share=o.audit_share,
            seed=o.seed,
            workers=o.pass_workers,
            usage_of=usage_of,
        )
        return records, the_pass
    if (
        replay_all is not None
    ):  # the workers load the directory themselves: they must load the one checked here
        replay_all = functools.partial(replay_all, pin=pin_of(mon.bundle, o.require_signature))
    return _replayed(
        mon, trajs, tasks_by_id, cutoff, o.same_agent, warm_runs, replay_all, progress
    ), None


def _scored_with(
    model_dir: str | Path,
    runs_path: str | Path,
    got: RunsRead,
    mon: Any,
    model_th: dict[str, Any],
    th_source: str,
) -> dict[str, Any]:
    """score.json's opening keys: which model scored which runs, read how, under which thresholds."""
    return {
        "model": str(Path(model_dir).resolve()) if model_dir else None,
        "model_content_hash": mon.bundle.manifest.get("content_hash"),
        "runs_path": str(Path(runs_path).resolve()),
        "format": got.fmt,
        "format_detected": got.detected,
        "formats": got.formats,  # runs read per format (a mixed folder under --format auto: several)
        "format_detection": got.detection,  # files sniffed, the prefix read of each, run files per format
        "runs": [
            {
                "name": s.name,
                "agent": s.agent,
                "format": s.format,
                "folder": s.folder,
                "glob": s.glob,
                "labels": [f"{l.format}:{l.path}" if l.path else l.format for l in s.labels],
                "from_catalog": s.options.get("bench"),
            }
            for s in got.specs
        ],
        "thresholds": mon.thresholds,
        "halt_on": mon.halt_on,
        # shadow: the monitor decided and recorded at every step and halted nothing; every number below is what
        # it would have done (a record's "halted" is a would-be halt, flagged "shadow")
        "mode": "shadow"
        if mon.shadow
        else "halt",  # which predicted outcomes halted (policy.halting_pair: an off side never halts)
        "thresholds_source": th_source,  # model (thresholds.json) / override (--thresholds) / warm start
        "model_thresholds": {
            k: model_th[k] for k in ("success", "failure", "min_halt_step") if k in model_th
        },
    }


def _tallies(
    mon: Any,
    got: RunsRead,
    records: list[dict[str, Any]],
    overlap: dict[str, Any],
    the_pass: Any,
    pass_workers: int,
) -> dict[str, Any]:
    """score.json's counts over the runs: read, labelled, halted, skipped, warned, and what the halts saved."""
    trajs = got.trajs
    return {
        "predictor": mon.loaded.predictor_kind,
        "n_trajectories": len(trajs),
        "n_labelled": sum(t.outcome is not None for t in trajs),
        # a shadow monitor halts nothing: its would-be halts are counted apart
        "n_halted": 0 if mon.shadow else sum(r["halted"] for r in records),
        "n_would_halt": sum(r["halted"] for r in records) if mon.shadow else None,
        # halts by basis (policy.HALT_RULES): "task prior" = at step 1 or before any action, the task alone decided
        "halted_by_rule": dict(Counter(r.get("halt_rule") or "?" for r in records if r["halted"])),
        "skipped": got.skipped,
        "ingest": got.reports,
        "training_overlap": overlap,
        "warnings": dict(Counter(w for r in records for w in r["warnings"])),
        # runs whose task is in no label list: scored as failures (the SWE-bench convention), listed here
        "not_in_label_list": sorted(
            r["run_id"] for t, r in zip(trajs, records) if r["not_in_label_list"]
        ),
        "n_runs_with_errors": sum(bool(r["errors"]) for r in records),
        # every run, labelled or not: what the monitor's halts saved where usage is known
        "savings": None if mon.shadow else savings_summary(records),
        "would_have_saved": savings_summary(records) if mon.shadow else None,
        "pass": pass_block(the_pass, records, pass_workers, savings_summary(records))
        if the_pass
        else None,
    }


def _warm_runs(
    mon: Any,
    trajs: list[Trajectory],
    warm_start: int,
    seed: int,
    tasks_by_id: dict[str, Task],
    cutoff: str | None,
    same_agent: str | None,
    warm_rule: str,
    runs_path: str | Path,
) -> tuple[list[Trajectory], dict[str, Any] | None]:
    """The K labelled runs completed first (a seeded draw) and what ``fitting.warm.warm_start`` fitted on them."""
    if not warm_start:
        return [], None
    lab = [t for t in trajs if t.outcome is not None]
    if len(lab) < warm_start:
        raise ValueError(
            f"--warm-start {warm_start}: only {len(lab)} labelled runs under {runs_path}"
        )
    pick = np.random.default_rng(seed).choice(len(lab), size=warm_start, replace=False)
    warm_runs = [lab[i] for i in sorted(pick)]
    warm_info = mon.use_warm_start(
        fit_warm(mon, warm_runs, tasks_by_id, as_of=cutoff, same_agent=same_agent, rule=warm_rule)
    )
    warm_info["run_ids"] = sorted({t.run_id for t in warm_runs})
    return warm_runs, warm_info


def _replayed(
    mon: Any,
    trajs: list[Trajectory],
    tasks_by_id: dict[str, Task],
    cutoff: str | None,
    same_agent: str | None,
    warm_runs: list[Trajectory],
    replay_all: Any,
    progress: bool,
) -> list[dict[str, Any]]:
    """One record per run: its replay through the Monitor (here, or by ``replay_all``), the warm runs
    completed in full, and the tokens and dollars spent and saved."""
    from tqdm.auto import tqdm

    if replay_all is None:
        # None: on a terminal only
        records = [
            replay(mon, t, tasks_by_id.get(t.task_id), cutoff, same_agent)
            for t in tqdm(
                trajs,
                desc="score: replay",
                unit="run",
                leave=False,
                disable=True if not progress or len(trajs) < 20 else None,
            )
        ]
    else:
        records = replay_all(trajs, tasks_by_id, cutoff, same_agent, warm_runs)
    warm_ids = {t.run_id for t in warm_runs}
    for r in records:
        if r["run_id"] in warm_ids:  # completed in full: its label was used, it is never halted
            r.update(
                warm=True,
                halted=False,
                halt_t=None,
                halt_step_index=None,
                predicted=None,
                p_success_at_halt=None,
                p_failure_at_halt=None,
                top_features=[],
                reason="warm-start run: completed, its label used to certify the thresholds",
            )
    for t, r in zip(trajs, records):
        r["usage"] = usage_of(t, r["halt_t"] if r["halted"] else None)
    return records


def write_outputs(
    dest: Path,
    report: dict[str, Any],
    records: list[dict[str, Any]],
    csv: str | Path | bool | None = None,
) -> dict[str, Path]:
    """score.json and per_run.csv of one run, written as a set: under the folder's lock (``atomic.folder_lock``:
    one writer at a time) both are staged and fsynced before either replaces its old copy, so two concurrent
    scores on one ``--out`` never leave a mixed pair, and a full disk replaces nothing (``WriteError``)."""
    if dest.exists() and not dest.is_dir():
        raise WriteError(
            str(dest / "score.json"),
            f"--out {dest} is an existing file, not a folder",
            errno.ENOTDIR,
        )
    paths = {"score": dest / "score.json"}
    if csv is not False:
        paths["csv"] = Path(csv) if csv not in (None, True) else dest / "per_run.csv"
        report["per_run_csv"] = str(paths["csv"])
    files = {paths["score"]: json_bytes(report)}
    if "csv" in paths:
        files[paths["csv"]] = csv_text(records).encode("utf-8")
    with folder_lock(dest):
        write_files(files)
    return paths


def _nan_none(xs: list[float]) -> list[float | None]:
    return [None if x != x else x for x in xs]

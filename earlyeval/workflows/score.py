"""Score a folder of someone else's completed runs with a trained model.

Each run is read by its format's ingestor and replayed step by step through a ``Monitor``, as a live loop
would feed it, so ``score.json``'s numbers are the offline evaluation's. What it reads, checks and writes:
docs/monitor.md, "Replaying finished runs".
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from earlyeval.config.catalog import LabelSpec, RunSpec, available_benches, load_catalog
from earlyeval.config.catalog import data_root as _data_root
from earlyeval.config.prices import PriceError, run_cost
from earlyeval.config.workspace import workspace_root
from earlyeval.core.atomic import folder_lock, json_bytes, write_files
from earlyeval.core.decision import HALTING_CONTEXTS
from earlyeval.core.errors import CatalogError, ScoreRefusedError, WriteError
from earlyeval.core.trajectory import Task, Trajectory, fingerprint
from earlyeval.evaluation.blocks import agent_block, pooled_block
from earlyeval.fitting.metrics import apply_policy, outcome_metrics
from earlyeval.fitting.thresholds import DEFAULT_TAUS as GRID  # the threshold grid (one definition)
from earlyeval.fitting.thresholds import WarmStartRule
from earlyeval.fitting.warm import _scorable, runset_of  # warm_start: score_runs' K option
from earlyeval.fitting.warm import warm_start as fit_warm
from earlyeval.ingest import copy_of, discover, format_facts, ingest_run
from earlyeval.live.monitor import Monitor
from earlyeval.live.replay import replay
from earlyeval.model.overlap import training_overlap
from earlyeval.model.signature import pin_of
from earlyeval.model.thresholds import source_of
from earlyeval.workflows.score_checks import (
    MIXED,
    bench_check,
    catalog_hint,
    check_destination,
    check_runs_path,
    date_runs,
    detect_formats,
    label_spec,
    load_task_table,
    nothing_read,
    output_dir,
)
from earlyeval.workflows.score_csv import csv_text
from earlyeval.workflows.score_options import ScoreOptions
from earlyeval.workflows.score_pass import pass_block, pass_inconsistent, replay_pass
from earlyeval.workflows.score_usage import savings_summary, usage_of
from earlyeval.workflows.sweep import frontier

log = logging.getLogger(__name__)

# ------------------------------------------------------------------ runs


def run_specs(
    runs_path: Path,
    fmt: str,
    labels: str | None = None,
    agent: str | None = None,
    root: Path | None = None,
) -> list[RunSpec]:
    """The catalog entries that describe ``runs_path`` (with ``labels``/``agent`` overrides), else a generic one.
    ``root``: the data root catalog folders are relative to (default ``data_root()``)."""
    p = Path(runs_path).resolve()
    root = _data_root(root)
    # an unknown label format: a ValueError, before any read
    lspec = label_spec(labels) if labels else None
    specs = _catalog_specs(p, fmt, root)
    if not specs:
        # what the format declares about its files (ingest.format_facts)
        default_glob, inline = format_facts(fmt)
        folder, glob = (p.parent, p.name) if p.is_file() else (p, default_glob)
        name = agent or (p.name.split(".")[0] if p.is_file() else p.name)
        specs = [
            RunSpec(
                name=name,
                folder=str(folder),
                agent=name,
                scaffold=name,
                model="",
                format=fmt,
                glob=glob,
                labels=[LabelSpec("inline", "")] if inline else [],
            )
        ]
    out = []
    for s in specs:
        s.folder = (
            str((root / s.folder).resolve()) if not Path(s.folder).is_absolute() else s.folder
        )
        if lspec:
            s.labels = [lspec]
        if agent:
            s.agent = agent
        out.append(s)
    return out


def _catalog_specs(p: Path, fmt: str, root: Path | None = None) -> list[RunSpec]:
    """Catalog runs whose folder (or file) is ``p`` under ``root``, in format ``fmt`` ("auto": any)."""
    root = _data_root(root)
    found = []
    for toml in sorted(available_benches().values()):
        try:
            cat = load_catalog(toml)
        except (
            CatalogError
        ) as e:  # a bad catalog never stops scoring runs it does not describe: said, skipped
            log.warning("earlyeval score: catalog skipped (it cannot describe these runs): %s", e)
            continue
        for s in cat.runs:
            if s.format != fmt and fmt != "auto":
                continue
            folder = (root / s.folder).resolve()
            if folder == p or (
                p.is_file() and folder == p.parent and (p.name == s.glob or p.match(s.glob))
            ):
                found.append(
                    dataclasses.replace(
                        s,
                        options={**s.options, "bench": cat.bench},
                        glob=p.name if p.is_file() else s.glob,
                    )
                )
    return found


def read_runs(
    specs: list[RunSpec], progress: bool = False
) -> tuple[list[Trajectory], list[dict[str, Any]], list[dict[str, Any]]]:
    """Trajectories of every spec via ``ingest.ingest_run``; (trajectories, skipped files, per-spec ingest reports).
    ``progress``: a bar per spec with its number of files (hence an ETA), on a terminal only."""
    from tqdm.auto import tqdm

    trajs: list[Trajectory] = []
    skipped: list[dict[str, Any]] = []
    reports = []
    for s in specs:
        total = len(discover(Path(s.folder), s)) if progress and Path(s.folder).exists() else None
        with tqdm(
            total=total,
            desc=f"score: read {s.name[:40]}",
            unit="file",
            disable=None if progress else True,
            leave=False,
        ) as bar:
            ts, rep = ingest_run(s, s.options.get("bench", "score"), Path("/"), progress=bar)
            trajs += ts
        skipped += [{**x, "run": s.name} for x in rep.skipped]
        reports.append(rep.to_dict())
    return trajs, skipped, reports


# ---------------------------------------------------------------- replay

THRESHOLD_METHODS = {
    "model": "the model directory's thresholds.json",
    "override": "given at run time (--thresholds)",
    "warm start": "warm start",
    "pass": "the pass's, per run: label-free, then certified by its audit runs",
}


def metric_blocks(
    rs: Any,
    thresholds: dict[str, Any],
    warm: np.ndarray | None = None,
    source: str | None = None,
    halts: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Per-agent blocks (as in loao.json) and, for several agents, the pooled block.

    ``warm``: runs of a warm start, completed at full cost (never halted); the policy metrics count them.
    ``source``: where the thresholds came from (``thresholds.source_of``).  ``halts``: (t_halt, predicted
    code) per run of ``rs``, the halts the monitor made: the policy metrics count those (a run whose
    context lets no halt is not halted), so that the table and the count of halted runs are one set of numbers."""

    # blocks read min_halt_step only
    cfg = WarmStartRule(taus=(), min_halt_step=int(thresholds.get("min_halt_step", 1)))
    source = source or ("model" if warm is None else "warm start")
    th = {
        "success": float(thresholds["success"]),
        "failure": float(thresholds["failure"]),
        "method": THRESHOLD_METHODS.get(source, source),
    }
    agents = list(dict.fromkeys(rs.agents))
    blocks = {a: agent_block(rs.of_agent(a), th, cfg) for a in agents}
    pooled = pooled_block([(rs.of_agent(a), th) for a in agents], cfg) if len(agents) > 1 else None
    if halts is None and warm is not None and warm.any():
        halts = apply_policy(rs, th["success"], th["failure"], cfg.min_halt_step)
        halts[0][warm], halts[1][warm] = 0, -1
    if halts is not None:
        t_halt, pred = halts
        agent = np.asarray(rs.agents)
        for a in agents:
            m = agent == a
            blocks[a].update(
                outcome_metrics(
                    rs.y[m],
                    rs.T[m],
                    t_halt[m],
                    pred[m],
                    [x for x, k in zip(rs.in_tokens, m) if k],
                    [x for x, k in zip(rs.out_tokens, m) if k],
                )
            )
            if warm is not None and warm.any():
                blocks[a]["warm_runs"] = int(warm[m].sum())
        if pooled is not None:
            pooled.update(outcome_metrics(rs.y, rs.T, t_halt, pred, rs.in_tokens, rs.out_tokens))
    return {"agents": blocks, "pooled": pooled}


# --------------------------------------------------------------- what-if

WHAT_IF_KEYS = (
    "halted_fraction",
    "halted_accuracy",
    "outcome_accuracy",
    "steps_saved",
    "steps_saved_task_skip",
    "steps_saved_in_run",
    "resolve_rate_shift_pp",
    "input_tokens_saved",
    "output_tokens_saved",
)


def what_if(
    rs: Any,
    taus: Any,
    min_t: int = 1,
    warm: np.ndarray | None = None,
    costs: list[Any] | None = None,
) -> dict[str, Any]:
    """The labelled runs' metrics at every (tau_s, tau_f) of a grid, pooled: ``metrics.apply_policy`` and
    ``metrics.outcome_metrics`` (the one halting rule and metric set), plus dollars saved on the runs with a
    known cost; and the savings/accuracy frontier (``sweep.frontier``: no other point saves more steps at a
    higher outcome accuracy).  Warm-start runs complete in full at every point."""
    import pandas as pd

    rows = []
    taus = [float(x) for x in taus]
    for ts in taus:
        for tf in taus:
            t_halt, pred = apply_policy(rs, ts, tf, min_t)
            if warm is not None:
                t_halt[warm], pred[warm] = 0, -1
            m = outcome_metrics(rs.y, rs.T, t_halt, pred, rs.in_tokens, rs.out_tokens)
            row: dict[str, Any] = {"tau_s": ts, "tau_f": tf, **{k: m.get(k) for k in WHAT_IF_KEYS}}
            if costs is not None:
                known = [(c, int(t)) for c, t in zip(costs, t_halt) if c is not None]
                row["cost_usd_saved"] = (
                    sum(c.total - c.upto(t) for c, t in known if t > 0) if known else None
                )
            rows.append(row)
    df = pd.DataFrame(rows).assign(mode="what_if", agent="pooled")
    f = frontier(df.astype({"steps_saved": float, "outcome_accuracy": float}), "what_if")
    return {
        "runs": int(len(rs)),
        "taus": taus,
        "min_halt_step": int(min_t),
        "rule": "metrics.apply_policy over the replayed probabilities; steps_saved_task_skip = halts at t <= 1",
        "grid": rows,
        "frontier": [rows[i] for i in f.index],
    }


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
    got = _read(runs_path, o, _checked_call(runs_path, o, monitor, replay_all), progress)
    mon = monitor or Monitor.load(
        model_dir, thresholds=o.thresholds, halt_on=o.halt_on, require_signature=o.require_signature
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
            _labelled_metrics(mon, got.trajs, records, warm_ids, th_source, o.what_if_taus)
        )
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


@dataclasses.dataclass
class _Read:
    """The runs as read: their format (``MIXED`` for several; ``formats``: runs read per format; ``detection``:
    what --format auto read, or None), the output folder, specs and trajectories."""

    fmt: str
    detected: bool
    dest: Path
    specs: list[RunSpec]
    hint: str | None
    trajs: list[Trajectory]
    skipped: list[dict[str, Any]]
    reports: list[dict[str, Any]]
    formats: dict[str, int] = dataclasses.field(default_factory=dict)
    detection: dict[str, Any] | None = None


def _read(runs_path: str | Path, o: ScoreOptions, root: Path, progress: bool) -> _Read:
    """The format(s), the output folder checked (another scoring there: refused before the read) and the runs
    read, before the model is loaded: a wrong --format fails fast.  --format auto on a folder of several
    formats reads each format's files as that format (``_mixed_specs``)."""
    fmt, found, p = o.fmt, None, Path(runs_path)
    if o.fmt == "auto":
        found = detect_formats(p, _catalog_specs(p.resolve(), "auto", root), progress=progress)
        fmt = next(iter(found.units)) if len(found.units) == 1 else MIXED
        log.info(
            "--format auto: %s",
            ", ".join(f"{f} ({len(u)} files)" for f, u in sorted(found.units.items())),
        )
    dest = output_dir(p, Path(o.out) if o.out else None, workspace_root() / "reports" / "score")
    check_destination(dest, p, fmt, o.force)
    specs = (
        _mixed_specs(p, found.units, o, root)
        if fmt == MIXED
        else run_specs(p, fmt, o.labels, o.agent, root=root)
    )
    hint = (
        None
        if any(s.options.get("bench") for s in specs)
        else catalog_hint(p, "auto" if fmt == MIXED else fmt, root)
    )
    if hint:
        log.warning("%s", hint)
    trajs, skipped, reports = read_runs(specs, progress=progress)
    trajs, copies = _first_copies(
        trajs
    )  # a run in two formats' files: once (each spec's copies: ingest)
    skipped = (found.skipped if found else []) + _once(skipped) + copies
    if not trajs:
        raise nothing_read(
            p,
            fmt if fmt != MIXED else f"auto ({', '.join(sorted(found.units))})",
            specs,
            reports,
            skipped,
        )
    by_run = {s.name: s.format for s in specs}
    formats = dict(sorted(Counter(by_run.get(str(t.meta.get("run")), fmt) for t in trajs).items()))
    return _Read(
        fmt,
        found is not None,
        dest,
        specs,
        hint,
        trajs,
        skipped,
        reports,
        formats,
        found.summary() if found else None,
    )


def _first_copies(trajs: list[Trajectory]) -> tuple[list[Trajectory], list[dict[str, Any]]]:
    """The runs of the folder with a copy (the same content in files of two formats) counted once
    (``ingest.copy_of``: the skip and the warning name both files)."""
    seen: dict[str, str] = {}
    kept, skips = [], []
    for t in trajs:
        dup = copy_of(fingerprint(t), str(t.meta.get("source_file", "?")), seen, "score: ")
        if dup is None:
            kept.append(t)
        else:
            skips.append({**dup, "run": t.meta.get("run")})
    return kept, skips


def _once(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each skip once: two formats' specs over one folder both name a dangling link in it."""
    seen: set[tuple[Any, ...]] = set()
    out = []
    for x in entries:
        key = tuple(sorted((k, str(v)) for k, v in x.items() if k != "run"))
        if key not in seen:
            seen.add(key)
            out.append(x)
    return out


def _mixed_specs(
    p: Path, units: dict[str, list[Path]], o: ScoreOptions, root: Path
) -> list[RunSpec]:
    """One generic spec per format found, named ``<folder>[<format>]`` (its agent too, unless --agent) and
    reading only the files detected as that format (``options["files"]``: its glob may list the others')."""
    out = []
    for fmt, us in sorted(units.items()):
        for s in run_specs(p, fmt, o.labels, o.agent, root=root):
            if not s.options.get(
                "bench"
            ):  # a generic spec: one per format, so that run ids stay apart
                s.name = s.scaffold = f"{p.resolve().name}[{fmt}]"
                s.agent = o.agent or s.name
            s.options = {**s.options, "files": [str(u) for u in us]}
            out.append(s)
    return out


def _task_table(
    bundle: Any,
    got: _Read,
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
    got: _Read,
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
        "halt_on": mon.halt_on,  # which predicted outcomes halted (policy.halting_pair: an off side never halts)
        "thresholds_source": th_source,  # model (thresholds.json) / override (--thresholds) / warm start
        "model_thresholds": {
            k: model_th[k] for k in ("success", "failure", "min_halt_step") if k in model_th
        },
    }


def _tallies(
    mon: Any,
    got: _Read,
    records: list[dict[str, Any]],
    overlap: dict[str, Any],
    the_pass: Any,
    pass_workers: int,
) -> dict[str, Any]:
    """score.json's counts over the runs: read, labelled, halted, skipped, warned, and what the halts saved."""
    trajs = got.trajs
    return {
        "predictor": mon.predictor_kind,
        "n_trajectories": len(trajs),
        "n_labelled": sum(t.outcome is not None for t in trajs),
        "n_halted": sum(r["halted"] for r in records),
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
        "savings": savings_summary(records),
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


def _labelled_metrics(
    mon: Any,
    trajs: list[Trajectory],
    records: list[dict[str, Any]],
    warm_ids: set[str],
    th_source: str,
    what_if_taus: Any,
) -> dict[str, Any]:
    """The labelled runs' metric blocks under the monitor's thresholds, the check that its halts are the
    policy's halts, and the what-if frontier when asked for."""
    out: dict[str, Any] = {}
    rs = runset_of(trajs, records)
    warm = np.asarray([rid in warm_ids for rid in rs.run_ids], dtype=bool)
    ts, tf = mon.halting_thresholds  # the pair the rule applies under halt_on
    lab = [r for t, r in zip(trajs, records) if _scorable(t, r)]  # the runs of rs, in its order
    made = (
        np.asarray([int(r["halt_t"] or 0) if r["halted"] else 0 for r in lab], dtype=np.int64),
        np.asarray(
            [
                {"success": 1, "failure": 0}.get(r["predicted"], -1) if r["halted"] else -1
                for r in lab
            ]
        ),
    )
    out.update(
        metric_blocks(
            rs,
            {**mon.thresholds, "success": ts, "failure": tf},
            warm if warm_ids else None,
            source=th_source,
            halts=made,
        )
    )
    for blk in (
        out["agents"].values() if th_source == "pass" else ()
    ):  # the runs completed in full are the audit sample
        blk["audited_runs"] = blk.pop("warm_runs", 0)
    # the monitor's own halts must be the policy's halts on its probabilities: one rule, checked
    t_halt, pred = apply_policy(rs, ts, tf, mon.min_halt_step)
    # a run whose context lets no halt ("partial", "none": missing information never halts) must not halt at all
    t_halt = np.asarray(
        [
            int(th) if r.get("context", "full") in HALTING_CONTEXTS else 0
            for r, th in zip(lab, t_halt)
        ]
    )
    mism = [
        r["run_id"]
        for r, th, pr in zip(lab, t_halt, pred)
        if not r.get("warm")
        and (
            (r["halt_t"] or 0) != int(th)
            or (th and r["predicted"] != ("success" if pr == 1 else "failure"))
        )
    ]
    if th_source == "pass":  # each run halts at the thresholds its monitor was spawned with
        mism = pass_inconsistent(lab, mon.halt_on, mon.min_halt_step)
    out["policy_consistent"] = not mism
    if mism:
        log.error(
            "monitor halts differ from metrics.apply_policy on %d runs, e.g. %s",
            len(mism),
            mism[:3],
        )
    if what_if_taus is not None and what_if_taus is not False:
        taus = (
            ((mon.bundle.training.get("config") or {}).get("taus") or GRID)
            if what_if_taus is True
            else what_if_taus
        )
        by_id = {t.run_id: t for t in trajs}
        costs = []
        for rid in rs.run_ids:
            try:
                costs.append(run_cost(by_id[rid]))
            except PriceError:
                costs.append(None)
        out["what_if"] = what_if(rs, taus, mon.min_halt_step, warm if warm_ids else None, costs)
    return out


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

"""What ``earlyeval score`` checks so that its numbers cannot mislead in good faith.

One function per check, each called by ``score.score_runs`` before anything is written. What each refuses or warns
about: docs/monitor.md, "Replaying finished runs" (what else ``score`` does).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import tomllib
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from earlyeval.config import file_schemas, schema
from earlyeval.config.catalog import LabelSpec, RunSpec, available_benches, load_catalog
from earlyeval.config.schema import Invalid, parse_date
from earlyeval.config.workspace import explicit_workspace, is_bench_name
from earlyeval.core.errors import (
    CatalogError,
    NothingScoredError,
    ScoreRefusedError,
    SettingError,
    WriteError,
)
from earlyeval.core.trajectory import Task, Trajectory
from earlyeval.ingest import FORMATS
from earlyeval.ingest.detect import Detection, detect_units, loadable_formats
from earlyeval.ingest.labels import READERS as LABEL_READERS
from earlyeval.live.inputs import task_table
from earlyeval.tables.store import read_tasks

log = logging.getLogger("earlyeval.workflows.score")

# the model families that read other agents' dated results: only they make a run's date matter
HISTORY_FAMILIES = ("prior", "peer_prior")


# ------------------------------------------------------------------ labels


def label_spec(labels: str) -> LabelSpec:
    """``FORMAT:GLOB[,KEY=VALUE...]`` as a LabelSpec: the options a catalog's label entry takes
    (``config.file_schemas.LABEL_OPTIONS``, e.g. ``harness-lists:results.json*,trailing_commas=true``), each
    value read as a TOML value (a bare word is a string); a ValueError naming the known formats or the bad
    option for anything else."""
    head, *opts = labels.split(",")
    lf, _, lg = head.partition(":")
    known = sorted(LABEL_READERS)
    if lf not in LABEL_READERS:
        raise ValueError(
            f"--labels {labels!r}: unknown label format {lf!r} (known: {', '.join(known)}; "
            "given as FORMAT:GLOB, e.g. sb-cli:'*.json')"
        )
    if not lg:
        raise ValueError(f"--labels must be FORMAT:GLOB (e.g. sb-cli:'*.json'), not {labels!r}")
    if Path(lg).is_absolute() or lg.startswith("~") or ".." in Path(lg).parts:
        raise ValueError(
            f"--labels {labels!r}: the GLOB is relative to --runs and stays inside it "
            "(no absolute path, ~ or ..)"
        )
    options = dict(_label_option(labels, o) for o in opts)
    err = lambda key, why: ValueError(f"--labels {labels!r}: {key}: {why}")  # noqa: E731
    schema.check(file_schemas.LABEL, {"format": lf, "path": lg, **options}, err)
    return LabelSpec(lf, lg, options)


def _label_option(labels: str, text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--labels``: the value as TOML reads it (``true``, ``0.5``, ``"x"``), else the bare text."""
    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise SettingError(
            "score",
            "--labels",
            f"{labels!r}: {text!r} is no KEY=VALUE option "
            f"(known: {', '.join(sorted(file_schemas.LABEL_OPTIONS))})",
        )
    try:
        return key.strip(), tomllib.loads(f"v = {value.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        return key.strip(), value.strip()


# ------------------------------------------------------------------ format

MIXED = "mixed"  # score.json's ``format`` for a folder of several formats (``formats`` counts the runs of each)


def detect_formats(
    runs_path: Path, catalog_specs: list[RunSpec], progress: bool = False
) -> Detection:
    """The run units of ``runs_path`` by format: a catalog entry's format when the folder is a catalog run,
    else every file sniffed (``ingest.detect.detect_units``: each unit goes to the format that claims it, what
    no format claims is skipped by name).  No format found: a ScoreRefusedError listing the formats tried."""
    fmts = sorted({s.format for s in catalog_specs})
    if len(fmts) == 1:
        return Detection({fmts[0]: []}, by="the catalog entry")
    p = Path(runs_path).resolve()
    known = loadable_formats()  # a broken optional plugin is no candidate
    with tqdm(
        total=len(known),
        desc="score: --format auto",
        unit="format",
        leave=False,
        disable=None if progress else True,
    ) as bar:
        found = detect_units(p, known, bar)
    if not found.units:
        first = (
            f" (e.g. {Path(found.skipped[0]['file']).name}: {found.skipped[0]['reason']})"
            if found.skipped
            else ""
        )
        raise ScoreRefusedError(
            f"--format auto: no known format reads the files under {p}{first} (tried: "
            f"{', '.join(sorted(FORMATS.known()))}); give --format FMT (`earlyeval formats` lists them)"
        )
    return found


def detect_format(runs_path: Path, catalog_specs: list[RunSpec], progress: bool = False) -> str:
    """The one format of the runs under ``runs_path`` (``detect_formats``), for a caller that reads one
    format; a ScoreRefusedError listing them when the folder holds several (``score`` reads each)."""
    found = detect_formats(runs_path, catalog_specs, progress)
    if len(found.units) == 1:
        return next(iter(found.units))
    listed = "; ".join(
        f"{f}: {len(u)} file(s), e.g. {u[0].name!r}" for f, u in sorted(found.units.items())
    )
    raise ScoreRefusedError(
        f"--format auto: the files under {Path(runs_path).resolve()} are in several formats "
        f"({listed}); `earlyeval score` scores each run with its own"
    )


# ------------------------------------------------------------------ tasks


def task_table_paths(model_dir: str | Path | None, benches: list[str]) -> list[Path]:
    """Where the model's benchmarks' task tables are looked for, the same from any folder: beside the model
    directory when it sits in a workspace (``<ws>/models/<name>`` gives ``<ws>/data/<bench>/tasks.parquet``),
    then in the workspace given by --workspace or $EARLYEVAL_HOME; never the current directory by default."""
    roots = []
    if model_dir:
        m = Path(model_dir).resolve()
        if m.parent.name == "models":
            roots.append(m.parent.parent)
    ws = explicit_workspace()
    if ws is not None:
        roots.append(ws)
    return [
        r / "data" / b / "tasks.parquet"
        for b in benches
        if is_bench_name(b)
        for r in dict.fromkeys(roots)
    ]


def load_task_table(
    bundle: Any, tasks: dict[str, Task] | Path | None, model_dir: str | Path | None = None
) -> tuple[dict[str, Task], dict[str, Any]]:
    """(tasks, where they came from): the tasks given (a table or a parquet path, ``--tasks``), else the first
    task table found per training benchmark (``task_table_paths``).  A model whose families need the task
    (gold, prior ...) with no table anywhere is refused (``ScoreRefusedError``): scoring on would halt nothing
    and report it as a result."""
    if tasks is not None:
        out = task_table(tasks)
        return out, {
            "source": str(tasks) if isinstance(tasks, (str, Path)) else "given",
            "tasks": len(out),
        }
    benches = [str(b) for b in bundle.training.get("benchmarks", [])]
    paths = task_table_paths(model_dir, benches)
    out, used = {}, []
    for b in benches:
        hit = next((p for p in paths if p.parent.name == b and p.is_file()), None)
        if hit is not None:
            out.update(read_tasks(hit))
            used.append(str(hit))
    needs = [f.name for f in bundle.featurizer.families if f.needs_task]
    if needs and len(used) < len(benches):
        looked = (
            ", ".join(str(p) for p in paths)
            or "nowhere (the model directory is not in a workspace's models/)"
        )
        raise ScoreRefusedError(
            f"no task table for the model's benchmark(s) {', '.join(benches) or '?'}: its "
            f"{', '.join(needs)} features need one (looked in {looked}); give --tasks "
            "data/<bench>/tasks.parquet (written by `earlyeval ingest`); nothing scored"
        )
    return out, {"source": ", ".join(used) or None, "tasks": len(out)}


# ------------------------------------------------------------------ output


def output_dir(runs_path: Path, out: Path | None, root: Path) -> Path:
    """``out``, else ``<root>/<the runs' full folder (or file) name>``: ``sweagent-v1.2__gpt4`` and
    ``sweagent-v1.3__gpt4o`` get two folders (the name is never cut at its first dot)."""
    return Path(out) if out else root / (Path(runs_path).resolve().name or "runs")


def check_destination(dest: Path, runs_path: Path, fmt: str, force: bool) -> None:
    """Refuse (ScoreRefusedError) to replace a score.json in ``dest`` that scored other runs (another
    ``runs_path`` or format), or that is not a scoring at all, unless ``force``; re-scoring the same runs
    replaces it."""
    prev_path = Path(dest) / "score.json"
    if prev_path.is_dir():  # not even --force removes a folder
        raise WriteError(str(prev_path), "a folder is in the way", errno.EISDIR)
    if force or not prev_path.exists():
        return
    try:
        prev = json.loads(prev_path.read_text())
    except (OSError, ValueError):
        prev = None
    mine = str(Path(runs_path).resolve())
    if isinstance(prev, dict) and prev.get("runs_path") == mine and prev.get("format") == fmt:
        return
    what = (
        f"a scoring of {prev.get('runs_path')} ({prev.get('format')})"
        if isinstance(prev, dict) and prev.get("runs_path")
        else "a file that is not a scoring"
    )
    raise ScoreRefusedError(
        f"{prev_path} holds {what}, not of {mine} ({fmt}); nothing written: give another --out, "
        "or --force to replace it"
    )


# ------------------------------------------------------------------ bench


def bench_check(
    bundle: Any,
    specs: list[RunSpec],
    trajs: list[Trajectory],
    fmt: str,
    tasks: dict[str, Any],
    cross_bench: bool = False,
) -> dict[str, Any]:
    """Which benchmark the runs are of, against the model's: a catalog entry says it, else whether the runs'
    tasks are the model's benchmark's tasks.  A run's format is never evidence: the same format serves many
    benchmarks, and a private benchmark's held-out runs in a format a shipped catalog also uses are still the
    private benchmark's (issue 42).  A mismatch is a ScoreRefusedError unless ``cross_bench`` (then recorded,
    and warned about): a model of another benchmark gives numbers that look like scores and are a transfer
    experiment."""
    model_benches = sorted(str(b) for b in (bundle.training or {}).get("benchmarks") or [])
    out: dict[str, Any] = {
        "model": model_benches,
        "runs": None,
        "evidence": None,
        "match": None,
        "cross_bench": cross_bench,
    }
    if not set(model_benches) & set(available_benches()):
        out["evidence"] = "the model's benchmark is not a known catalog: not checked"
        return out
    cat = sorted({str(s.options.get("bench")) for s in specs if s.options.get("bench")})
    ids = {t.task_id for t in trajs}
    if cat:
        out.update(runs=cat, evidence="the runs are a catalog's runs")
    elif tasks and ids:
        found = len(ids & set(tasks))
        out.update(
            runs=model_benches if found else ["another benchmark"],
            evidence=f"{found} of the runs' {len(ids)} task ids are tasks of {', '.join(model_benches)}",
        )
    else:
        out["evidence"] = "neither a catalog nor the tasks tell the runs' benchmark: not checked"
        return out
    out["match"] = bool(set(out["runs"]) & set(model_benches))
    if not out["match"]:
        msg = (
            f"the model was trained on {', '.join(model_benches)}, the runs are of {', '.join(out['runs'])} "
            f"({out['evidence']}): its numbers on them would be a transfer experiment, not a score"
        )
        if not cross_bench:
            raise ScoreRefusedError(
                msg + "; nothing written: use a model of the runs' benchmark, or --cross-bench "
                "to score them anyway (`earlyeval transfer` measures transfer properly)"
            )
        out["warning"] = msg
        log.warning("%s (--cross-bench)", msg)
    return out


# ------------------------------------------------------------------ dates


def date_runs(
    trajs: list[Trajectory], as_of: str | None, families: list[str], fmt: str
) -> tuple[str | None, dict[str, Any]]:
    """The cutoff ``replay`` takes (None: each run's own date) and what score.json says about dates.

    ``as_of``: None or "run" each run's own date (catalog ``date``, else the day its files record,
    ``meta["run_date"]``, which is then copied to ``meta["date"]``); "" or "all" every submission; else a
    YYYY-MM-DD cutoff.  Runs with no date at all get today's pool; with a model that reads public
    history, that is a warning naming the risk."""
    history = [f for f in families if f in HISTORY_FAMILIES]
    if as_of not in (None, "run"):
        cut = "" if as_of in ("", "all") else as_of
        return cut, {
            "mode": "all submissions" if not cut else "given",
            "cutoff": cut or None,
            "warning": None,
        }
    n = {"catalog": 0, "files": 0, "none": 0}
    for t in trajs:
        if t.meta.get("date"):
            n["catalog"] += 1
        elif t.meta.get("run_date"):
            t.meta["date"] = t.meta["run_date"]
            n["files"] += 1
        else:
            n["none"] += 1
    days = sorted(str(t.meta["date"]) for t in trajs if t.meta.get("date"))
    detail: dict[str, Any] = {
        "mode": "each run's own date",
        "runs_dated_by": n,
        "dates": {"first": days[0], "last": days[-1]} if days else None,
        "warning": None,
    }
    if n["none"] and history:
        detail["warning"] = (
            f"{n['none']} of {len(trajs)} runs carry no date (the {fmt} files record none, and no catalog entry "
            f"dates them): their task prior ({', '.join(history)}) counts every public submission up to today. "
            "If the runs are older than that pool, results published after them enter their prior (a stronger "
            "later pool makes old tasks look easy: wrong success halts), so halted accuracy and the recorded "
            "resolve rate can be far off what the model does on them. Give --as-of YYYY-MM-DD, the day the runs "
            "were made (or --as-of all to accept today's pool)."
        )
        log.warning("%s", detail["warning"])
    return None, detail


# ------------------------------------------------------------------ catalog hint


def catalog_hint(runs_path: Path, fmt: str, root: Path) -> str | None:
    """A warning when the folder has a catalog run's folder name but is not under the data root ``root``:
    the catalog's labels, agent name and date are then not used."""
    p = Path(runs_path).resolve()
    for name, toml in sorted(available_benches().items()):
        try:
            cat = load_catalog(toml)
        except CatalogError:
            continue
        for s in cat.runs:
            parts = Path(s.folder).parts
            if (
                not parts
                or parts[-1] != p.name
                or (root / s.folder).resolve() == p
                or fmt not in ("auto", s.format)
            ):
                continue
            where = (
                f"give --data-root {Path(*p.parts[: -len(parts)])}"
                if p.parts[-len(parts) :] == parts
                else f"with --data-root R the folder must be R/{s.folder}"
            )
            return (
                f"{p} has the folder name of the catalog run {s.name} ({cat.bench}) but is not under the data root "
                f"{root}: the catalog's labels, agent name and date are not used ({where}, or give --labels)"
            )
    return None


def check_runs_path(p: Path) -> None:
    """--runs must be a folder or a regular file (a FIFO or a device would block or never end)."""
    if not os.path.lexists(p) or not p.exists():
        raise FileNotFoundError(f"--runs {p}: no such file or folder")
    if not (p.is_dir() or p.is_file()):
        raise ValueError(
            f"--runs {p}: not a folder or a regular file (a FIFO, a device or a socket is never read)"
        )


def check_as_of(as_of: str | None) -> str | None:
    """``as_of`` as ``score_checks.date_runs`` takes it: None or "run" (each run's own date), "" or "all" (every
    submission) or a real YYYY-MM-DD date.  Anything else is refused here, before a run is read."""
    if as_of is None or as_of in ("", "run", "all"):
        return as_of
    try:
        return parse_date(as_of, "as_of")
    except Invalid as e:
        raise ValueError(f"--as-of: {e.reason}; expected YYYY-MM-DD, 'run' or 'all'") from None


def nothing_read(
    runs_path: Path,
    fmt: str,
    specs: list[RunSpec],
    reports: list[dict[str, Any]],
    skipped: list[dict[str, Any]],
) -> NothingScoredError:
    """The one-line error for a read that gave no run (empty folder, wrong format)."""
    files = sum(int(r.get("files_read") or 0) for r in reports)
    globs = ", ".join(sorted({s.glob for s in specs}))
    if skipped:
        first = skipped[0]
        why = (
            f"all {len(skipped)} files matching '{globs}' were skipped (first: {first.get('file')}: "
            f"{first.get('field')}: {first.get('reason')})"
        )
    else:
        why = f"no file matches '{globs}'" if not files else f"{files} files read, no run in them"
    return NothingScoredError(
        f"no runs read from {runs_path} as --format {fmt}: {why}; is --format right? "
        f"(formats: {', '.join(sorted(FORMATS.known()))}); nothing written"
    )

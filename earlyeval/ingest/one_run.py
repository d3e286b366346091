"""One run file read by itself: ``earlyeval.read_run(path)``, the first of the two calls that replay a finished
run (``Monitor.replay`` is the second).  No catalog entry is needed: the format is sniffed as
``earlyeval score --format auto`` sniffs it (``ingest.detect``), and the run is read by that format's reader
with the spec ``score`` gives a folder no catalog describes (``detect.generic_spec``).  docs/monitor.md,
"One run file".
"""

from __future__ import annotations

from pathlib import Path

from earlyeval.core.errors import IngestError
from earlyeval.core.trajectory import Trajectory
from earlyeval.ingest import format_module, ingest_run
from earlyeval.ingest.detect import detect_units, generic_spec, loadable_formats


def read_run(path: str | Path, fmt: str = "auto", *, bench: str = "") -> Trajectory:
    """The one run a file (or a run folder: a Harbor trial, an OpenHands conversation) holds.

    Parameters
    ----------
    path : str or Path
        A run file (``.traj``, ``.traj.json``, a tau2 or Toolathlon file, an inspect ``.eval``), or the folder of
        one run in the formats that keep a run in a folder (an ATIF trial folder, an OpenHands V1 conversation).
    fmt : str, default "auto"
        A format ``earlyeval formats`` lists, or ``"auto"``: told from the file's first bytes as
        ``earlyeval score --format auto`` tells it.
    bench : str, default ""
        The benchmark the run belongs to (``Trajectory.bench``); unknown by default.

    Returns
    -------
    Trajectory
        Its steps as the format's step reader builds them (``earlyeval.steps``), the label when the file
        carries one (else ``outcome`` is None), its agent named after the file.

    Raises
    ------
    IngestError
        Naming the file: it does not exist, no format (or several) can be told, the format is unknown, the
        file cannot be read as that format (the field at fault), or it holds no run or more than one.
    """
    p = Path(path).resolve()
    if not p.exists():
        raise IngestError(str(p), "<file>", "does not exist")
    fmt = sniffed_format(p) if fmt == "auto" else known_format(p, fmt)
    trajs, report = ingest_run(generic_spec(p, fmt), bench, Path("/"))
    if report.skipped:
        first = report.skipped[0]
        more = f" (+{len(report.skipped) - 1} more)" if len(report.skipped) > 1 else ""
        raise IngestError(first["file"], first["field"], f"{first['reason']}{more}")
    if len(trajs) != 1:
        ids = ", ".join(t.run_id for t in trajs[:3]) + (", ..." if len(trajs) > 3 else "")
        raise IngestError(
            str(p),
            "<runs>",
            f"holds {len(trajs)} runs as {fmt}"
            + (f" ({ids})" if trajs else "")
            + ": read_run reads one; `earlyeval score --runs PATH` reads a folder of runs",
        )
    return trajs[0]


def known_format(p: Path, fmt: str) -> str:
    """``fmt`` when a registry knows it, else an IngestError naming the file and the known formats."""
    try:
        format_module(fmt)
    except IngestError as e:
        raise IngestError(str(p), "format", e.reason) from e
    return fmt


def sniffed_format(p: Path) -> str:
    """The one format that claims ``p`` from its first bytes; an IngestError naming the file when none or
    several do."""
    fmts = loadable_formats()
    found = detect_units(p, fmts)
    if len(found.units) == 1:
        return next(iter(found.units))
    if found.units:
        names = ", ".join(f"{f} ({len(u)})" for f, u in sorted(found.units.items()))
        raise IngestError(str(p), "format", f"holds runs of several formats: {names}; give fmt=")
    why = found.skipped[0]["reason"] if found.skipped else "no known format reads it: not read"
    raise IngestError(str(p), "format", f"{why}; give fmt= (one of {', '.join(fmts)})")

"""The fault cases of issue 29 (items 1 and 3 and the silent-data cases): writes only where the user said,
bounded reads, dates validated, ``--runs`` taken literally, names escaped.  Each test is one class of fault,
named; each failed on main 786ae46 (the message of the failure there is in its docstring)."""

from __future__ import annotations

import os
import stat

import pytest

from earlyeval.core import atomic
from earlyeval.core.errors import WriteError

# ------------------------------------------------------------------ item 1: write only where the user said


def test_a_symlinked_lock_file_is_not_followed(tmp_path):
    """main: the link's target was truncated and the PID written into it."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / atomic.LOCK_FILE).symlink_to(victim)
    with pytest.raises(WriteError, match="symbolic link"):
        with atomic.folder_lock(out):
            pass
    assert victim.read_text() == "precious\n"


def test_a_fifo_at_the_lock_file_is_refused(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / atomic.LOCK_FILE)
    with pytest.raises(WriteError, match="not a regular file"):
        with atomic.folder_lock(out):
            pass
    assert stat.S_ISFIFO(os.lstat(out / atomic.LOCK_FILE).st_mode)


def _score_set(out, csv):
    from earlyeval.workflows.score import write_outputs

    return write_outputs(out, {"runs": 0}, [], csv=csv)


def test_a_fifo_csv_is_refused_and_left_a_fifo(tmp_path):
    """main: ``--csv`` at a FIFO replaced it with a regular file."""
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    with pytest.raises(WriteError, match="a FIFO, not a regular file") as e:
        _score_set(tmp_path / "out", fifo)
    assert str(fifo) in str(e.value) and "\n" not in str(e.value)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not (tmp_path / "out" / "score.json").exists()  # the set goes in whole or not at all


def test_a_device_csv_is_refused_and_left_a_device(tmp_path):
    """main: ``--csv`` at a device node replaced the node with a regular file (as root, /dev/null)."""
    dev = tmp_path / "null"
    try:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make a device node here ({e})")
    with pytest.raises(WriteError, match="a character device, not a regular file"):
        _score_set(tmp_path / "out", dev)
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_csv_symlink_leaving_its_folder_is_refused(tmp_path):
    victim = tmp_path / "elsewhere" / "victim.csv"
    victim.parent.mkdir()
    victim.write_text("keep\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "per_run.csv").symlink_to(victim)
    with pytest.raises(WriteError, match="symbolic link leading outside"):
        _score_set(out, None)
    assert victim.read_text() == "keep\n" and (out / "per_run.csv").is_symlink()


def test_a_symlink_inside_its_folder_is_replaced_not_followed(tmp_path):
    """A link that stays in the folder is replaced by the new file (os.replace never follows it)."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.csv").write_text("old\n")
    (out / "per_run.csv").symlink_to(out / "old.csv")
    _score_set(out, None)
    assert not (out / "per_run.csv").is_symlink() and (out / "old.csv").read_text() == "old\n"


def test_export_through_a_symlinked_trial_folder_is_refused(tmp_path):
    """main: ``export --out O`` wrote through a symlinked ``O/<trial>`` folder."""
    from synth import make_trajectories

    from earlyeval.workflows.export import export_runs, trial_name

    traj = make_trajectories(n_tasks=2, seed=0)[0][0]
    out, elsewhere = tmp_path / "O", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / trial_name(traj)).symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(WriteError, match="leads outside"):
        export_runs([traj], out)
    assert list(elsewhere.iterdir()) == []


# ------------------------------------------------------------------ item 3: bounded reads


def test_a_key_file_without_end_is_refused(monkeypatch):
    """main: ``EARLYEVAL_MODEL_KEY_FILE=/dev/zero`` was read without limit (memory until killed)."""
    from earlyeval.core.errors import SettingError
    from earlyeval.model import signature

    monkeypatch.delenv("EARLYEVAL_MODEL_KEY", raising=False)
    monkeypatch.setenv("EARLYEVAL_MODEL_KEY_FILE", "/dev/zero")
    with pytest.raises(SettingError, match=r"EARLYEVAL_MODEL_KEY_FILE.*more than 65536 bytes"):
        signature.model_key()


def test_a_key_file_within_the_limit_still_reads(tmp_path, monkeypatch):
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32 + b"\n")
    monkeypatch.delenv("EARLYEVAL_MODEL_KEY", raising=False)
    monkeypatch.setenv("EARLYEVAL_MODEL_KEY_FILE", str(key))
    from earlyeval.model import signature

    assert signature.model_key() == b"k" * 32


@pytest.mark.parametrize(
    "bad", ["9999-99-99", "2026-02-30", "3001-01-01", "1970-01-01", "tomorrow", 20240101]
)
def test_an_impossible_run_date_is_one_error_naming_file_and_field(bad):
    """main: ``meta.date`` from a run file (inspect ``started_at``, OpenHands event timestamps) was taken
    as it came (``9999-99-99`` stored, future years accepted)."""
    from synth import make_trajectories

    from earlyeval.core.errors import IngestError
    from earlyeval.tables.validate import validate_trajectory

    t = make_trajectories(n_tasks=1)[0][0]
    t.meta["source_file"], t.meta["date"] = "runs/x.eval", bad
    with pytest.raises(IngestError) as e:
        validate_trajectory(t)
    assert e.value.file == "runs/x.eval" and e.value.field == "meta.date"


def test_a_real_run_date_passes():
    from synth import make_trajectories

    from earlyeval.tables.validate import validate_trajectory

    t = make_trajectories(n_tasks=1)[0][0]
    t.meta["date"], t.meta["run_date"] = "2025-03-04", "2025-03-01"
    validate_trajectory(t)


# ------------------------------------------------------------------ silent data problems


def test_a_bracketed_run_file_name_is_taken_literally(tmp_path):
    """main: ``--runs '[a].traj.gz'`` was read as a glob and scored ``a.traj.gz``."""
    import shutil
    from dataclasses import replace

    import _paths

    from earlyeval.config.catalog import RunSpec
    from earlyeval.ingest import discover

    src = _paths.FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj"
    for name in ("a.traj", "[a].traj"):
        shutil.copy(src, tmp_path / name)
    spec = RunSpec(
        name="r",
        folder=str(tmp_path),
        agent="a",
        scaffold="a",
        model="",
        format="swe-agent-traj",
        glob="[a].traj",
        labels=[],
    )
    assert discover(tmp_path, spec) == [tmp_path / "[a].traj"]
    assert discover(tmp_path, replace(spec, glob="*.traj")) == [
        tmp_path / "[a].traj",
        tmp_path / "a.traj",
    ]
    (tmp_path / "[a].traj").unlink()  # no file by that name: the glob is a glob
    assert discover(tmp_path, spec) == [tmp_path / "a.traj"]


def test_control_characters_in_a_file_name_are_escaped_on_the_terminal(tmp_path):
    """main: a run file or model path named with ANSI codes reached the terminal raw (``\\x1b[2J`` clears it)."""
    from typer.testing import CliRunner

    from earlyeval.app.cli import app

    evil = tmp_path / "\x1b[2J\x1b[31mevil\u202e"
    r = CliRunner().invoke(
        app, ["score", "--model", str(evil), "--runs", str(tmp_path), "--out", str(tmp_path / "o")]
    )
    assert r.exit_code == 2
    assert "\x1b" not in r.output and "\u202e" not in r.output
    assert "\\x1b[2J\\x1b[31mevil\\u202e" in r.output  # the name is still there, escaped


def test_the_log_escapes_control_characters_too():
    import logging

    from earlyeval.app.cli_support import LOG_FORMAT, PrintableFormatter, printable

    rec = logging.LogRecord(
        "earlyeval", logging.WARNING, __file__, 1, "skipped %s", ("a\x1b[31mb\rc",), None
    )
    assert (
        PrintableFormatter(LOG_FORMAT).format(rec) == "WARNING earlyeval: skipped a\\x1b[31mb\\x0dc"
    )
    assert printable("tab\tand\nnewline stay") == "tab\tand\nnewline stay"


def test_a_symlinked_sub_folder_is_reported_not_skipped_without_a_word(tmp_path):
    """main: a recursive glob passed over a symlinked sub-folder and no skip entry said so."""
    import shutil

    import _paths

    from earlyeval.config.catalog import RunSpec
    from earlyeval.ingest import discover, unread_entries

    run, other = tmp_path / "run", tmp_path / "other"
    (run / "kept").mkdir(parents=True)
    other.mkdir()
    src = _paths.FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj"
    shutil.copy(src, run / "kept" / "a.traj")
    shutil.copy(src, other / "b.traj")
    (run / "linked").symlink_to(other, target_is_directory=True)
    spec = RunSpec(
        name="r",
        folder=str(run),
        agent="a",
        scaffold="a",
        model="",
        format="swe-agent-traj",
        glob="**/*.traj*",
        labels=[],
    )
    assert discover(run, spec) == [run / "kept" / "a.traj"]  # still not followed
    (skip,) = unread_entries(run, spec)
    assert (
        skip["file"] == str(run / "linked")
        and skip["field"] == "<folder>"
        and "not followed" in skip["reason"]
    )


def test_an_unlistable_sub_folder_is_reported(tmp_path, monkeypatch):
    """A folder ``os.walk`` cannot list (EACCES; staged by failing its listing, as root reads every folder)."""
    from earlyeval.config.catalog import RunSpec
    from earlyeval.ingest import unread_entries

    run = tmp_path / "run"
    (run / "locked").mkdir(parents=True)
    real = os.scandir

    def scandir(p="."):
        if os.fspath(p) == str(run / "locked"):
            raise PermissionError(13, "Permission denied", os.fspath(p))
        return real(p)

    monkeypatch.setattr(os, "scandir", scandir)
    spec = RunSpec(
        name="r",
        folder=str(run),
        agent="a",
        scaffold="a",
        model="",
        format="swe-agent-traj",
        glob="**/*.traj*",
        labels=[],
    )
    (skip,) = unread_entries(run, spec)
    assert skip["file"] == str(run / "locked") and "Permission denied" in skip["reason"]


def test_a_skip_reason_is_one_line_whatever_the_library_said():
    """A reader wrapping a library's message (inspect's pydantic ValidationError spans five lines for an impossible
    ``started_at``): the skip stays one line, naming file and field (the fault suite's inspect date cases)."""
    from earlyeval.core.errors import IngestError

    e = IngestError(
        "runs/x.eval",
        "samples/demo-1_epoch_1",
        "cannot read the sample (ValidationError: 1 validation error for EvalSample\nstarted_at\n"
        "  Value error, month must be in 1..12 [type=value_error]\n    For further information visit x)",
    )
    assert "\n" not in e.reason and "\n" not in str(e)
    assert e.reason == (
        "cannot read the sample (ValidationError: 1 validation error for EvalSample started_at Value "
        "error, month must be in 1..12 [type=value_error] For further information visit x)"
    )
    assert str(e).startswith("runs/x.eval: field 'samples/demo-1_epoch_1': ")

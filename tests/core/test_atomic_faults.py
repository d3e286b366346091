"""Machine faults while writing: one ``WriteError`` naming the file and the fault, and nothing replaced.

Portable stand-ins for a full disk (``os.write`` raising ENOSPC: every write of core.atomic goes through it),
a folder in the way (EISDIR) and a rename that fails half-way through a set; the real ENOSPC / EROFS / EFBIG
runs of the CLI are in tests/faults24.py."""

from __future__ import annotations

import errno
import multiprocessing as mp
import os
import time

import pytest

from earlyeval.core import atomic
from earlyeval.core.errors import WriteError


def _disk_full(monkeypatch):
    real = os.write

    def write(fd, data):
        if fd > 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def test_a_full_disk_is_one_line_and_replaces_nothing(tmp_path, monkeypatch):
    a, b = tmp_path / "score.json", tmp_path / "per_run.csv"
    atomic.write_files({a: b"old json", b: b"old csv"})
    _disk_full(monkeypatch)
    with pytest.raises(WriteError) as e:
        atomic.write_files({a: b"new json", b: b"new csv"})
    assert (
        str(e.value) == f"disk full while writing {a}; nothing was replaced"
        and e.value.errno == errno.ENOSPC
    )
    with pytest.raises(WriteError, match="disk full while writing"):
        atomic.write_json({"x": 1}, a)
    monkeypatch.undo()
    assert (a.read_bytes(), b.read_bytes()) == (b"old json", b"old csv")
    # no temp file left
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "per_run.csv",
        "score.json",
    ]


def test_a_folder_in_the_way_is_refused_before_anything_is_renamed(tmp_path):
    (tmp_path / "score.json").mkdir()
    (tmp_path / "per_run.csv").write_bytes(b"old")
    with pytest.raises(
        WriteError, match="a folder is in the way while writing .*score.json; nothing was replaced"
    ):
        atomic.write_files({tmp_path / "per_run.csv": b"new", tmp_path / "score.json": b"new"})
    assert (tmp_path / "per_run.csv").read_bytes() == b"old"


def test_a_rename_failing_half_way_puts_the_old_set_back(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    atomic.write_files({a: b"A1", b: b"B1"})
    real = os.replace

    def replace(src, dst):
        if str(dst) == str(b) and not str(src).endswith(".old"):
            raise OSError(errno.EIO, "I/O error")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(WriteError, match="I/O error while writing"):
        atomic.write_files({a: b"A2", b: b"B2"})
    monkeypatch.undo()
    assert (a.read_bytes(), b.read_bytes()) == (b"A1", b"B1")


def _hold(folder: str, ready, release) -> None:
    with atomic.folder_lock(folder):
        ready.set()
        release.wait(30)


def test_one_writer_per_folder(tmp_path):
    ctx = mp.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold, args=(str(tmp_path), ready, release))
    p.start()
    try:
        assert ready.wait(60)
        with pytest.raises(WriteError, match=f"another earlyeval process \\(pid {p.pid}\\) holds"):
            with atomic.folder_lock(tmp_path, timeout=0.3):
                pass
        release.set()
        t0 = time.monotonic()
        with atomic.folder_lock(tmp_path, timeout=30):  # free again once the holder is done
            pass
        assert time.monotonic() - t0 < 30
    finally:
        release.set()
        p.join(30)

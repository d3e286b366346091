"""Writes that a crash cannot tear: temp file beside the target, fsync, rename.

A reader (or a later ``make`` step) sees either the previous complete file or the
new complete one, never a prefix: ``os.replace`` is atomic on POSIX when both paths
are on one file system, which a temp file in the target's own folder guarantees.
A model directory is written whole beside the old one and swapped in with one
``renameat2(RENAME_EXCHANGE)`` on Linux (two renames elsewhere, see ``swap_dir``).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def fsync_file(p: Path) -> None:
    with open(p, "rb") as f:
        os.fsync(f.fileno())


def _umask() -> int:
    old = os.umask(0o022)
    os.umask(old)
    return old


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale(parent: Path, stem: str) -> None:
    """Remove temp files / dirs ``.<stem>.<pid>.*`` left by writers that were killed (their pid is gone)."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for q in entries:
        rest = q.name[len(stem) + 2:] if q.name.startswith(f".{stem}.") else ""
        pid = rest.split(".", 1)[0].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            if q.is_dir() and not q.is_symlink():
                shutil.rmtree(q, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    q.unlink()


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temp path beside ``path`` to write to; on success it is fsynced and renamed onto ``path``,
    on any error (or kill) the target is untouched and the temp file is removed (when still possible;
    one left by a killed writer is removed by the next write of the same target)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(target.parent, target.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # the permissions a plain open() would give, not mkstemp's 0600
    os.close(fd)
    tmp_p = Path(tmp)
    try:
        yield tmp_p
        fsync_file(tmp_p)
        os.replace(tmp_p, target)
        _fsync_dir(target.parent)
    finally:
        if tmp_p.exists():
            tmp_p.unlink()


def write_bytes(path: str | Path, data: bytes) -> Path:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def new_dir_beside(target: str | Path) -> Path:
    """An empty temp directory in ``target``'s parent, to be filled and then ``swap_dir``-ed in."""
    t = Path(target)
    t.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(t.parent, t.name)
    d = Path(tempfile.mkdtemp(prefix=f".{t.name}.{os.getpid()}-new-", dir=t.parent))
    d.chmod(0o777 & ~_umask())  # as mkdir would, not mkdtemp's 0700
    return d


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths (Linux renameat2); False where unavailable."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, getattr(errno, "ENOTSUP", errno.EOPNOTSUPP)):
        return False  # no renameat2 here, or a file system without RENAME_EXCHANGE
    raise OSError(err, os.strerror(err), str(a))


def _remove(p: Path) -> None:
    """Remove a file or a directory tree (what a swap left behind), ignoring errors."""
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            p.unlink()


def swap_dir(new: Path, target: str | Path) -> Path:
    """Put the complete directory ``new`` at ``target``, replacing what was there as one step.

    ``new`` may also be a complete file, and ``target`` a file or a directory: a dataset of parquet parts
    (``earlyeval --scheduler ingest``) and the one-file dataset replace each other this way.
    Every file of ``new`` and the directory itself are fsynced first.  When ``target`` exists, the
    two are exchanged atomically (Linux ``renameat2``) and the old one is removed afterwards: a kill
    at any moment leaves ``target`` either the old complete directory or the new one.  Without
    ``renameat2`` the old directory is renamed aside and the new one renamed in (a window of one
    rename in which ``target`` is absent; the old copy then stays beside it as ``.<name>.old-*``)."""
    target = Path(target)
    if new.is_dir():
        for f in new.iterdir():
            if f.is_file():
                fsync_file(f)
        _fsync_dir(new)
    else:
        fsync_file(new)
    if not target.exists():
        os.rename(new, target)
        _fsync_dir(target.parent)
        return target
    if _exchange(new, target):
        _fsync_dir(target.parent)
        _remove(new)  # `new` now holds the old directory (or file)
        return target
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}-old-", dir=target.parent))
    os.rmdir(old)
    os.rename(target, old)
    os.rename(new, target)
    _fsync_dir(target.parent)
    _remove(old)
    return target


def write_json(obj: Any, path: str | Path) -> Path:
    """A report as JSON, atomically (temp file, fsync, rename): a killed writer leaves the previous report whole.
    numpy scalars and arrays and sets are written as plain JSON (NaN as null)."""
    return write_text(path, json.dumps(obj, indent=1, default=_jsonable))


def _jsonable(x: Any) -> Any:
    import numpy as np  # numpy only when a report is written: the live path imports this module too

    if isinstance(x, (np.floating,)):
        return None if np.isnan(x) else float(x)
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (set, frozenset)):
        return sorted(x)
    raise TypeError(f"not JSON serializable: {type(x).__name__}")

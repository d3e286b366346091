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
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

from earlyeval.core.errors import WriteError


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
        rest = q.name[len(stem) + 2 :] if q.name.startswith(f".{stem}.") else ""
        pid = rest.split(".", 1)[0].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            if q.is_dir() and not q.is_symlink():
                shutil.rmtree(q, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    q.unlink()


# what the machine said, in words (``WriteError``): the faults a full disk, a read-only mount, a file-size
# limit or a folder in the way produce
_FAULTS = {
    errno.ENOSPC: "disk full",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EFBIG: "file too large (the file-size limit of this process)",
    errno.EISDIR: "a folder is in the way",
    errno.ENOTDIR: "a file is in the way of a folder",
    errno.EEXIST: "a file is in the way of a folder",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EIO: "I/O error",
    errno.EMFILE: "too many open files",
    errno.ENAMETOOLONG: "file name too long",
}


def write_error(e: OSError, target: str | Path) -> WriteError:
    """The one-line ``WriteError`` for an OSError met while writing ``target`` (pyarrow's carry the errno in
    their text only)."""
    code = e.errno
    if code is None:
        m = re.search(r"errno[ =]?(\d+)", str(e), re.I)
        code = int(m.group(1)) if m else None
    what = _FAULTS.get(code) if code is not None else None
    return WriteError(str(target), what or (e.strerror or str(e) or type(e).__name__), code)


@contextlib.contextmanager
def machine_faults(target: str | Path) -> Iterator[None]:
    """An OSError of the machine while writing ``target`` becomes ``WriteError``: "disk full while writing X;
    nothing was replaced" (every write here is atomic, so that is true).  A missing file stays itself."""
    try:
        yield
    except (WriteError, FileNotFoundError):
        raise
    except OSError as e:
        raise write_error(e, target) from e


_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def _inside(p: Path, root: Path) -> bool:
    return p == root or root in p.parents


def check_target(target: str | Path, root: str | Path | None = None) -> None:
    """Refuse (``WriteError``) to replace what is not a regular file: a device node, a FIFO or a socket at
    ``target``, or a symbolic link there that leaves its folder (or ``root``); with ``root``, also a path
    whose folders (a symlinked sub-folder) lead outside ``root``.  A folder in the way is left to the
    writers (EISDIR).  Why: ``os.replace`` onto ``/dev/null`` would replace the device, and a link planted in
    an output folder must not carry a write elsewhere."""
    t = Path(target)
    base = Path(root).resolve() if root is not None else t.parent.resolve()
    if root is not None and not _inside(t.parent.resolve(), base):
        raise WriteError(
            str(t),
            f"a symbolic link in the path leads outside {root} (to {t.parent.resolve()}); "
            "not followed",
            errno.ELOOP,
        )
    try:
        st = os.lstat(t)
    except FileNotFoundError:
        return
    except OSError as e:
        raise write_error(e, t) from e
    if stat.S_ISLNK(st.st_mode):
        dest = t.resolve()
        if not _inside(dest.parent, base):
            raise WriteError(
                str(t),
                f"a symbolic link leading outside {base} (to {dest}); not followed",
                errno.ELOOP,
            )
        return
    for test, what in _KINDS:
        if test(st.st_mode):
            raise WriteError(str(t), f"{what}, not a regular file,", errno.EINVAL)


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _stage(
    target: Path, data: bytes | None = None, root: str | Path | None = None, parents: bool = True
) -> Path:
    """A temp file beside ``target`` (the permissions a plain open() would give), holding ``data`` fsynced;
    ``target`` checked first (``check_target``), before any folder is made (none with ``parents=False``: a
    writer into a folder another process may remove must not re-create it)."""
    check_target(target, root)
    if parents:
        target.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(target.parent, target.name)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent
    )
    try:
        os.fchmod(fd, 0o666 & ~_umask())  # not mkstemp's 0600
        if data is not None:
            _write_fd(fd, data)
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    return Path(tmp)


@contextlib.contextmanager
def atomic_path(path: str | Path, parents: bool = True) -> Iterator[Path]:
    """A temp path beside ``path`` to write to; on success it is fsynced and renamed onto ``path``,
    on any error (or kill) the target is untouched and the temp file is removed (when still possible;
    one left by a killed writer is removed by the next write of the same target).  A fault of the
    machine is a ``WriteError`` naming ``path``."""
    target = Path(path)
    tmp_p: Path | None = None
    try:
        with machine_faults(target):
            tmp_p = _stage(target, parents=parents)
            yield tmp_p
            fsync_file(tmp_p)
            os.replace(tmp_p, target)
            _fsync_dir(target.parent)
    finally:
        if tmp_p is not None and tmp_p.exists():
            tmp_p.unlink()


def write_bytes(path: str | Path, data: bytes, root: str | Path | None = None) -> Path:
    """``data`` at ``path``, atomically; with ``root``, refused when a symlinked folder leads outside it."""
    target = Path(path)
    with machine_faults(target):
        tmp = _stage(target, data, root)
        try:
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                tmp.unlink()
        _fsync_dir(target.parent)
    return target


def write_files(files: dict[Path, bytes]) -> list[Path]:
    """Several files written as one set: every one is staged beside its target and fsynced first; then they
    are renamed in, each old copy kept as a hard link until all are in, so a rename that fails half-way puts
    the old ones back.  A fault (a full disk, a folder in the way) replaces none of them (``WriteError``).
    Use it under ``folder_lock`` so that two writers of one folder never interleave their renames."""
    targets = [Path(t) for t in files]
    for t in targets:
        if (
            t.is_dir() and not t.is_symlink()
        ):  # checked before any rename: the set goes in whole or not at all
            raise WriteError(str(t), "a folder is in the way", errno.EISDIR)
        check_target(t)
    staged: list[tuple[Path, Path]] = []
    done: list[tuple[Path, Path | None]] = []  # (target, its old copy) renamed in so far
    try:
        for target, data in zip(targets, files.values()):
            with machine_faults(target):
                staged.append((_stage(target, data), target))
        for tmp, target in staged:
            with machine_faults(target):
                old = _keep_old(target)
                try:
                    os.replace(tmp, target)
                except BaseException:
                    if old is not None:
                        old.unlink()
                    raise
                done.append((target, old))
        for d in {t.parent for t in targets}:
            _fsync_dir(d)
    except BaseException:
        for target, old in reversed(done):  # put the previous set back
            with contextlib.suppress(OSError):
                if old is not None:
                    os.replace(old, target)
                else:
                    target.unlink()
        raise
    finally:
        for tmp, _ in staged:
            if tmp.exists():
                tmp.unlink()
        for _, old in done:
            if old is not None and old.exists():
                with contextlib.suppress(OSError):
                    old.unlink()
    return targets


def _keep_old(target: Path) -> Path | None:
    """A hard link to ``target``'s current file (no data copied), to put it back if the set fails; None
    when there is none (or the file system has no hard links: then a half-failed set cannot be undone)."""
    if not target.is_file():
        return None
    old = target.parent / f".{target.name}.{os.getpid()}.old"
    with contextlib.suppress(FileNotFoundError):
        old.unlink()
    try:
        os.link(target, old)
    except OSError:
        return None
    return old


LOCK_FILE = ".earlyeval.lock"


def _open_lock(lock: Path) -> int:
    """The lock file, opened without following a symlink (``O_NOFOLLOW``) and without blocking on a FIFO;
    anything but a regular file there is refused (``WriteError``), never truncated."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    if os.path.islink(lock):
        raise WriteError(
            str(lock), "a symbolic link is in the place of the lock file: not followed", errno.ELOOP
        )
    try:
        st = os.lstat(lock)
    except FileNotFoundError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise WriteError(str(lock), "the lock file is not a regular file: not opened", errno.EINVAL)
    try:
        fd = os.open(lock, flags, 0o666 & ~_umask())
    except OSError as e:
        if e.errno == errno.ELOOP:  # a link planted between the check and the open
            raise WriteError(
                str(lock),
                "a symbolic link is in the place of the lock file: not followed",
                errno.ELOOP,
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteError(str(lock), "the lock file is not a regular file: not opened", errno.EINVAL)
    return fd


@contextlib.contextmanager
def folder_lock(folder: str | Path, timeout: float = 300.0) -> Iterator[None]:
    """One writer at a time per output folder: an advisory ``flock`` on ``<folder>/.earlyeval.lock`` (other
    earlyeval processes wait for it, up to ``timeout`` seconds, then a ``WriteError`` names the holder).
    Without fcntl (not POSIX) there is no lock and the writes stay atomic one by one."""
    d = Path(folder)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    lock = d / LOCK_FILE
    with machine_faults(d):  # no lock file can be made: nothing in the folder can be written either
        d.mkdir(parents=True, exist_ok=True)
        fd = _open_lock(lock)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    try:
                        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                    except OSError:
                        holder = "?"
                    raise WriteError(
                        str(d),
                        f"another earlyeval process (pid {holder}) holds {LOCK_FILE} "
                        f"after {timeout:g} s",
                        errno.EAGAIN,
                    ) from None
                time.sleep(0.02)
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def write_text(path: str | Path, text: str, root: str | Path | None = None) -> Path:
    return write_bytes(path, text.encode("utf-8"), root)


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
    if err in (
        errno.ENOSYS,
        errno.EINVAL,
        errno.EOPNOTSUPP,
        getattr(errno, "ENOTSUP", errno.EOPNOTSUPP),
    ):
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


def json_bytes(obj: Any) -> bytes:
    """A report's JSON text (numpy scalars and arrays and sets as plain JSON, NaN as null), as bytes."""
    return json.dumps(obj, indent=1, default=_jsonable).encode("utf-8")


def write_json(obj: Any, path: str | Path) -> Path:
    """A report as JSON, atomically (temp file, fsync, rename): a killed writer leaves the previous report whole.
    numpy scalars and arrays and sets are written as plain JSON (NaN as null)."""
    return write_bytes(path, json_bytes(obj))


def savefig(fig: Any, path: str | Path, **kw: Any) -> Path:
    """A matplotlib figure written atomically (the format from ``path``'s suffix): a full disk leaves the old PNG."""
    target = Path(path)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format=target.suffix.lstrip(".") or "png", **kw)
    return target


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

"""A directory opened once, for the model-directory loader (``modeldir``): its files are read relative to
the open directory (a concurrent ``atomic.swap_dir`` cannot mix two versions), not through symlinks, only if
regular and no larger than the caller's limit; each refusal is a ``ModelDirError`` naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from earlyeval.core.errors import ModelDirError


class OpenDir:
    """A model directory opened once: every file is read relative to the same directory (a concurrent
    ``swap_dir`` cannot mix two versions), without following symlinks, only if regular, size-bounded."""

    def __init__(self, p: Path):
        self.p = p
        if not p.is_dir():
            raise ModelDirError(
                str(p), "<dir>", "not a directory (train a model with `earlyeval train --bench B`)"
            )
        try:
            self.fd = os.open(p, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as e:
            raise ModelDirError(str(p), "<dir>", f"cannot open ({e.strerror})") from e

    def close(self) -> None:
        os.close(self.fd)

    def swapped(self) -> bool:
        """Whether ``p`` now names another directory than the one opened (a concurrent save)."""
        try:
            a, b = os.fstat(self.fd), os.stat(self.p)
            return (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino)
        except OSError:
            return True

    def read(self, name: str, limit: int) -> bytes:
        f = str(self.p / name)
        try:
            fd = os.open(
                name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0), dir_fd=self.fd
            )
        except FileNotFoundError as e:
            raise ModelDirError(f, name, "missing") from e
        except OSError as e:  # ELOOP: a symlink
            raise ModelDirError(f, name, f"not a regular file ({e.strerror})") from e
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise ModelDirError(f, name, "not a regular file")
            if st.st_size > limit:
                raise ModelDirError(
                    f, name, f"{st.st_size} bytes, more than the {limit} a model file may have"
                )
            chunks, n = [], 0
            while True:
                b = os.read(fd, min(1 << 20, limit + 1 - n))
                if not b:
                    break
                chunks.append(b)
                n += len(b)
                if n > limit:
                    raise ModelDirError(
                        f, name, f"more than the {limit} bytes a model file may have"
                    )
            return b"".join(chunks)
        finally:
            os.close(fd)

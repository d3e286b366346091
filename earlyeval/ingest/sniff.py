"""What ``--format auto`` reads of a file to tell its format: a bounded prefix, never the whole file.

``read_head(path)`` is the first ``SNIFF_BYTES`` bytes (gunzipped for ``.gz``, as the readers do) and the JSON
keys they show; a format's optional ``sniff(path, heads, fmt) -> bool`` says from them whether the file (or
trial folder) is one of its runs.  ``Heads`` reads each file once, however many formats ask.
"""

from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

# what detection reads of a file at most, decompressed (the readers take up to 256 MiB)
SNIFF_BYTES = 64 << 10

# a string (one cut off by the prefix runs to its end: no rescan from inside it) or a structural character
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[{}\[\]:]')
_MAX_KEYS = 64


@dataclass(frozen=True)
class Head:
    """A file's first bytes as far as detection goes: its text, its JSON root (``{``, ``[`` or ``""`` when it
    is no JSON), the keys of the root object (of the first item of a root list) the prefix shows, in order."""

    path: Path
    raw: bytes
    text: str
    root: str
    keys: tuple[str, ...]
    complete: bool  # the whole file fits in the prefix
    error: str | None = None

    def has(self, *keys: str) -> bool:
        """Whether every one of ``keys`` is a key of the root object (of the first item of a root list)."""
        return all(k in self.keys for k in keys)

    def mentions(self, pattern: str) -> bool:
        """Whether the prefix holds ``pattern`` (a regular expression) anywhere."""
        return re.search(pattern, self.text) is not None


def root_keys(text: str) -> tuple[str, tuple[str, ...]]:
    """(root, keys): the JSON root character and the keys the prefix ``text`` shows at the root object's
    level (for a root list, its first item's), as far as the text goes: a cut-off value is no matter."""
    stripped = text.lstrip("\ufeff \t\r\n")
    root = stripped[:1] if stripped[:1] in "{[" else ""
    if not root:
        return "", ()
    want = 1 if root == "{" else 2
    depth, keys, last = 0, [], None
    for m in _TOKEN.finditer(stripped):
        tok = m.group()
        if tok in "{[":
            depth += 1
        elif tok in "}]":
            depth -= 1
            if depth < want:
                break
        elif tok == ":" and depth == want and last is not None:
            keys.append(last)
            if len(keys) >= _MAX_KEYS:
                break
        last = tok[1:-1] if tok.startswith('"') else None
    return root, tuple(keys)


def read_head(path: Path, limit: int = SNIFF_BYTES) -> Head:
    """The first ``limit`` bytes of ``path`` (of its decompressed content for ``.gz``) as a Head; an
    unreadable file is a Head with ``error`` set and nothing in it."""
    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            raw = f.read(limit + 1)
    except (OSError, EOFError) as e:
        return Head(path, b"", "", "", (), False, f"cannot read: {e}")
    complete = len(raw) <= limit
    raw = raw[:limit]
    text = raw.decode("utf-8", errors="replace")
    root, keys = root_keys(text)
    return Head(path, raw, text, root, keys, complete)


class Heads:
    """Each file's Head, read once for all the formats that ask."""

    def __init__(self, limit: int = SNIFF_BYTES) -> None:
        self.limit = limit
        self._seen: dict[Path, Head] = {}

    def of(self, path: Path) -> Head:
        if path not in self._seen:
            self._seen[path] = read_head(path, self.limit)
        return self._seen[path]

    def __len__(self) -> int:
        return len(self._seen)

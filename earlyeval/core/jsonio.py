"""Reading native files: ``x.json`` and ``x.json.gz`` alike, with named errors."""

from __future__ import annotations

import gzip
import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from earlyeval.core.env import env_int
from earlyeval.core.errors import IngestError, StrictJSONError

# the most bytes one input file may hold once decompressed (the largest shared run file is ~8 MB): a
# small .gz that expands to gigabytes is refused, named, instead of filling memory.  Configurable with
# EARLYEVAL_MAX_INPUT_BYTES (read at each call) or ``max_bytes``.
DEFAULT_MAX_INPUT_BYTES = 256 << 20


def max_input_bytes() -> int:
    """EARLYEVAL_MAX_INPUT_BYTES (a positive integer), else the default; a malformed value is a ``SettingError``."""
    return env_int("EARLYEVAL_MAX_INPUT_BYTES", DEFAULT_MAX_INPUT_BYTES, lo=1, hi=1 << 50)


def read_bytes(path: str | Path, max_bytes: int | None = None) -> bytes:
    """The file's bytes, transparently gunzipped when it ends in .gz, at most ``max_bytes`` of them."""
    p = Path(path)
    limit = max_input_bytes() if max_bytes is None else int(max_bytes)
    try:
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(
            p, "rb"
        ) as f:  # in chunks: a read(limit + 1) would allocate the whole limit up front
            chunks, n = [], 0
            while n <= limit:
                b = f.read(min(1 << 20, limit + 1 - n))
                if not b:
                    break
                chunks.append(b)
                n += len(b)
            data = b"".join(chunks)
    except (OSError, EOFError) as e:  # truncated gzip, unreadable file
        raise IngestError(str(p), "<file>", f"cannot read: {e}") from e
    if len(data) > limit:
        raise IngestError(
            str(p),
            "<file>",
            f"more than {limit} bytes{' once decompressed' if p.suffix == '.gz' else ''} "
            f"({'EARLYEVAL_MAX_INPUT_BYTES' if max_bytes is None else 'the limit'}): not read",
        )
    return data


def check_size(path: str | Path, max_bytes: int | None = None) -> None:
    """For a reader that opens the file itself (inspect's log API): the same limit as ``read_bytes``, checked
    before it reads.  A zip archive (an inspect ``.eval``) is checked member by member, by the sizes its
    central directory declares (Python's zipfile never inflates a member past its declared size), so a
    small archive that would inflate to gigabytes is refused naming the member; any other file by its size."""
    import zipfile

    p = Path(path)
    limit = max_input_bytes() if max_bytes is None else int(max_bytes)
    try:
        if zipfile.is_zipfile(p):
            with zipfile.ZipFile(p) as z:
                for info in z.infolist():
                    if info.file_size > limit:
                        raise IngestError(
                            str(p),
                            info.filename,
                            f"{info.file_size} bytes once decompressed, more "
                            f"than {limit} (EARLYEVAL_MAX_INPUT_BYTES): not read",
                        )
            return
        size = p.stat().st_size
    except (OSError, zipfile.BadZipFile) as e:
        raise IngestError(str(p), "<file>", f"cannot read: {e}") from e
    if size > limit:
        raise IngestError(
            str(p),
            "<file>",
            f"{size} bytes, more than {limit} (EARLYEVAL_MAX_INPUT_BYTES): not read",
        )


def read_text(path: str | Path, max_bytes: int | None = None) -> str:
    """The file's text (UTF-8), transparently gunzipped when it ends in .gz; size-bounded (``read_bytes``)."""
    data = read_bytes(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IngestError(str(path), "<file>", f"cannot read: {e}") from e
    # universal newlines, as text-mode reading did (\r\n and \r -> \n): parsed text is unchanged
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def load_json(path: str | Path) -> Any:
    """Strict JSON; a parse failure names the file and the position."""
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise IngestError(
            str(path), "<json>", f"invalid JSON at line {e.lineno} col {e.colno}: {e.msg}"
        ) from e


_TRAILING_COMMA = re.compile(r",(\s*[\]}])")


def load_json_trailing_commas(path: str | Path) -> Any:
    """JSON that is valid except for trailing commas before ] or } (CodeR's results.json).

    Only that one quirk is repaired: any other syntax error still raises.
    """
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_TRAILING_COMMA.sub(r"\1", text))
    except json.JSONDecodeError as e:
        raise IngestError(
            str(path),
            "<json>",
            f"invalid JSON even after removing trailing commas: line {e.lineno}: {e.msg}",
        ) from e


def load_jsonl(path: str | Path) -> list[Any]:
    out = []
    for i, line in enumerate(read_text(path).splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise IngestError(str(path), f"<line {i}>", f"invalid JSON: {e.msg}") from e
    return out


def strip_gz(name: str) -> str:
    return name[:-3] if name.endswith(".gz") else name


def require(
    obj: Any, key: str, typ: type | tuple[type, ...], file: str | Path, where: str = ""
) -> Any:
    """obj[key], checked for presence and type, else an IngestError naming the field."""
    field = f"{where}.{key}" if where else key
    if not isinstance(obj, dict):
        raise IngestError(
            str(file), where or "<root>", f"expected an object, got {type(obj).__name__}"
        )
    if key not in obj:
        raise IngestError(str(file), field, "missing")
    v = obj[key]
    if not isinstance(v, typ):
        names = typ.__name__ if isinstance(typ, type) else "/".join(t.__name__ for t in typ)
        raise IngestError(str(file), field, f"expected {names}, got {type(v).__name__}")
    return v


# ---------------------------------------------------------------- settings files: strict JSON, regular files only

# nesting a settings file may have (a pass state, a thresholds file, a manifest are a few levels deep): deeper is
# refused before the parser recurses into it
MAX_SETTINGS_DEPTH = 64


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise StrictJSONError(
                k, f"the key {k!r} is given twice (a settings file says each thing once)"
            )
        out[k] = v
    return out


def _no_constant(name: str) -> Any:
    raise StrictJSONError("<json>", f"{name} is not JSON (a number must be finite)")


def _too_deep(obj: Any, limit: int) -> bool:
    """Whether ``obj`` nests deeper than ``limit`` (iteratively: nothing here recurses)."""
    stack = [(obj, 0)]
    while stack:
        x, d = stack.pop()
        if d > limit:
            return True
        if isinstance(x, dict):
            stack.extend((v, d + 1) for v in x.values())
        elif isinstance(x, list):
            stack.extend((v, d + 1) for v in x)
    return False


def loads_strict(
    text: str, *, allow_nan: bool = False, max_depth: int | None = MAX_SETTINGS_DEPTH
) -> Any:
    """Strict JSON for a settings file: a key given twice in one object is refused (``json.loads`` keeps the
    last one without a word), as are NaN/Infinity (unless ``allow_nan``: a model's own arrays hold NaN) and
    nesting deeper than ``max_depth`` (None: the parser's own limit, which it reports).  Raises
    ``StrictJSONError``."""
    try:
        obj = json.loads(
            text,
            object_pairs_hook=_no_repeats,
            parse_constant=float if allow_nan else _no_constant,
        )
    except json.JSONDecodeError as e:
        raise StrictJSONError(
            "<json>", f"invalid JSON at line {e.lineno} col {e.colno}: {e.msg}"
        ) from e
    except RecursionError as e:  # the parser recurses once per level: past the interpreter's limit
        levels = f"{max_depth} levels" if max_depth is not None else "the parser goes"
        raise StrictJSONError("<json>", f"nested too deeply (deeper than {levels})") from e
    if max_depth is not None and _too_deep(obj, max_depth):
        raise StrictJSONError("<json>", f"nested deeper than {max_depth} levels")
    return obj


def dumps_strict(obj: Any) -> bytes:
    """A settings file's bytes: strict JSON (``allow_nan=False``: NaN or Infinity is a ValueError here, never a
    file other readers refuse), keys sorted, one item a line."""
    return (json.dumps(obj, indent=1, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")


_KIND_NAMES = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
)


def read_regular(path: str | Path, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``, at most ``max_bytes`` (default ``EARLYEVAL_MAX_INPUT_BYTES``).

    Opened without blocking (a FIFO is never waited on) and checked on the open descriptor: a device, a FIFO, a
    socket or a folder is refused, never read (``/dev/zero`` would fill memory, a FIFO block forever).  Raises
    ``FileNotFoundError`` when absent and ``IngestError`` (file, "<file>", why) for anything else."""
    p = Path(path)
    limit = max_input_bytes() if max_bytes is None else int(max_bytes)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise
    except OSError as e:
        raise IngestError(str(p), "<file>", f"cannot open ({e.strerror or e})") from e
    try:
        st = os.fstat(fd)
        for test, what in _KIND_NAMES:
            if test(st.st_mode):
                raise IngestError(str(p), "<file>", f"{what}, not a regular file: not read")
        if st.st_size > limit:
            raise IngestError(str(p), "<file>", f"{st.st_size} bytes, more than {limit}: not read")
        chunks, n = [], 0
        while n <= limit:  # the size may grow while it is read: the bound holds on what is read
            b = os.read(fd, min(1 << 20, limit + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
    except OSError as e:
        raise IngestError(str(p), "<file>", f"cannot read ({e.strerror or e})") from e
    finally:
        os.close(fd)
    if n > limit:
        raise IngestError(str(p), "<file>", f"more than {limit} bytes: not read")
    return b"".join(chunks)


def read_settings_json(
    path: str | Path, max_bytes: int | None = None, allow_nan: bool = False
) -> Any:
    """A settings file (a thresholds file, a pass state, a manifest) read whole: a regular file within the bound
    (``read_regular``), UTF-8, strict JSON (``loads_strict``).  Every failure is an ``IngestError`` naming the
    file and the repeated key or ``<file>``/``<json>``; an absent file is ``FileNotFoundError``."""
    data = read_regular(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IngestError(
            str(path), "<file>", f"not UTF-8 text ({e.reason} at byte {e.start})"
        ) from e
    try:
        return loads_strict(text, allow_nan=allow_nan)
    except StrictJSONError as e:
        raise IngestError(str(path), e.key, e.reason) from e

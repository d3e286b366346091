"""One exception type per failure family, each naming the file and field at fault."""

from __future__ import annotations

from typing import Any


class EarlyEvalError(Exception):
    """Base class for errors earlyeval raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its message and fields, not by calling __init__ with ``args``: an error raised on a dask
        # worker (``--scheduler``) reaches the driver as itself, its one line intact
        return (_rebuild, (type(self), self.args, dict(self.__dict__)))


def _rebuild(
    cls: type[EarlyEvalError], args: tuple[Any, ...], state: dict[str, Any]
) -> EarlyEvalError:
    e = cls.__new__(cls)
    Exception.__init__(e, *args)
    e.__dict__.update(state)
    return e


class IngestError(EarlyEvalError):
    """A native run file could not be turned into a Trajectory."""

    def __init__(self, file: str, field: str, reason: str):
        self.file = str(file)
        self.field = field
        # one line, whatever a wrapped library's message holds (pydantic's span several): a skip is one line
        self.reason = " ".join(line.strip() for line in str(reason).splitlines() if line.strip())
        super().__init__(f"{self.file}: field '{field}': {self.reason}")

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "field": self.field, "reason": self.reason}


class CatalogError(EarlyEvalError):
    """A benchmark catalog (earlyeval/catalogs/<bench>.toml or <workspace>/data/<bench>.toml) is missing or malformed."""

    def __init__(self, file: str, field: str, reason: str):
        self.file, self.field, self.reason = str(file), field, reason
        super().__init__(f"{self.file}: field '{field}': {reason}")


class ModelDirError(EarlyEvalError):
    """A model directory is missing, truncated, tampered with or of another version."""

    def __init__(self, path: str, field: str, reason: str):
        self.path, self.field, self.reason = str(path), field, reason
        super().__init__(f"{self.path}: '{field}': {reason}")


class StrictJSONError(EarlyEvalError, ValueError):
    """A settings text that is not strict JSON (``core.jsonio.loads_strict``): a repeated key, NaN or Infinity,
    nesting past the bound, a parse error.  ``key``: the repeated key (or "<json>"); the caller names its file."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}" if key != "<json>" else reason)
        self.key, self.reason = key, reason


class PassStateError(EarlyEvalError, ValueError):
    """A benchmark pass's state file that cannot be resumed by this pass: written for another model or other
    settings, signed with another key, or not a regular file.  Refused, never resumed nor overwritten."""

    def __init__(self, file: str, field: str, reason: str):
        self.file, self.field, self.reason = str(file), field, reason
        super().__init__(f"{self.file}: field '{field}': {reason}")


class UnknownPluginError(EarlyEvalError, ValueError):
    """A feature family or run format named in a config that no registry knows (never dropped silently)."""

    def __init__(self, kind: str, name: str, known: list[str], reason: str = "", group: str = ""):
        self.kind, self.name, self.known = kind, name, list(known)
        why = f": {reason}" if reason else ""
        ep = f", or an entry point of group '{group}'" if group else ""
        super().__init__(
            f"unknown {kind} '{name}'{why} (known: {', '.join(self.known) or 'none'}; "
            f"or a dotted path 'package.module:Class'{ep})"
        )


class NothingScoredError(EarlyEvalError, ValueError):
    """`earlyeval score` read no run at all (empty folder, wrong --format): nothing is written."""


class ScoreRefusedError(EarlyEvalError, ValueError):
    """`earlyeval score` would mislead and stops before writing: an output folder holding another scoring,
    a model of another benchmark, a format it cannot tell.  The message names the way past it."""


class SettingError(EarlyEvalError, ValueError):
    """A setting outside its type or range (an environment variable, an option), named where it was read."""

    def __init__(self, source: str, key: str, reason: str):
        self.source, self.key, self.reason = source, key, reason
        super().__init__(f"{source}: '{key}': {reason}")


class WriteError(EarlyEvalError, OSError):
    """The machine refused a write (disk full, read-only, file-size limit, a folder in the way): the message
    says which and names the file; the write was atomic, so nothing was replaced."""

    def __init__(self, path: str, what: str, err: int | None = None):
        self.path, self.what = str(path), what
        OSError.__init__(self, err or 0, what)
        self.errno = err
        self.args = (f"{what} while writing {self.path}; nothing was replaced",)

    def __str__(self) -> str:
        return f"{self.what} while writing {self.path}; nothing was replaced"


class ClusterError(EarlyEvalError, RuntimeError):
    """Work on a ``--scheduler`` cluster was lost (a worker died, its inputs went with it) more times than retried."""


class MissingExtraError(EarlyEvalError, ImportError):
    """A part of earlyeval needs an optional extra that is not installed (docs/install.md, "Extras")."""

    def __init__(self, what: str, extra: str, modules: list[str]):
        self.what, self.extra, self.modules = what, extra, list(modules)
        super().__init__(
            f"{what} needs the [{extra}] extra, which is not installed (missing: {', '.join(modules)}): "
            f"make install, or pip install '.[{extra}]' in the earlyeval repository"
        )

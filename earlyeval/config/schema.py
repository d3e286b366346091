"""One schema for earlyeval's settings: benchmark catalogs, adapter config blocks, model manifests, environment.

Each setting is checked where it is read, so no value reaches a decision with another meaning; standard library
only, since the live path imports it. Why and how: docs/architecture.md, "One schema for every setting".
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Callable, Mapping, Sequence

from earlyeval.core.env import env_flag, env_int
from earlyeval.core.errors import EarlyEvalError

__all__ = [
    "Bool",
    "Choice",
    "Date",
    "Glob",
    "Int",
    "Invalid",
    "ListOf",
    "Num",
    "OneOf",
    "Str",
    "Table",
    "check",
    "env_flag",
    "env_int",
    "parse_date",
]

MAX_DEPTH = 64  # a settings value nested deeper than this is refused before anything walks it


class Invalid(EarlyEvalError, ValueError):
    """One value that does not fit its schema: the dotted key and why (turned into the caller's error)."""

    def __init__(self, key: str, reason: str, typed: bool = False) -> None:
        super().__init__(f"{key}: {reason}")
        self.key, self.reason = key, reason
        self.typed = (
            typed  # the value had the right type and failed its range (``OneOf`` reports this one)
        )


def _show(v: Any) -> str:
    s = repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


def _kind(v: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(v), type(v).__name__)


def _join(key: str, sub: str | int) -> str:
    if isinstance(sub, int):
        return f"{key}[{sub}]"
    return f"{key}.{sub}" if key else sub


class Validator:
    """Checks (and normalises) one value; raises ``Invalid(key, reason)``."""

    def __call__(self, v: Any, key: str) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:
        return "a value"


@dataclass(frozen=True)
class Str(Validator):
    nonempty: bool = False
    pattern: str | None = None  # a regex the whole string must match
    what: str = "a string"

    def __call__(self, v: Any, key: str) -> str:
        if not isinstance(v, str):
            raise Invalid(key, f"{_show(v)} is {_kind(v)}, expected {self.what}")
        if self.nonempty and not v.strip():
            raise Invalid(key, f"empty, expected {self.what}")
        if "\0" in v:
            raise Invalid(key, "contains a NUL character")
        if self.pattern and not re.fullmatch(self.pattern, v):
            raise Invalid(key, f"{_show(v)} is not {self.what}")
        return v

    def describe(self) -> str:
        return self.what


@dataclass(frozen=True)
class Int(Validator):
    lo: int | None = None
    hi: int | None = None

    def __call__(self, v: Any, key: str) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise Invalid(key, f"{_show(v)} is {_kind(v)}, expected {self.describe()}")
        if (self.lo is not None and v < self.lo) or (self.hi is not None and v > self.hi):
            raise Invalid(key, f"{v} is out of range, expected {self.describe()}", typed=True)
        return v

    def describe(self) -> str:
        lo, hi = self.lo, self.hi
        if lo is not None and hi is not None:
            return f"an integer in [{lo}, {hi}]"
        return (
            f"an integer >= {lo}"
            if lo is not None
            else (f"an integer <= {hi}" if hi is not None else "an integer")
        )


@dataclass(frozen=True)
class Num(Validator):
    """A finite real number (an int is accepted and made a float), optionally in a range."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    why: str = ""  # said when the value is out of range

    def __call__(self, v: Any, key: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise Invalid(key, f"{_show(v)} is {_kind(v)}, expected {self.describe()}")
        try:
            x = float(v)
        except OverflowError:
            raise Invalid(key, f"{_show(v)} is too large, expected {self.describe()}") from None
        if not math.isfinite(x):
            raise Invalid(key, f"{x} is not finite, expected {self.describe()}", typed=True)
        lo_bad = self.lo is not None and (x <= self.lo if self.lo_open else x < self.lo)
        hi_bad = self.hi is not None and (x >= self.hi if self.hi_open else x > self.hi)
        if lo_bad or hi_bad:
            raise Invalid(
                key,
                f"{_show(v)} is out of range, expected {self.describe()}"
                + (f" ({self.why})" if self.why else ""),
                typed=True,
            )
        return x

    def describe(self) -> str:
        if self.lo is not None and self.hi is not None:
            return f"a number in {'(' if self.lo_open else '['}{self.lo:g}, {self.hi:g}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"a number {'>' if self.lo_open else '>='} {self.lo:g}"
        if self.hi is not None:
            return f"a number {'<' if self.hi_open else '<='} {self.hi:g}"
        return "a finite number"


@dataclass(frozen=True)
class Bool(Validator):
    def __call__(self, v: Any, key: str) -> bool:
        if not isinstance(v, bool):
            raise Invalid(key, f"{_show(v)} is {_kind(v)}, expected true or false (unquoted)")
        return v

    def describe(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Choice(Validator):
    choices: tuple[Any, ...] = ()

    def __call__(self, v: Any, key: str) -> Any:
        if (
            isinstance(v, bool)
            or v not in self.choices
            or type(v) not in {type(c) for c in self.choices}
        ):
            raise Invalid(key, f"{_show(v)} is not one of {', '.join(map(repr, self.choices))}")
        return v

    def describe(self) -> str:
        return "one of " + ", ".join(map(repr, self.choices))


def parse_date(v: Any, key: str = "date") -> str:
    """A real calendar date as "YYYY-MM-DD" (a TOML date too); anything else raises ``Invalid``."""
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        return v.isoformat()
    if not isinstance(v, str) or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", v):
        raise Invalid(key, f"{_show(v)} is not a YYYY-MM-DD date")
    try:
        _dt.date.fromisoformat(v)
    except ValueError as e:
        raise Invalid(key, f"{_show(v)} is not a real date ({e})") from None
    return v


@dataclass(frozen=True)
class Date(Validator):
    def __call__(self, v: Any, key: str) -> str:
        return parse_date(v, key)

    def describe(self) -> str:
        return "a YYYY-MM-DD date"


@dataclass(frozen=True)
class Glob(Validator):
    """A glob relative to a folder: not absolute, no '..' component (it would read outside the folder),
    '**' only as a whole component (pathlib refuses anything else at glob time)."""

    def __call__(self, v: Any, key: str) -> str:
        Str(nonempty=True, what="a relative glob")(v, key)
        if (
            v.startswith(("/", "\\", "~"))
            or PurePosixPath(v).is_absolute()
            or PureWindowsPath(v).is_absolute()
            or PureWindowsPath(v).drive
        ):
            raise Invalid(key, f"{_show(v)} is an absolute path: a glob is relative to its folder")
        parts = re.split(r"[/\\]", v)
        if ".." in parts:
            raise Invalid(
                key, f"{_show(v)} has a '..' component: a glob may not reach outside its folder"
            )
        if any("**" in p and p != "**" for p in parts):
            raise Invalid(key, f"{_show(v)}: '**' must be a whole path component")
        return v

    def describe(self) -> str:
        return "a relative glob"


@dataclass(frozen=True)
class ListOf(Validator):
    """An array of ``item``s; ``unique``: an item given twice is refused, naming both places (a family listed
    twice is fitted twice, a pattern twice says nothing more: a repeat is a slip, not a setting)."""

    item: Validator
    nonempty: bool = False
    max_len: int = 100_000
    unique: bool = False

    def __call__(self, v: Any, key: str) -> list[Any]:
        if not isinstance(v, (list, tuple)):  # a tuple from a Python caller; files give lists
            raise Invalid(key, f"{_show(v)} is {_kind(v)}, expected {self.describe()}")
        if self.nonempty and not v:
            raise Invalid(key, f"empty, expected {self.describe()}")
        if len(v) > self.max_len:
            raise Invalid(key, f"{len(v)} entries, more than {self.max_len}")
        out = [self.item(x, _join(key, i)) for i, x in enumerate(v)]
        if self.unique:
            first: dict[str, int] = {}
            for i, x in enumerate(out):
                j = first.setdefault(repr(x), i)
                if j != i:
                    raise Invalid(_join(key, i), f"{_show(x)} repeats {_join(key, j)}")
        return out

    def describe(self) -> str:
        return f"an array (each {self.item.describe()})"


@dataclass(frozen=True)
class OneOf(Validator):
    """The first alternative that accepts the value; else the error of the first one."""

    options: tuple[Validator, ...] = ()

    def __call__(self, v: Any, key: str) -> Any:
        errors: list[Invalid] = []
        for o in self.options:
            try:
                return o(v, key)
            except Invalid as e:
                errors.append(e)
        # an alternative that took the value's shape and failed inside it, or in its range, says more
        inner = [e for e in errors if e.key != key] or [e for e in errors if e.typed]
        if inner:
            raise inner[0]
        raise Invalid(key, f"{_show(v)} is not {' or '.join(o.describe() for o in self.options)}")

    def describe(self) -> str:
        return " or ".join(o.describe() for o in self.options)


@dataclass(frozen=True)
class Table(Validator):
    """A table (dict) of declared keys; ``extra``: a validator for undeclared keys (None: refused, named)."""

    fields: Mapping[str, Validator] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    extra: Validator | None = None
    what: str = "a table"

    def __call__(self, v: Any, key: str) -> dict[str, Any]:
        if not isinstance(v, Mapping):
            raise Invalid(key, f"{_show(v)} is {_kind(v)}, expected {self.what}")
        out: dict[str, Any] = {}
        for k in v:  # a misspelt key first: it says more than the key it was meant to be, missing
            if not isinstance(k, str):
                raise Invalid(key, f"key {_show(k)} is not a string")
            if self.extra is None and k not in self.fields:
                raise Invalid(
                    _join(key, k), f"unknown key (known: {', '.join(sorted(self.fields))})"
                )
        for k in self.required:
            if k not in v:
                raise Invalid(_join(key, k), "missing")
        for k, x in v.items():
            sub = _join(key, k)
            out[k] = self.fields.get(k, self.extra)(x, sub)  # type: ignore[misc]
        return out

    def describe(self) -> str:
        return self.what


@dataclass(frozen=True)
class Any_(Validator):
    """Any value of bounded nesting (free-form text such as a price's ``basis``)."""

    def __call__(self, v: Any, key: str) -> Any:
        _depth(v, key)
        return v


def _depth(v: Any, key: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH (iteratively: a 5000-deep array must not recurse), naming the
    key under which it goes too deep."""
    stack: list[tuple[Any, int, str]] = [(v, 0, key)]
    while stack:
        x, d, k = stack.pop()
        if d > MAX_DEPTH:
            raise Invalid(k, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(x, Mapping):
            stack.extend((y, d + 1, _join(k, str(n)) if d < 3 else k) for n, y in x.items())
        elif isinstance(x, (list, tuple)):
            stack.extend((y, d + 1, _join(k, i) if d < 3 else k) for i, y in enumerate(x))


def check(
    schema: Validator, value: Any, error: Callable[[str, str], Exception], key: str = ""
) -> Any:
    """``schema(value)``, with a failure raised as ``error(dotted_key, reason)`` (the caller's error type)."""
    try:
        _depth(value, key)
        return schema(value, key)
    except Invalid as e:
        raise error(e.key or "<root>", e.reason) from None


def names(seq: Sequence[str]) -> str:
    return ", ".join(seq)


# ================================================================== the value types the settings files share

NAME = Str(nonempty=True, what="a non-empty string")
TEXT = Str()
# a format or family: a registered name, or a dotted path "package.module:Class" (resolved later, by the
# registry, to a registered class only: see config.plugins)
PLUGIN = Str(
    nonempty=True,
    pattern=r"[A-Za-z0-9_.\-]+(:[A-Za-z_][A-Za-z0-9_.]*)?",
    what="a plugin name or 'package.module:Class'",
)
REGEX = Str(nonempty=True, what="a regular expression")
PROPORTION = Num(0.0, 1.0)
HEX64 = Str(pattern=r"[0-9a-f]{64}", what="a SHA-256 (64 hex digits)")
# the file schemas built from these (catalogs, model manifests): config.file_schemas

# ------------------------------------------------------------------ adapter config (the ``earlyeval`` block)

THRESHOLD = Num(0.5, 1.0, lo_open=True)
THRESHOLDS = Table(
    {"success": THRESHOLD, "failure": THRESHOLD, "min_halt_step": Int(1, 1_000_000)},
    required=("success", "failure"),
    what="a table {success, failure, min_halt_step}",
)
# the block itself: config.monitor_config.MonitorConfig

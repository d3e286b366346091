"""Settings records: frozen dataclasses whose fields carry their own check (``setting``), run once when the
record is made (``dataclasses.replace`` too), so a catalog, an adapter block, the CLI and a Python caller build
the same record and meet the same message. The file schemas are derived from the records (``file_schema``).
Why: docs/architecture.md, "One schema for every setting"."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, TypeVar

from earlyeval.config.schema import Invalid, Table, Validator
from earlyeval.core.errors import SettingError

__all__ = ["Record", "file_schema", "setting"]

R = TypeVar("R", bound="Record")
_MISSING: Any = dataclasses.MISSING


def setting(
    check_: Validator | type,
    default: Any = _MISSING,
    *,
    factory: Callable[[], Any] | None = None,
    key: str | None = None,
    optional: bool = False,
    in_file: bool = True,
    cast: type | None = None,
    secret: bool = False,
) -> Any:
    """A record field with its check beside it.

    ``check_``: a schema validator, or a Record class (the value is a table of that record); ``key``: its name in
    files when it is not the field's (``pass``, ``model_families``); ``optional``: None means unset and is not
    checked; ``in_file``: False for a setting only code may give; ``cast``: the type the checked value is held as;
    ``secret``: left out of the record's repr (a signing key)."""
    meta = {"check": check_, "key": key, "optional": optional, "in_file": in_file, "cast": cast}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta, repr=not secret)
    return dataclasses.field(default=default, metadata=meta, repr=not secret)


def _key(f: dataclasses.Field) -> str:
    return f.metadata.get("key") or f.name


def _is_record(c: Any) -> bool:
    return isinstance(c, type) and issubclass(c, Record)


class Record:
    """Base of a settings record (a frozen dataclass): checks every field when it is made."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            chk = f.metadata.get("check")
            v = getattr(self, f.name)
            if chk is None or (v is None and f.metadata.get("optional")):
                continue
            try:
                v = _checked(chk, v, _key(f))
            except Invalid as e:
                raise SettingError(type(self).__name__, e.key, e.reason) from None
            cast = f.metadata.get("cast")
            object.__setattr__(
                self, f.name, cast(v) if cast is not None and not isinstance(v, cast) else v
            )

    @classmethod
    def from_mapping(
        cls: type[R],
        values: Mapping[str, Any],
        error: Callable[[str, str], Exception],
        prefix: str = "",
        **fixed: Any,
    ) -> R:
        """The record of a file's table (keys as in files), every failure raised as ``error(dotted key, why)``;
        ``fixed``: fields given by the caller (by field name), checked the same way."""
        if not isinstance(values, Mapping):
            raise error(prefix or "<root>", f"{type(values).__name__} is not a table")
        by_key = {_key(f): f for f in dataclasses.fields(cls) if f.metadata.get("in_file", True)}  # type: ignore[arg-type]
        join = (lambda k: f"{prefix}.{k}") if prefix else (lambda k: k)
        kwargs = dict(fixed)
        for k, v in values.items():
            f = by_key.get(k)
            if f is None:
                raise error(join(str(k)), f"unknown key (known: {', '.join(sorted(by_key))})")
            kwargs[f.name] = v
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.name not in kwargs and f.default is _MISSING and f.default_factory is _MISSING:
                raise error(join(_key(f)), "missing")
        try:
            return cls(**kwargs)
        except SettingError as e:
            raise error(join(e.key), e.reason) from None

    def replace(self: R, **changes: Any) -> R:
        """A copy with ``changes`` (field names), checked like a new record."""
        return dataclasses.replace(self, **changes)  # type: ignore[type-var]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]


def _checked(chk: Validator | type, v: Any, key: str) -> Any:
    if _is_record(chk):
        if isinstance(v, chk):
            return v
        return chk.from_mapping(v, lambda k, why: Invalid(k, why), prefix=key)  # type: ignore[union-attr]
    return chk(v, key)


def file_schema(cls: type[Record], what: str) -> Table:
    """The ``config.schema.Table`` of a record's file keys (for a caller that checks a raw table)."""
    fields: dict[str, Validator] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.metadata.get("in_file", True):
            continue
        chk = f.metadata["check"]
        fields[_key(f)] = file_schema(chk, chk.__name__) if _is_record(chk) else chk
    required = tuple(
        _key(f)
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.default is _MISSING and f.default_factory is _MISSING
    )
    return Table(fields, required=required, what=what)

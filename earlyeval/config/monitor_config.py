"""A Monitor's settings as one checked record (``MonitorConfig``): what ``Monitor.load`` takes, what every adapter
builds from the ``earlyeval`` block of its framework's config, and what a Python caller passes by name
(``Monitor.load(dir, halt_on="failure")``).  Each field carries its check, and the record refuses settings that
contradict each other (a rule that can never fire).  Standard library only: the live path imports it.  The keys:
docs/integrations.md, "The earlyeval block"."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from earlyeval.config.records import Record, file_schema, setting
from earlyeval.config.schema import (
    NAME,
    THRESHOLD,
    THRESHOLDS,
    Bool,
    Choice,
    Int,
    Invalid,
    ListOf,
    Num,
    OneOf,
    Validator,
)
from earlyeval.core.errors import IngestError, SettingError
from earlyeval.core.jsonio import read_settings_json
from earlyeval.core.trajectory import Task

__all__ = ["ADAPTER", "MONITOR_KEYS", "MonitorConfig", "PassConfig"]

EXPLAIN = ("halt", "always", "never")  # when a decision carries its top features
MAX_THRESHOLDS_FILE = 1 << 16  # a thresholds file is a few bytes


@dataclass(frozen=True)
class PathSetting(Validator):
    """A path (text or ``os.PathLike``), held as text with ``~`` expanded."""

    what: str = "a path"

    def __call__(self, v: Any, key: str) -> str:
        if isinstance(v, os.PathLike):
            v = os.fspath(v)
        return str(Path(NAME(v, key)).expanduser())

    def describe(self) -> str:
        return self.what


PATH = PathSetting()
_PAIR_TEXT = re.compile(r"\s*([^,]+?)\s*,\s*([^,]+?)\s*")


@dataclass(frozen=True)
class ThresholdsSetting(Validator):
    """A (tau_s, tau_f) pair, a table {success, failure, min_halt_step}, ``"TS,TF"``, or the path of a JSON file of
    the table (read by ``MonitorConfig.threshold_table``); a pair or "TS,TF" is held as the table."""

    def __call__(self, v: Any, key: str) -> dict[str, Any] | str:
        if isinstance(v, Mapping):
            return THRESHOLDS(v, key)
        if isinstance(v, (list, tuple)):
            if len(v) != 2:
                raise Invalid(key, f"{len(v)} values, expected a (success, failure) pair")
            return {
                "success": THRESHOLD(v[0], f"{key}[0]"),
                "failure": THRESHOLD(v[1], f"{key}[1]"),
            }
        pair = _PAIR_TEXT.fullmatch(v) if isinstance(v, str) else None
        if pair is not None and all(_is_number(x) for x in pair.groups()):
            return self([float(x) for x in pair.groups()], key)
        return PATH(v, key)

    def describe(self) -> str:
        return "a (success, failure) pair, a table {success, failure, min_halt_step}, 'TS,TF' or a JSON file"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class TaskTable(Validator):
    """A task table: the path of a tasks.jsonl (read without pyarrow) or tasks.parquet written by ``earlyeval
    ingest``, or (from code) Tasks by id."""

    def __call__(self, v: Any, key: str) -> str | Mapping[str, Task]:
        if not isinstance(v, Mapping):
            return PATH(v, key)
        for k, t in v.items():
            if not isinstance(k, str) or not isinstance(t, Task):
                raise Invalid(key, f"entry {k!r} is not a task id with a Task")
        return v

    def describe(self) -> str:
        return "the path of a task table (tasks.jsonl or tasks.parquet), or a mapping of task id -> Task"


@dataclass(frozen=True)
class SigningKey(Validator):
    def __call__(self, v: Any, key: str) -> bytes | str:
        if isinstance(v, bytes) and v:
            return v
        return NAME(v, key)

    def describe(self) -> str:
        return "the signing key (bytes or text)"


@dataclass(frozen=True)
class PassConfig(Record):
    """A benchmark pass shared by the runs (``live.benchpass.Pass``): its state file, audit share and seed."""

    state: str = setting(NAME)
    # None: the Pass's default
    audit_share: float | None = setting(Num(0.0, 1.0), None, optional=True)
    seed: int = setting(Int(0, 2**63 - 1), 0)


@dataclass(frozen=True)
class MonitorConfig(Record):
    """What a Monitor is loaded with.  ``None`` leaves a setting to its user: ``model`` to ``Monitor.load``'s
    argument, ``halt_on`` to the Monitor ("both") or the adapter ("failure"), ``budget`` to the default (the
    steps dimension when the model has it).  ``key`` and ``use_c_api`` are given from code only."""

    model: str | None = setting(PATH, None, optional=True)  # the directory `earlyeval train` wrote
    # another operating point than the model's own (the directory is not changed)
    thresholds: dict[str, Any] | str | None = setting(ThresholdsSetting(), None, optional=True)
    # completes a task known by id (gold patch, tests, split)
    tasks: str | Mapping[str, Task] | None = setting(TaskTable(), None, optional=True)
    # model.policy.HALT_ON: which predicted outcomes may halt
    halt_on: str | None = setting(Choice(("failure", "success", "both")), None, optional=True)
    # "halt", or "shadow": decide and record at every step, halt nothing (what a team runs before turning halting
    # on); None: the model's own default ("shadow" when its forecast halts below its target, earlyeval train)
    mode: str | None = setting(Choice(("halt", "shadow")), None, optional=True)
    # raise at start() when the task lacks what the families need, instead of warning
    strict: bool = setting(Bool(), False)
    explain: str = setting(Choice(EXPLAIN), "halt")  # when a decision carries its top features
    top_k: int = setting(Int(0, 1000), 5)  # how many top features
    # the budget dimensions Decision.budget carries: true every one the model has, false none
    budget: bool | list[str] | None = setting(OneOf((Bool(), ListOf(NAME))), None, optional=True)
    # halt (predicting failure) when a dimension's P(feasible) falls below its tau: true every dimension
    halt_on_impossible: bool | str | list[str] = setting(OneOf((Bool(), NAME, ListOf(NAME))), False)
    # refuse a model directory not signed with `key` (else $EARLYEVAL_MODEL_KEY)
    require_signature: bool = setting(Bool(), False)
    key: bytes | str | None = setting(SigningKey(), None, optional=True, in_file=False, secret=True)
    use_c_api: bool = setting(Bool(), True, in_file=False)  # LightGBM's single-row C path
    pass_: PassConfig | None = setting(PassConfig, None, key="pass", optional=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        for key, why in self.contradictions():
            raise SettingError(type(self).__name__, key, why)

    def contradictions(self) -> list[tuple[str, str]]:
        """(key, why) per setting that can never take effect given another one: each names both keys."""
        out = []
        dims = self.halt_on_impossible
        if dims is not False and dims != []:
            if self.halt_on == "success":
                out.append(
                    (
                        "halt_on_impossible",
                        "can never fire with halt_on: success (a budget "
                        "halt predicts failure); set halt_on to failure or both, or remove it",
                    )
                )
            if self.budget is False:
                out.append(
                    (
                        "halt_on_impossible",
                        "can never fire with budget: false (no budget "
                        "estimate is made); remove one of the two",
                    )
                )
            named = (
                {dims} if isinstance(dims, str) else set(dims) if isinstance(dims, list) else set()
            )
            if isinstance(self.budget, list) and named - set(self.budget):
                out.append(
                    (
                        "halt_on_impossible",
                        f"names {sorted(named - set(self.budget))}, which "
                        f"budget: {self.budget} does not compute, so it can never fire",
                    )
                )
        if self.key is not None and not self.require_signature:
            out.append(
                ("key", "is only read to check a signature: set require_signature: true too")
            )
        return out

    @classmethod
    def of(
        cls, config: MonitorConfig | None = None, model: Any = None, **settings: Any
    ) -> MonitorConfig:
        """``config`` (default: every default) with ``model`` and the ``settings`` given by field name, checked;
        a name that is no field, or a model directory that contradicts ``config.model``, is a SettingError."""
        base = config if config is not None else cls()
        names = {f.name for f in dataclasses.fields(cls)}
        for name in settings:
            if name not in names:
                raise SettingError(
                    cls.__name__, name, f"unknown setting (known: {', '.join(sorted(names))})"
                )
        if model is not None:
            given = PATH(model, "model")
            if base.model is not None and base.model != given:
                raise SettingError(
                    cls.__name__, "model", f"{given!r} given beside config.model {base.model!r}"
                )
            settings["model"] = given
        return base.replace(**settings) if settings else base

    @classmethod
    def of_block(
        cls, block: Mapping[str, Any], where: str, error: Callable[[str], Exception]
    ) -> MonitorConfig:
        """The record of a block's monitor keys (None values: unset); ``error(message)`` names ``where.key``."""
        given = {k: v for k, v in block.items() if v is not None}
        return cls.from_mapping(given, lambda key, why: error(f"{where}.{key}: {why}"))

    def threshold_table(self) -> dict[str, Any] | None:
        """The thresholds override as a table (a JSON file read and checked here); None: the model's own."""
        if not isinstance(self.thresholds, str):
            return self.thresholds
        p = Path(self.thresholds)
        try:  # a regular file, bounded, strict JSON (a key given twice is refused): core.jsonio
            value = read_settings_json(p, max_bytes=MAX_THRESHOLDS_FILE)
            return THRESHOLDS(value, "thresholds")
        except Invalid as e:
            raise SettingError(type(self).__name__, e.key, f"{e.reason} (in {p})") from None
        except (OSError, ValueError, IngestError) as e:
            raise SettingError(type(self).__name__, "thresholds", f"cannot read {p}: {e}") from None

    def block(self) -> dict[str, Any]:
        """The file keys that are set to other than their defaults, as a config block has them."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None or v == f.default or not f.metadata.get("in_file", True):
                continue
            if isinstance(v, PassConfig):
                v = dataclasses.asdict(v)
            elif isinstance(v, Mapping) and f.name == "tasks":
                v = f"<table of {len(v)} tasks>"
            out[f.metadata.get("key") or f.name] = v
        return out


MONITOR_KEYS = tuple(
    f.metadata.get("key") or f.name
    for f in dataclasses.fields(MonitorConfig)
    if f.metadata.get("in_file", True)
)
ADAPTER = file_schema(MonitorConfig, "an earlyeval config block")

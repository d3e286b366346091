"""The ``earlyeval`` block of a framework's config as one checked record (``MonitorConfig``): every adapter, its
CLI and a Python caller build the same one. Standard library only: the live path imports it. The keys:
docs/integrations.md, "The earlyeval block"."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from earlyeval.config.records import Record, file_schema, setting
from earlyeval.config.schema import NAME, THRESHOLDS, Bool, Choice, Int, ListOf, Num, OneOf

__all__ = ["ADAPTER", "MonitorConfig", "PassConfig"]


@dataclass(frozen=True)
class PassConfig(Record):
    """A benchmark pass shared by the runs (``live.benchpass.Pass``): its state file, audit share and seed."""

    state: str = setting(NAME)
    # None: the Pass's default
    audit_share: float | None = setting(Num(0.0, 1.0), None, optional=True)
    seed: int = setting(Int(0, 2**63 - 1), 0)


@dataclass(frozen=True)
class MonitorConfig(Record):
    """What a monitor of one run is loaded with; None: unset (the Monitor's or the adapter's default)."""

    model: str = setting(NAME)  # the model directory written by `earlyeval train`
    # the pair, or a JSON file of it
    thresholds: Any = setting(OneOf((THRESHOLDS, NAME)), None, optional=True)
    tasks: str | None = setting(NAME, None, optional=True)
    # model.policy.HALT_ON
    halt_on: str | None = setting(Choice(("failure", "success", "both")), None, optional=True)
    strict: bool | None = setting(Bool(), None, optional=True)
    explain: str | None = setting(Choice(("halt", "always", "never")), None, optional=True)
    budget: bool | list[str] | None = setting(OneOf((Bool(), ListOf(NAME))), None, optional=True)
    halt_on_impossible: Any = setting(OneOf((Bool(), NAME, ListOf(NAME))), None, optional=True)
    require_signature: bool | None = setting(Bool(), None, optional=True)
    pass_: PassConfig | None = setting(PassConfig, None, key="pass", optional=True)

    @classmethod
    def of_block(
        cls, block: Mapping[str, Any], where: str, error: Callable[[str], Exception]
    ) -> MonitorConfig:
        """The record of a block's monitor keys (None values: unset); ``error(message)`` names ``where.key``."""
        given = {k: v for k, v in block.items() if v is not None}
        return cls.from_mapping(given, lambda key, why: error(f"{where}.{key}: {why}"))

    def block(self) -> dict[str, Any]:
        """The keys that are set, as a config block has them (``pass`` a table)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                out[f.metadata.get("key") or f.name] = (
                    dataclasses.asdict(v) if isinstance(v, PassConfig) else v
                )
        return out


MONITOR_KEYS = tuple(f.metadata.get("key") or f.name for f in dataclasses.fields(MonitorConfig))
ADAPTER = file_schema(MonitorConfig, "an earlyeval config block")

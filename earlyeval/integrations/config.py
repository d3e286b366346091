"""The ``earlyeval`` block of a framework's config, and the Monitor it builds.

Every adapter switched on from its framework's own config reads the same keys: the monitor's are the fields of
``MonitorConfig`` (checked by the record, cross-field rules included), the adapter's own are declared with a
validator each (``AdapterKeys``), and any other key is refused, named, before any model is loaded.  A model
directory is loaded once per process and settings.  The keys: docs/integrations.md, "The earlyeval block".
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Mapping

from earlyeval.config.monitor_config import MONITOR_KEYS, MonitorConfig, PassConfig
from earlyeval.config.schema import NAME, Any_, Bool, OneOf, Table, Validator, check
from earlyeval.core.errors import EarlyEvalError, SettingError
from earlyeval.live.benchpass import AUDIT_SHARE, Pass, PassMonitor
from earlyeval.live.monitor import Monitor
from earlyeval.model.policy import check_halt_on, halts_on_success

LIVE_HALT_ON = "failure"  # what a live adapter halts on unless told otherwise: never throw away a run that may still succeed

# an adapter's own keys, each with its check (config.schema): typed like the monitor's
AdapterKeys = Mapping[str, Validator]
RUN_ID = NAME
# a task id, or a mapping of Task / SWE-bench instance fields
TASK = OneOf((NAME, Table(extra=Any_(), what="a table of Task or SWE-bench instance fields")))
SWITCH = Bool()

_CACHE: dict[tuple[str, str], Monitor] = {}
_PASSES: dict[tuple[Any, ...], Pass] = {}
_LOCK = threading.Lock()


class ConfigError(EarlyEvalError, ValueError):
    """A bad ``earlyeval`` config block: names the key."""


def split_config(
    cfg: Mapping[str, Any] | MonitorConfig | None, adapter_keys: AdapterKeys, where: str
) -> tuple[MonitorConfig, dict[str, Any]]:
    """(the monitor's record, the adapter's options, each checked) of an ``earlyeval`` block; an unknown key, or a
    value of the wrong type, is a ConfigError naming it.  A ``MonitorConfig`` (from Python) is its own record,
    with no adapter options."""
    if isinstance(cfg, MonitorConfig):
        return cfg, {}
    if cfg is None:
        raise ConfigError(f"{where}: no earlyeval config (need at least `model: <model dir>`)")
    if not isinstance(cfg, Mapping):
        raise ConfigError(
            f"{where}: the earlyeval config must be a mapping, not {type(cfg).__name__}"
        )
    known = set(MONITOR_KEYS) | set(adapter_keys)
    unknown = sorted(str(k) for k in set(cfg) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")
    mon = {k: cfg[k] for k in MONITOR_KEYS if k in cfg and cfg[k] is not None}
    if "model" not in mon:
        raise ConfigError(
            f"{where}.model: missing (the model directory written by `earlyeval train`)"
        )
    rest = {
        k: check(v, cfg[k], lambda key, why: ConfigError(f"{where}.{key}: {why}"), key=k)
        for k, v in adapter_keys.items()
        if cfg.get(k) is not None
    }
    return MonitorConfig.of_block(mon, where, ConfigError), rest


def halt_on_of(
    cfg: Mapping[str, Any] | MonitorConfig, where: str = "earlyeval", default: str = LIVE_HALT_ON
) -> str:
    """The block's ``halt_on`` (``default`` when unset), checked: a ConfigError names the key and the values."""
    given = cfg.halt_on if isinstance(cfg, MonitorConfig) else cfg.get("halt_on")
    try:
        return check_halt_on(default if given is None else given, f"{where}.halt_on")
    except ValueError as e:
        raise ConfigError(str(e)) from None


def submit_required(
    cfg: Mapping[str, Any], key: str, where: str, default: str = LIVE_HALT_ON
) -> bool:
    """Whether a success halt is possible (then the adapter's submission switch ``key`` must stay on): True/False;
    a ConfigError when the block turns ``key`` off while success halts are on."""
    halt_on = halt_on_of(cfg, where, default)
    on = halts_on_success(halt_on)
    if on and cfg.get(key) is False:
        raise ConfigError(
            f"{where}.{key}: cannot be false while success halts are on (halt_on: {halt_on}): "
            "a success halt submits the agent's patch"
        )
    return on


PASS_ADAPTERS = "mini-swe-agent and SWE-agent"  # the adapters that tell a pass when each run ends


def monitor_from_config(
    cfg: Mapping[str, Any] | MonitorConfig,
    where: str = "earlyeval",
    default_halt_on: str = LIVE_HALT_ON,
    allow_pass: bool = False,
) -> Monitor | PassMonitor:
    """A fresh Monitor for one run, from an ``earlyeval`` block's monitor keys or its record (see the module doc);
    ``halt_on`` defaults to ``default_halt_on`` (``failure``, the live adapters' default).  ``allow_pass``: the
    adapter calls ``EarlyStopper.finish`` when a run ends, so a ``pass`` block may be honoured."""
    mc = cfg if isinstance(cfg, MonitorConfig) else split_config(cfg, {}, where)[0]
    if mc.pass_ is not None and not allow_pass:
        raise ConfigError(
            f"{where}.pass: this adapter does not tell a pass when a run ends yet (only the "
            f"{PASS_ADAPTERS} adapters do); remove the key"
        )
    try:
        mc = mc.replace(halt_on=halt_on_of(mc, where, default_halt_on))
        key = _cache_key(mc)
        with _LOCK:
            base = _CACHE.get(key)
            if base is None:
                base = _CACHE[key] = Monitor.load(config=mc.replace(pass_=None))
    except SettingError as e:  # a setting the record or the loader refused: named in the block
        raise ConfigError(f"{where}.{e.key}: {e.reason}") from None
    if mc.pass_ is not None:
        return _pass_monitor(base, mc.pass_, key)
    return base.spawn()


def _cache_key(mc: MonitorConfig) -> tuple[str, str]:
    """(the model directory, its settings): one load per distinct pair in this process."""
    assert mc.model is not None
    settings = mc.replace(pass_=None).block()
    settings["thresholds"] = (
        mc.threshold_table()
    )  # a file's content, read (and checked) at each call
    if isinstance(mc.tasks, Mapping):  # a table given from Python: the very object
        settings["tasks"] = f"<tasks {id(mc.tasks)}>"
    settings.update(use_c_api=mc.use_c_api, signed=mc.require_signature)
    return str(Path(mc.model).resolve()), json.dumps(settings, sort_keys=True, default=str)


def _pass_monitor(base: Monitor, cfg: PassConfig, model_key: tuple[str, str]) -> PassMonitor:
    """One Pass per (model, state file, share, seed) in this process; processes share it through the file."""
    state = Path(cfg.state).expanduser().resolve()
    share = AUDIT_SHARE if cfg.audit_share is None else float(cfg.audit_share)
    with _LOCK:
        key = (model_key, str(state), share, cfg.seed)
        p = _PASSES.get(key)
        if p is None:
            p = _PASSES[key] = Pass(base, state, audit_share=share, seed=cfg.seed)
    return PassMonitor(p)


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
        _PASSES.clear()


__all__ = [
    "AdapterKeys",
    "ConfigError",
    "LIVE_HALT_ON",
    "MONITOR_KEYS",
    "MonitorConfig",
    "PassConfig",
    "RUN_ID",
    "SWITCH",
    "TASK",
    "clear_cache",
    "halt_on_of",
    "monitor_from_config",
    "split_config",
    "submit_required",
]

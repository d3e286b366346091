"""The ``earlyeval`` block of a framework's config, and the Monitor it builds.

Every adapter switched on from its framework's own config reads the same keys, checked against one schema
before any model is loaded; a model directory is loaded once per process. The keys: docs/integrations.md,
"The earlyeval block".
"""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path
from typing import Any, Mapping

from earlyeval.config.monitor_config import MONITOR_KEYS, MonitorConfig, PassConfig
from earlyeval.core.errors import EarlyEvalError, IngestError
from earlyeval.core.jsonio import read_settings_json
from earlyeval.live.benchpass import AUDIT_SHARE, Pass, PassMonitor
from earlyeval.live.monitor import Monitor
from earlyeval.model.policy import check_halt_on, halts_on_success

LIVE_HALT_ON = "failure"  # what a live adapter halts on unless told otherwise: never throw away a run that may still succeed

_CACHE: dict[tuple, Monitor] = {}
_PASSES: dict[tuple, Pass] = {}
_LOCK = threading.Lock()


class ConfigError(EarlyEvalError, ValueError):
    """A bad ``earlyeval`` config block: names the key."""


def split_config(
    cfg: Mapping[str, Any] | MonitorConfig | None, adapter_keys: tuple[str, ...], where: str
) -> tuple[MonitorConfig, dict]:
    """(the monitor's record, the adapter's options) of an ``earlyeval`` block; an unknown key is an error naming
    it. A ``MonitorConfig`` (from Python) is its own record, with no adapter options."""
    if isinstance(cfg, MonitorConfig):
        return cfg, {}
    if cfg is None:
        raise ConfigError(f"{where}: no earlyeval config (need at least `model: <model dir>`)")
    if not isinstance(cfg, Mapping):
        raise ConfigError(
            f"{where}: the earlyeval config must be a mapping, not {type(cfg).__name__}"
        )
    unknown = sorted(set(cfg) - set(MONITOR_KEYS) - set(adapter_keys))
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {unknown}; known: {sorted(MONITOR_KEYS + adapter_keys)}"
        )
    mon = {k: cfg[k] for k in MONITOR_KEYS if k in cfg and cfg[k] is not None}
    if "model" not in mon:
        raise ConfigError(
            f"{where}.model: missing (the model directory written by `earlyeval train`)"
        )
    rest = {k: cfg[k] for k in adapter_keys if k in cfg}
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
    mc = cfg if isinstance(cfg, MonitorConfig) else split_config(cfg, (), where)[0]
    if mc.pass_ is not None and not allow_pass:
        raise ConfigError(
            f"{where}.pass: this adapter does not tell a pass when a run ends yet (only the "
            f"{PASS_ADAPTERS} adapters do); remove the key"
        )
    kwargs: dict[str, Any] = {"halt_on": halt_on_of(mc, where, default_halt_on)}
    if mc.thresholds is not None:
        kwargs["thresholds"] = _thresholds(mc.thresholds, f"{where}.thresholds")
        if not _accepts("thresholds"):
            raise ConfigError(
                f"{where}.thresholds: this earlyeval's Monitor.load takes no thresholds override; "
                "remove the key (the model's own thresholds apply) or upgrade"
            )
    for k in ("tasks", "strict", "explain", "budget", "halt_on_impossible", "require_signature"):
        v = getattr(mc, k)
        if v is not None:
            kwargs[k] = str(Path(v).expanduser()) if k == "tasks" else v
    model = Path(mc.model).expanduser()
    key = (str(model.resolve()), json.dumps(kwargs, sort_keys=True, default=str))
    with _LOCK:
        base = _CACHE.get(key)
        if base is None:
            base = _CACHE[key] = Monitor.load(model, **kwargs)
    if mc.pass_ is not None:
        return _pass_monitor(base, mc.pass_, key)
    m = base.spawn()
    if m.thresholds != base.thresholds:  # a spawn that dropped the override: load the run its own
        m = Monitor.load(model, **kwargs)
    return m


def _pass_monitor(base: Monitor, cfg: PassConfig, model_key: tuple) -> PassMonitor:
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


def _accepts(name: str) -> bool:
    params = {
        **inspect.signature(Monitor.load).parameters,
        **inspect.signature(Monitor.__init__).parameters,
    }
    return name in params


def _thresholds(v: Any, where: str) -> dict[str, Any]:
    if isinstance(v, (str, Path)):
        p = Path(v).expanduser()
        try:  # a regular file, bounded, strict JSON (a key given twice is refused): core.jsonio
            v = read_settings_json(p, max_bytes=1 << 16)
        except (OSError, ValueError, IngestError) as e:
            raise ConfigError(f"{where}: cannot read {p}: {e}") from e
    if not isinstance(v, Mapping):
        raise ConfigError(
            f"{where}: a mapping {{success, failure, min_halt_step}} or a JSON file, not {type(v).__name__}"
        )
    bad = sorted(set(v) - {"success", "failure", "min_halt_step"})
    if bad:
        raise ConfigError(f"{where}: unknown key(s) {bad}")
    return dict(v)


__all__ = [
    "ConfigError",
    "LIVE_HALT_ON",
    "MONITOR_KEYS",
    "MonitorConfig",
    "PassConfig",
    "clear_cache",
    "halt_on_of",
    "monitor_from_config",
    "split_config",
    "submit_required",
]

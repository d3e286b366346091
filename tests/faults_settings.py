"""Fault cases of a monitor's settings, by class: settings that contradict each other (a rule armed on paper that
can never fire), adapter keys of the wrong type, and keys that are no setting at all.  Shared by
tests/test_faults.py and tools/fault_summary.py.

Every case goes through a public surface a user reaches (``Monitor.load`` with settings by name or a
``MonitorConfig``, an adapter's ``earlyeval`` block through ``integrations.config.monitor_from_config``, the
mini-swe-agent batch's pre-flight ``mini_cli.check_config``, the inspect_ai approver ``early_stop``, the SWE-agent
hook's and the OpenHands callback's ``from_config``), so that it also runs against an older earlyeval and says
what it did there.  A case returns ("named", detail) when the setting is refused with an error naming every key at
fault, ("silent", detail) when a monitor or an adapter was built anyway (or the error names the wrong key), and
("absent", why) when an adapter's framework is not installed; any other exception is a crash.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any, Callable

from faults import Env

Case = Callable[[Env], tuple[str, str]]
WHERE = "earlyeval"


def _outcome(build: Callable[[], Any], *needles: str) -> tuple[str, str]:
    """("named", message) when ``build`` is refused with a settings error naming every needle (a key, as a whole
    word: ``halt_on`` is not named by ``halt_on_impossible``); ("silent", ...) when it builds, or its error misses
    one.  Any other exception propagates (a crash)."""
    from earlyeval.core.errors import EarlyEvalError

    try:
        got = build()
    except (EarlyEvalError, ValueError, TypeError) as e:
        msg = str(e)
        missing = [n for n in needles if not re.search(rf"\b{re.escape(n)}\b", msg)]
        if missing:
            return "silent", f"refused, but the message does not name {missing}: {msg[:160]}"
        return "named", msg[:160]
    return "silent", f"accepted: built {type(got).__name__}"


def _block(env: Env, **keys: Any) -> dict[str, Any]:
    return {"model": str(env.tiny()[0]), **keys}


def _from_block(**keys: Any) -> Case:
    def case(env: Env) -> tuple[str, str]:
        from earlyeval.integrations.config import clear_cache, monitor_from_config

        clear_cache()
        return _outcome(lambda: monitor_from_config(_block(env, **keys), WHERE), *keys)

    return case


def _from_python(**settings: Any) -> Case:
    def case(env: Env) -> tuple[str, str]:
        from earlyeval import Monitor

        return _outcome(lambda: Monitor.load(env.tiny()[0], **settings), *settings)

    return case


def _from_record(**settings: Any) -> Case:
    def case(env: Env) -> tuple[str, str]:
        from earlyeval import Monitor
        from earlyeval.config.monitor_config import MonitorConfig

        def build() -> Any:
            return Monitor.load(config=MonitorConfig(model=str(env.tiny()[0]), **settings))

        return _outcome(build, *settings)

    return case


def _module(name: str) -> Any:
    """The adapter module, or None when its framework is not installed here."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _mini_batch(names: tuple[str, ...] = (), **keys: Any) -> Case:
    """``earlyeval-mini swebench``'s check before the first instance: the block of the batch config (``names``:
    the keys the error must name, default every key given)."""

    def case(env: Env) -> tuple[str, str]:
        cli = _module("earlyeval.integrations.mini_cli")
        if cli is None:
            return "absent", "mini-swe-agent is not installed"
        config = {"agent": {"earlyeval": _block(env, **keys)}}
        return _outcome(lambda: cli.check_config(config), *(names or keys))

    return case


def _approver(**keys: Any) -> Case:
    """The inspect_ai approver ``earlyeval/early_stop``, as a policy file's keys reach it."""

    def case(env: Env) -> tuple[str, str]:
        mod = _module("earlyeval.integrations.inspect_approver")
        if mod is None:
            return "absent", "inspect_ai is not installed"
        return _outcome(lambda: mod.early_stop(str(env.tiny()[0]), **keys), *keys)

    return case


def _hook(module: str, cls: str, **keys: Any) -> Case:
    """An adapter's ``from_config`` (SWE-agent's hook, the OpenHands callback), as its config block reaches it."""

    def case(env: Env) -> tuple[str, str]:
        mod = _module(module)
        if mod is None:
            return "absent", f"{module}'s framework is not installed"
        return _outcome(lambda: getattr(mod, cls).from_config(_block(env, **keys)), *keys)

    return case


def _thresholds_file(content: dict[str, Any], *needles: str) -> Case:
    """A thresholds override read from a JSON file whose keys are wrong: named in the file, never dropped."""

    def case(env: Env) -> tuple[str, str]:
        from earlyeval.integrations.config import clear_cache, monitor_from_config

        clear_cache()
        f = env.base / "settings-thresholds.json"
        f.write_text(json.dumps(content))
        return _outcome(
            lambda: monitor_from_config(_block(env, thresholds=str(f)), WHERE), *needles
        )

    return case


NEVER_FIRES = [
    ("adapter block", _from_block(halt_on_impossible=True, halt_on="success")),
    ("adapter block", _from_block(halt_on_impossible="steps", budget=False)),
    ("adapter block", _from_block(halt_on_impossible=["steps"], halt_on="success", budget=False)),
    ("adapter block", _from_block(halt_on_impossible=["cost_usd"], budget=["steps"])),
    ("Monitor.load", _from_python(halt_on_impossible=True, halt_on="success")),
    ("Monitor.load", _from_python(halt_on_impossible=["steps"], budget=False)),
    ("Monitor.load", _from_python(key="k" * 32, require_signature=False)),
    ("MonitorConfig", _from_record(halt_on_impossible="steps", halt_on="success")),
    ("earlyeval-mini batch", _mini_batch(halt_on_impossible=True, halt_on="success")),
    ("inspect approver", _approver(halt_on_impossible=True, halt_on="success")),
    ("inspect approver", _approver(halt_on_impossible=True, budget=False)),
]

ADAPTER_TYPES = [
    ("earlyeval-mini batch", _mini_batch(("submit_diff",), submit_diff="no", halt_on="failure")),
    ("earlyeval-mini batch", _mini_batch(("submit_diff",), submit_diff="yes", halt_on="failure")),
    ("earlyeval-mini batch", _mini_batch(("submit_diff",), submit_diff=0, halt_on="failure")),
    ("earlyeval-mini batch", _mini_batch(("submit_diff",), submit_diff="false", halt_on="both")),
    ("earlyeval-mini batch", _mini_batch(run_id=42)),
    ("earlyeval-mini batch", _mini_batch(task=7)),
    ("earlyeval-mini batch", _mini_batch(diff_command=["git", "diff"])),
    ("SWE-agent hook", _hook("earlyeval.integrations.swe_agent", "EarlyStopHook", autosubmit="no")),
    ("SWE-agent hook", _hook("earlyeval.integrations.swe_agent", "EarlyStopHook", run_id=1.5)),
    (
        "OpenHands callback",
        _hook("earlyeval.integrations.openhands", "EarlyStopCallback", end_as="stop"),
    ),
    ("inspect approver", _approver(success_needs="diffs")),
    ("inspect approver", _approver(otherwise=False)),
    ("inspect approver", _approver(metadata_key=5)),
    ("adapter block", _from_block(strict="yes")),
    ("adapter block", _from_block(require_signature="no")),
    ("adapter block", _from_block(top_k="5")),
]

UNKNOWN_KEYS = [
    ("Monitor.load", _from_python(halt_onn="failure")),
    ("Monitor.load", _from_python(budjet=False)),
    ("adapter block", _from_block(halt_onn="failure")),
    ("adapter block", _from_block(thresholds={"sucess": 0.9, "failure": 0.95})),
    ("earlyeval-mini batch", _mini_batch(submit_dif=False)),
    ("inspect approver", _approver(sucess_needs="diff")),
    (
        "SWE-agent hook",
        _hook("earlyeval.integrations.swe_agent", "EarlyStopHook", autosubmitt=True),
    ),
    ("thresholds file", _thresholds_file({"sucess": 0.9, "failure": 0.95}, "sucess")),
    (
        "thresholds file",
        _thresholds_file({"success": 0.9, "failure": 0.95, "min_halt": 2}, "min_halt"),
    ),
]


def _named(cls: str, cases: list[tuple[str, Case]]) -> list[tuple[str, str, Case]]:
    """(class, "surface: the settings given", case) per case."""
    return [(cls, f"{where}: {_settings_of(fn)}", fn) for where, fn in cases]


def _settings_of(fn: Case) -> str:
    """The settings a case was built with (for its name): the mapping in its closure."""
    for cell in fn.__closure__ or ():
        v = cell.cell_contents
        if isinstance(v, dict):
            return ", ".join(f"{k}={x!r}" for k, x in v.items())
    return ""


CASES_SETTINGS: list[tuple[str, str, Case]] = (
    _named("settings that contradict each other", NEVER_FIRES)
    + _named("adapter keys of the wrong type", ADAPTER_TYPES)
    + _named("unknown settings keys", UNKNOWN_KEYS)
)

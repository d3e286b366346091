"""Environment variables read as settings: range-checked when read, refused by name when malformed.

``EARLYEVAL_MAX_MODEL_FILE_BYTES=abc`` must not crash an import, nor ``EARLYEVAL_MAX_INPUT_BYTES=-5`` refuse
every file: each variable is read where it is used, and a bad value is a ``SettingError`` naming it.
"""

from __future__ import annotations

import os
import re

from earlyeval.core.errors import SettingError


def _describe(lo: int, hi: int | None) -> str:
    return f"an integer in [{lo}, {hi}]" if hi is not None else f"an integer >= {lo}"


def env_int(name: str, default: int, lo: int = 1, hi: int | None = None) -> int:
    """An integer environment variable (decimal digits); unset or empty gives ``default``."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    text = raw.strip()
    if not re.fullmatch(r"\+?[0-9]{1,30}", text):
        raise SettingError(
            "environment", name, f"{raw!r} is not an integer (expected {_describe(lo, hi)})"
        )
    v = int(text, 10)
    if v < lo or (hi is not None and v > hi):
        raise SettingError(
            "environment", name, f"{v} is out of range (expected {_describe(lo, hi)})"
        )
    return v


def env_flag(name: str, default: bool) -> bool:
    """A switch: 1/true/yes/on or 0/false/no/off; anything else is refused by name (never "on" by accident)."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    v = raw.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off"):
        return False
    raise SettingError("environment", name, f"{raw!r} is not a switch (expected 0 or 1)")

"""Numbers as native records hold them: a real number, a token count or a cost, None when absent or not one."""

from __future__ import annotations

import math
from typing import Any


def is_number(v: Any) -> bool:
    """A real int/float (bool is not a number here)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def opt_int(v: Any) -> int | None:
    """An int token count, or None when absent / not an integer."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def opt_float(v: Any) -> float | None:
    if is_number(v) and not (isinstance(v, float) and math.isnan(v)):
        return float(v)
    return None

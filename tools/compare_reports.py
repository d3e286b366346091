"""Compare two JSON reports, ignoring timing fields (`seconds` and keys ending in `_seconds`/`_s`): exit 1 on a difference."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

TIMING = {"seconds", "elapsed", "wall_seconds"}


def _timing(key: str) -> bool:
    return key in TIMING or key.endswith("_seconds")


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if _timing(k):
                continue
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'second' if k not in a else 'first'}")
            else:
                out += diff(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: length {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return []
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]


if __name__ == "__main__":
    first, second = (json.load(open(p)) for p in sys.argv[1:3])
    d = diff(first, second)
    for line in d[:50]:
        print(line)
    print(f"{len(d)} difference(s) (timing fields ignored)")
    sys.exit(1 if d else 0)

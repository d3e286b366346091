"""The part of requirements.lock a core install needs: the [project] dependencies of pyproject.toml and what
they pull in (the lock's ``# via`` annotations), printed as a hash-checked requirements file.

    python tools/lock_subset.py > core.lock && pip install --require-hashes --no-deps -r core.lock

tools/smoke_installed.sh installs the core alone with it (issue 30: the Monitor without the [train] stack)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def blocks(lock: str) -> list[tuple[str, str, set[str]]]:
    """(name, requirement lines, names it is pulled in by) for every pinned package of the lock."""
    out = []
    for chunk in re.split(r"\n(?=[A-Za-z0-9])", lock):
        m = re.match(r"([A-Za-z0-9][A-Za-z0-9._-]*)==", chunk)
        if not m:
            continue
        req = "\n".join(l for l in chunk.splitlines() if not l.lstrip().startswith("#"))
        via = set()
        for line in chunk.splitlines():
            v = re.match(r"\s*#\s+(?:via\s+)?([A-Za-z0-9][A-Za-z0-9._-]*)(\s|$)", line)
            if v and v.group(1) != "via":
                via.add(norm(v.group(1)))
        out.append((norm(m.group(1)), req, via))
    return out


def core_names() -> set[str]:
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return {norm(re.match(r"[A-Za-z0-9._-]+", d).group(0)) for d in deps}


def main() -> None:
    lock = blocks((REPO / "requirements.lock").read_text())
    need = core_names()
    missing = need - {n for n, _, _ in lock}
    if missing:
        sys.exit(
            f"lock_subset: {sorted(missing)} in pyproject.toml but not in requirements.lock (run make lock)"
        )
    while True:
        more = {n for n, _, via in lock if n not in need and via & need}
        if not more:
            break
        need |= more
    print("\n".join(req for n, req, _ in lock if n in need))


if __name__ == "__main__":
    main()

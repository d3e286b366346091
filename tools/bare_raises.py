"""Bare ``raise ValueError`` / ``raise RuntimeError`` in the package, counted per folder against a ceiling that
only shrinks (issue 44: "no bare ValueError outside core/errors.py's tree"): `python3 tools/bare_raises.py [ROOT]`.

Exit 1 when a folder has more than its ceiling (a new bare raise: raise a class of ``earlyeval/core/errors.py``,
whose ``ValueError`` / ``RuntimeError`` subclasses keep every ``except ValueError`` caller working) or fewer (lower
its ceiling here, as ``LONG_MODULES`` in tests/test_layers.py: the list only shrinks); exit 2 when ROOT is not a
checkout, so that a wrong root never reads as "no bare raise".  ``make lint`` runs it.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

BARE = ("ValueError", "RuntimeError")
# folder of earlyeval/ ("" for its top-level modules) -> bare raises it may hold; a folder not listed holds none
CEILING: dict[str, int] = {
    "app": 3,
    "config": 2,
    "evaluation": 4,
    "features": 8,
    "fitting": 38,
    "integrations": 6,
    "live": 22,
    "model": 19,
    "report": 1,
    "scale": 11,
    "workflows": 18,
}


def bare_raises(path: Path) -> list[tuple[int, str]]:
    """(line, class) of every ``raise ValueError(...)`` / ``raise RuntimeError`` in one file (the class raised by
    its builtin name: a subclass of the error tree is not bare)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(exc, ast.Name) and exc.id in BARE:
            out.append((node.lineno, exc.id))
    return sorted(out)


def package_dir(root: Path) -> Path:
    """``root/earlyeval``; a ValueError naming ``root`` when it is not a checkout."""
    pkg = root / "earlyeval"
    if not (pkg / "__init__.py").is_file():
        raise ValueError(f"{root}: not a checkout of earlyeval (no earlyeval/__init__.py under it)")
    return pkg


def by_folder(root: Path) -> dict[str, list[str]]:
    """Folder of ``root/earlyeval`` -> its bare raises, as "file:line Class"."""
    pkg = package_dir(root)
    out: dict[str, list[str]] = defaultdict(list)
    for p in sorted(pkg.rglob("*.py")):
        rel = p.relative_to(pkg)
        folder = rel.parts[0] if len(rel.parts) > 1 else ""
        for line, cls in bare_raises(p):
            out[folder].append(f"{p.relative_to(root)}:{line} {cls}")
    return dict(out)


def check(root: Path, ceiling: dict[str, int] = CEILING) -> list[str]:
    """What is wrong: a folder over its ceiling (its bare raises listed) or under it (the ceiling to lower)."""
    found = by_folder(root)
    problems = []
    for folder in sorted(set(found) | set(ceiling)):
        n, cap = len(found.get(folder, [])), ceiling.get(folder, 0)
        name = f"earlyeval/{folder}" if folder else "earlyeval (top level)"
        if n > cap:
            problems.append(
                f"NEW    {name}: {n} bare raises > ceiling {cap}; raise a class of earlyeval/core/errors.py:\n"
                + "\n".join(f"         {w}" for w in found[folder])
            )
        elif n < cap:
            problems.append(
                f"STALE  {name}: {n} bare raises < ceiling {cap}: lower CEILING[{folder!r}] in tools/bare_raises.py"
            )
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1]
    try:
        problems = check(root)
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    total = sum(len(v) for v in by_folder(root).values())
    print(f"bare raise ValueError/RuntimeError: {total} (ceiling {sum(CEILING.values())})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

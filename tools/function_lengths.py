"""The house rule's tables: every function over N logical lines and every module over 400 lines, of a checkout:
`python3 tools/function_lengths.py [ROOT] [N=50]`.

A logical line is one statement (its header, for a compound statement), however the formatter wraps it: the
``def`` line, then every statement of the body, nested ones included, the docstring not counted.  Counting
statements rather than physical lines keeps the rule the same under `ruff format`, whose wrapping of long calls
made the physical count grow by about a third. tests/test_layers.py holds the package to no function over 50.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def _docstring(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.stmt | None:
    first = fn.body[0] if fn.body else None
    is_doc = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    return first if is_doc else None


def logical_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The ``def`` and every statement inside ``fn`` (nested functions' included), its docstring left out."""
    doc = _docstring(fn)
    return 1 + sum(
        1 for n in ast.walk(fn) if isinstance(n, ast.stmt) and n is not fn and n is not doc
    )


def function_lengths(path: Path) -> list[tuple[int, str, int]]:
    """(logical lines, name, first line) of every function in one file."""
    tree = ast.parse(path.read_text())
    return [
        (logical_lines(n), n.name, n.lineno)
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]


def package_dir(root: Path) -> Path:
    """``root/earlyeval``; a ValueError naming ``root`` when it is not a checkout (so a wrong root never reads as
    "no long function")."""
    pkg = root / "earlyeval"
    if not (pkg / "__init__.py").is_file():
        raise ValueError(f"{root}: not a checkout of earlyeval (no earlyeval/__init__.py under it)")
    return pkg


def long_functions(root: Path, limit: int = 50) -> list[tuple[int, str]]:
    """Every function of ``root/earlyeval`` over ``limit`` logical lines, longest first, as (lines, "file:line name")."""
    rows = [
        (n, f"{p.relative_to(root)}:{line} {name}")
        for p in sorted(package_dir(root).rglob("*.py"))
        for n, name, line in function_lengths(p)
        if n > limit
    ]
    return sorted(rows, reverse=True)


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(".")
    limit = int(argv[2]) if len(argv) > 2 else 50
    try:
        rows = long_functions(root, limit)
    except ValueError as e:
        print(f"function_lengths: {e}", file=sys.stderr)
        return 2
    for n, where in rows:
        print(f"{n:4d} {where}")
    print(f"functions over {limit} logical lines: {len(rows)}")
    files = package_dir(root).rglob("*.py")
    mods = sorted(
        ((len(p.read_text().splitlines()), str(p.relative_to(root))) for p in files), reverse=True
    )
    big = [m for m in mods if m[0] > 400]
    print(
        f"modules over 400 lines: {len(big)}; within 40 of 500: {len([m for m in big if m[0] > 460])}"
    )
    for n, m in big:
        print(f"{n:5d} {m}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

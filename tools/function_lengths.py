"""The house rule's tables: every function over N lines of code (blank, comment-only and docstring lines not
counted) and every module over 400 lines, of a checkout: `python3 tools/function_lengths.py [ROOT] [N=60]`.
tests/test_layers.py holds the package to no function over 60 lines of code."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
        tokenize.STRING}


def _docstring_lines(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                out.update(range(first.lineno, first.end_lineno + 1))
    return out


def function_lengths(path: Path) -> list[tuple[int, str, int]]:
    """(lines of code, name, first line) of every function in one file."""
    src = path.read_text()
    tree = ast.parse(src)
    docs = _docstring_lines(tree)
    code = {line for tok in tokenize.generate_tokens(io.StringIO(src).readline) if tok.type not in SKIP
            for line in range(tok.start[0], tok.end[0] + 1)}
    for node in ast.walk(tree):  # strings that are not docstrings are code
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.lineno not in docs:
            code.update(range(node.lineno, node.end_lineno + 1))
    return [(sum(1 for l in range(n.lineno, n.end_lineno + 1) if l in code and l not in docs), n.name, n.lineno)
            for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def long_functions(root: Path, limit: int = 60) -> list[tuple[int, str]]:
    """Every function of ``root/earlyeval`` over ``limit`` lines of code, longest first, as (lines, "file:line name")."""
    rows = [(n, f"{p.relative_to(root)}:{line} {name}") for p in sorted((root / "earlyeval").rglob("*.py"))
            for n, name, line in function_lengths(p) if n > limit]
    return sorted(rows, reverse=True)


def main(argv: list[str]) -> None:
    root = Path(argv[1]) if len(argv) > 1 else Path(".")
    limit = int(argv[2]) if len(argv) > 2 else 60
    rows = long_functions(root, limit)
    for n, where in rows:
        print(f"{n:4d} {where}")
    print(f"functions over {limit} lines of code: {len(rows)}")
    mods = sorted(((len(p.read_text().splitlines()), str(p.relative_to(root))) for p in (root / "earlyeval").rglob("*.py")),
                  reverse=True)
    big = [m for m in mods if m[0] > 400]
    print(f"modules over 400 lines: {len(big)}; within 40 of 500: {len([m for m in big if m[0] > 460])}")
    for n, m in big:
        print(f"{n:5d} {m}")


if __name__ == "__main__":
    main(sys.argv)

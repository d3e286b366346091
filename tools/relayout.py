#!/usr/bin/env python3
"""Move earlyeval's flat modules into layer subpackages, in one mechanical, repeatable step (issue 16 item 1).

    python tools/relayout.py            # on a clean tree: git mv + rewrite, then prints what changed
    python tools/relayout.py --dry-run  # print the plan, touch nothing

``MOVES`` is the one table (old module -> new module).  The script
1. refuses to run on a dirty tree (``git status --porcelain`` must be empty) and refuses a
   top-level module that is in no row of ``MOVES`` and not in ``STAY`` (add a row first);
2. rewrites every relative import under earlyeval/ to the absolute form (old names still), with
   ``ast`` for the positions and ``tokenize`` for the module span, so comments and layout survive;
3. ``git mv``s each module and creates each new subpackage ``__init__.py`` (a one-line docstring);
4. renames every reference in the tracked text files (py, md, toml, Makefile, .ci/, ...): dotted
   names (imports, ``import x as y``, ``"pkg.mod:Class"`` entry points, mock.patch targets, dotted
   paths in docs and catalogs) and file paths (``earlyeval/trajectory.py``), then fixes
   ``from earlyeval import trajectory`` forms with ``ast``; in Markdown, a backticked bare name of a moved
   top-level module (`` `trajectory.py` ``, as docs/architecture.md's module table writes them) gets its new path.
The lead's procedure, on the merged main (about 3 s for the script, ~2 min for the unit suite):
    git status --porcelain                     # must print nothing
    python tools/relayout.py | tee /tmp/relayout.log
    python -m pytest -q -m "not integration"   # then tests/test_layers.py tells what to fix or list
    pip install --no-deps -e .                 # the console script is now earlyeval.app.cli:app
    git commit -qam "Relayout into layers (tools/relayout.py, mechanical)"
Idempotent: a second run finds no file to move, no relative import and no old name, and says so.
No re-export shims, no ``sys.modules`` tricks: old import paths stop working on purpose, except the
public ones that do not move (``earlyeval.monitor``, ``earlyeval.integrations.*``, ``from earlyeval import Monitor``).
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

PKG = "earlyeval"

# old module -> new module.  Layers, bottom to top (tests/test_layers.py holds the same order as LAYERS):
# core -> config -> ingest and features (ingest/, features/, tables/) -> modeling -> budget maths -> live and evaluation
# -> workflows (training, integrations, replay, routing) -> report -> app.
# (no subpackage is named data/ or reports/: those are workspace folders, and the docs name both)
# A row whose old file does not exist (a module another branch has not merged yet) is skipped.
MOVES: dict[str, str] = {
    # core data model
    "earlyeval.trajectory": "earlyeval.core.trajectory",
    "earlyeval.errors": "earlyeval.core.errors",
    "earlyeval.render": "earlyeval.core.render",
    "earlyeval.decision": "earlyeval.core.decision",
    "earlyeval.atomic": "earlyeval.core.atomic",
    "earlyeval.jsonio": "earlyeval.core.jsonio",
    "earlyeval.version": "earlyeval.core.version",
    # config and workspace (earlyeval/catalogs/*.toml stays: package data found by resources.files("earlyeval"))
    "earlyeval.workspace": "earlyeval.config.workspace",
    "earlyeval.catalog": "earlyeval.config.catalog",
    "earlyeval.plugins": "earlyeval.config.plugins",
    "earlyeval.prices": "earlyeval.config.prices",
    # ingest and features (earlyeval/ingest/ and earlyeval/features/ stay: their entry points are public)
    "earlyeval.store": "earlyeval.tables.store",
    "earlyeval.tasks": "earlyeval.tables.tasks",
    "earlyeval.prefixes": "earlyeval.tables.prefixes",
    # model and policy
    "earlyeval.model": "earlyeval.modeling.model",
    "earlyeval.outcome": "earlyeval.modeling.outcome",          # w-est
    "earlyeval.lgbm_capi": "earlyeval.modeling.lgbm_capi",      # w-est
    "earlyeval.fastpredict": "earlyeval.modeling.fastpredict",
    "earlyeval.boostercheck": "earlyeval.modeling.boostercheck",
    "earlyeval.modeldir": "earlyeval.modeling.modeldir",
    "earlyeval.policy": "earlyeval.modeling.policy",            # w-halt / w-est
    "earlyeval.thresholds": "earlyeval.modeling.thresholds",    # w-score
    "earlyeval.metrics": "earlyeval.modeling.metrics",
    # budget maths: earlyeval/budget/{config,targets,cqr,quantiles} stay (the package spans layers)
    # live and evaluation: earlyeval.monitor stays (public import path; the issue measures `import earlyeval.monitor`)
    "earlyeval.dataset": "earlyeval.evaluation.dataset",
    "earlyeval.evaluate": "earlyeval.evaluation.evaluate",
    "earlyeval.adapt": "earlyeval.evaluation.adapt",
    "earlyeval.settings": "earlyeval.evaluation.settings",
    # training, integrations, replay and routing (earlyeval/integrations/ stays: dotted paths in users' YAML)
    "earlyeval.score": "earlyeval.workflows.score",
    "earlyeval.routing": "earlyeval.workflows.routing",
    "earlyeval.transfer": "earlyeval.workflows.transfer",
    "earlyeval.sweep": "earlyeval.workflows.sweep",
    "earlyeval.export": "earlyeval.workflows.export",
    "earlyeval.benchmark": "earlyeval.workflows.benchmark",
    # reports
    "earlyeval.reporting": "earlyeval.report.reporting",
    "earlyeval.report_page": "earlyeval.report.report_page",  # w-report
    # app
    "earlyeval.pipeline": "earlyeval.app.pipeline",
    "earlyeval.cli": "earlyeval.app.cli",
}
# top-level modules that deliberately stay where they are
STAY = {"earlyeval", "earlyeval.monitor"}
SUBPACKAGE_DOCS = {
    "core": "Core data model: trajectories, errors, rendering, decisions, atomic writes, JSON I/O (imports no other layer).",
    "config": "Config and workspace: where data lives, benchmark catalogs, plug-in registries, prices.",
    "tables": "The tables ingest writes and features read: the normalized-run store, task tables, prefix tables.",
    "modeling": "The outcome model, its fast predictor and model directory, the halting policy and the metrics.",
    "evaluation": "Offline evaluation: datasets, leave-one-agent-out and as-of evaluation, adaptation.",
    "workflows": "Replay, routing, transfer, sweeps, export and benchmarks built on the layers below.",
    "report": "Report writing: tables, prediction dumps, the HTML page.",
    "app": "The application: the typer CLI and the pipeline steps it runs.",
}
# never rewritten: this script and its test hold the old names on purpose; fixtures are data
SKIP_FILES = {"tools/relayout.py", "tests/test_relayout_tool.py"}
SKIP_DIRS = ("tests/fixtures/",)
TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".ini", ".yaml", ".yml", ".sh", ".txt", ".rst"}
TEXT_NAMES = {"Makefile", "run", ".gitignore"}


# ----------------------------------------------------------------------------------------- pure rewriters

def module_of(relpath: str) -> str:
    """``earlyeval/ingest/chat.py`` -> ``earlyeval.ingest.chat``; ``earlyeval/__init__.py`` -> ``earlyeval``."""
    parts = list(Path(relpath).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _package_of(module: str, is_init: bool) -> str:
    return module if is_init else module.rpartition(".")[0]


def _resolve_relative(level: int, name: str | None, package: str) -> str:
    base = package.split(".")
    if level - 1 > len(base) - 1:
        raise ValueError(f"relative import beyond the top package ({level} dots in {package})")
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _line_offsets(src: str) -> list[int]:
    offs, n = [0], 0
    for line in src.splitlines(keepends=True):
        n += len(line)
        offs.append(n)
    return offs


def _from_module_span(src: str, start: int, end: int) -> tuple[int, int]:
    """Character span of the module part (dots + dotted name) of the ``from X import`` statement in src[start:end]."""
    seg = src[start:end]
    toks = list(tokenize.generate_tokens(io.StringIO(seg).readline))
    offs = _line_offsets(seg)
    pos = lambda rc: offs[rc[0] - 1] + rc[1]  # noqa: E731
    it = iter(toks)
    for t in it:
        if t.type == tokenize.NAME and t.string == "from":
            break
    first = last = None
    for t in it:
        if t.type == tokenize.NAME and t.string == "import":
            break
        if t.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
            continue
        if first is None:
            first = pos(t.start)
        last = pos(t.end)
    if first is None or last is None:
        raise ValueError("no module in from-import")
    return start + first, start + last


def absolutize(src: str, module: str, is_init: bool, top: str = PKG) -> tuple[str, list[str]]:
    """Rewrite every relative import in ``src`` (the source of ``module``) to the absolute form."""
    tree = ast.parse(src)
    offs = _line_offsets(src)
    edits: list[tuple[int, int, str]] = []
    notes: list[str] = []
    package = _package_of(module, is_init)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = _resolve_relative(node.level, node.module, package)
            if not (target == top or target.startswith(top + ".")):
                continue
            s = offs[node.lineno - 1] + node.col_offset
            e = offs[node.end_lineno - 1] + node.end_col_offset
            a, b = _from_module_span(src, s, e)
            edits.append((a, b, target))
            notes.append(f"  L{node.lineno}: from {src[a:b]} -> from {target}")
    return _apply(src, edits), notes


def _apply(src: str, edits: list[tuple[int, int, str]]) -> str:
    for a, b, text in sorted(edits, reverse=True):
        src = src[:a] + text + src[b:]
    return src


def _dotted_pattern(old: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.])" + re.escape(old) + r"(?![\w])")


def _path_pattern(old: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w/.])" + re.escape(old) + r"(?![\w])")


def rename_text(text: str, moves: dict[str, str]) -> tuple[str, list[str]]:
    """Rename dotted module names and their file paths (``a/b.py``) everywhere in ``text``."""
    notes: list[str] = []
    for old in sorted(moves, key=len, reverse=True):
        new = moves[old]
        old_path, new_path = old.replace(".", "/") + ".py", new.replace(".", "/") + ".py"
        for pat, label, repl in ((_dotted_pattern(old), old, new), (_path_pattern(old_path), old_path, new_path)):
            text, n = pat.subn(repl, text)
            if n:
                notes.append(f"  {n} x {label} -> {repl}")
    return text, notes


def rename_bare_doc_names(text: str, moves: dict[str, str], top: str = PKG) -> tuple[str, list[str]]:
    """In Markdown: a backticked bare file name of a moved top-level module (`` `trajectory.py` ``, as module
    tables write them) becomes its path inside the package (`` `core/trajectory.py` ``)."""
    notes: list[str] = []
    for old, new in sorted(moves.items()):
        if old.count(".") != 1 or not old.startswith(top + "."):
            continue
        leaf = old.split(".", 1)[1] + ".py"
        repl = new.split(".", 1)[1].replace(".", "/") + ".py"
        text, n = re.subn(r"(?<=`)" + re.escape(leaf) + r"(?=`)", repl, text)
        if n:
            notes.append(f"  {n} x `{leaf}` -> `{repl}`")
    return text, notes


def fix_from_parent_imports(src: str, moves: dict[str, str]) -> tuple[str, list[str]]:
    """``from earlyeval import trajectory, Monitor`` where a name is a moved module: import it from its new parent.

    Absolute names only (run after ``absolutize``).  A statement whose names all move to one new parent gets
    its module part replaced; a mixed one is split into one statement per parent (same indentation)."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return src, []
    offs = _line_offsets(src)
    edits: list[tuple[int, int, str]] = []
    notes: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
            continue
        groups: dict[str, list[str]] = {}
        moved = False
        for alias in node.names:
            full = f"{node.module}.{alias.name}"
            if full in moves:
                parent, _, leaf = moves[full].rpartition(".")
                moved = True
                asname = alias.asname or (alias.name if leaf != alias.name else None)
                groups.setdefault(parent, []).append(leaf + (f" as {asname}" if asname else ""))
            else:
                groups.setdefault(node.module, []).append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
        if not moved:
            continue
        s = offs[node.lineno - 1] + node.col_offset
        e = offs[node.end_lineno - 1] + node.end_col_offset
        if len(groups) == 1 and all(" as " not in n or n.split(" as ")[0] == n.split(" as ")[1] for n in
                                    next(iter(groups.values()))) and not any(
                moves[f"{node.module}.{a.name}"].rpartition(".")[2] != a.name
                for a in node.names if f"{node.module}.{a.name}" in moves):
            a, b = _from_module_span(src, s, e)
            edits.append((a, b, next(iter(groups))))
        else:
            indent = " " * node.col_offset
            stmt = ("\n" + indent).join(f"from {p} import {', '.join(ns)}" for p, ns in groups.items())
            edits.append((s, e, stmt))
        notes.append(f"  L{node.lineno}: from {node.module} import ... -> " + ", ".join(groups))
    return _apply(src, edits), notes


# ----------------------------------------------------------------------------------------- the repo part

def _git(*args: str, root: Path) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def tracked_files(root: Path) -> list[str]:
    return [f for f in _git("ls-files", root=root).splitlines() if (root / f).is_file()]


def is_text_target(rel: str) -> bool:
    if rel in SKIP_FILES or rel.startswith(SKIP_DIRS):
        return False
    p = Path(rel)
    return p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES


def file_of(module: str, root: Path) -> Path | None:
    rel = Path(*module.split("."))
    if (root / rel).with_suffix(".py").is_file():
        return rel.with_suffix(".py")
    if (root / rel / "__init__.py").is_file():
        return rel / "__init__.py"
    return None


def unmapped_modules(root: Path) -> list[str]:
    """Top-level modules of the package in no row of MOVES (old or new side) and not in STAY."""
    known = set(MOVES) | set(MOVES.values()) | STAY
    return sorted(m for m in (f"{PKG}.{p.stem}" for p in (root / PKG).glob("*.py") if p.stem != "__init__")
                  if m not in known)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    root: Path = args.root.resolve()
    dirty = _git("status", "--porcelain", "--untracked-files=no", root=root).strip()
    if dirty and not args.dry_run:
        print(f"refusing to run: the tree has uncommitted changes (commit or stash them first):\n{dirty}", file=sys.stderr)
        return 2
    stray = unmapped_modules(root)
    if stray:
        print("refusing to run: top-level modules in no row of MOVES (add a row, or to STAY):\n  " + "\n  ".join(stray),
              file=sys.stderr)
        return 2
    moves = {o: n for o, n in MOVES.items() if file_of(o, root) is not None}
    for o, n in moves.items():
        if file_of(n, root) is not None:
            print(f"refusing to run: both {o} and {n} exist", file=sys.stderr)
            return 2
    files = tracked_files(root)
    changed: dict[str, list[str]] = {}

    # 1. relative imports -> absolute (old names), every module of the package
    for rel in files:
        if rel.startswith(PKG + "/") and rel.endswith(".py") and is_text_target(rel):
            src = (root / rel).read_text()
            new, notes = absolutize(src, module_of(rel), rel.endswith("__init__.py"))
            if new != src:
                changed.setdefault(rel, []).extend(["relative imports made absolute:", *notes])
                if not args.dry_run:
                    (root / rel).write_text(new)

    # 2. git mv + new subpackages
    moved_paths: dict[str, str] = {}
    for o, n in moves.items():
        src_rel = str(file_of(o, root))
        dst_rel = str(Path(*n.split(".")).with_suffix(".py"))
        moved_paths[src_rel] = dst_rel
        print(f"git mv {src_rel} {dst_rel}")
        if args.dry_run:
            continue
        pkg_dir = (root / dst_rel).parent
        init = pkg_dir / "__init__.py"
        if not init.exists():
            pkg_dir.mkdir(parents=True, exist_ok=True)
            doc = SUBPACKAGE_DOCS.get(pkg_dir.name, f"earlyeval.{pkg_dir.name}.")
            init.write_text(f'"""{doc}"""\n')
            _git("add", str(init.relative_to(root)), root=root)
            print(f"created {init.relative_to(root)}")
        _git("mv", src_rel, dst_rel, root=root)

    # 3. rename every reference in the tracked text files (at their new place)
    for rel in files:
        cur = moved_paths.get(rel, rel) if not args.dry_run else rel
        if not is_text_target(rel) or not (root / cur).is_file():
            continue
        try:
            src = (root / cur).read_text()
        except UnicodeDecodeError:
            continue
        new, notes = rename_text(src, moves)
        if cur.endswith(".py"):
            new, more = fix_from_parent_imports(new, moves)
            notes += more
        if cur.endswith(".md"):
            new, more = rename_bare_doc_names(new, moves)
            notes += more
        if new != src:
            changed.setdefault(cur, []).extend(["references renamed:", *notes])
            if not args.dry_run:
                (root / cur).write_text(new)

    for rel in sorted(changed):
        print(f"{rel}:")
        print("\n".join(changed[rel]))
    if not moves and not changed:
        print("nothing to do: the package is already laid out")
    else:
        print(f"\n{len(moves)} modules moved, {len(changed)} files rewritten"
              + (" (dry run: nothing written)" if args.dry_run else "; review `git status`, run the tests, commit"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The package's structure, measured from its imports and from a traced run: `python3 tools/structure.py [ROOT]`.

Static numbers (any Python 3.11+, nothing installed; ROOT defaults to this checkout), from the same AST
collection as the layer contract (ROOT's own ``tests/test_layers.py``: its ``collect``, ``LAYERS``,
``find_cycles``, so each checkout is measured by its own layer table):

* files: the ``.py`` modules under ``earlyeval/``; folders: its top-level subpackages (``earlyeval/X/`` with an
  ``__init__.py``; a nested one, ``app/verbs``, is part of its folder); layers: the entries of ``LAYERS``;
* module arrows: distinct (importer, imported) pairs of package modules, every ``import`` counted (module level,
  inside a function, under ``TYPE_CHECKING``), as the contract counts them; folder arrows: distinct pairs of two
  different folders joined by at least one module arrow (the root facade and ``__main__`` are the folder
  ``earlyeval``);
* upward arrows: module arrows into a higher layer than the importer's (the contract allows none);
* cycles: strongly connected components of more than one module in the module-arrow graph.

The walk (``--walk evaluate``, ``--walk train``, ``--walk live``; run with ROOT's own interpreter,
``ROOT/.venv/bin/python``, and the shared runs at ``$EARLYEVAL_DATA`` or ``ROOT/../shared/data``):

* Fixture: a fresh workspace (a temporary folder) holding a bounded sample of the real SWE-bench runs, at most
  ``--files`` files (default ``FILES``, 110) of every catalog run, evenly spread over its files
  (``ingest_catalog(max_files=...)``), and the task table, written as ``data/swebench/{trajectories,tasks}.parquet``
  as an ingest leaves them.  Not traced.
* Traced run: ``evaluate`` is the CLI verb ``earlyeval --workspace WS evaluate --bench swebench --no-ablations``
  and ``train`` the verb ``train --bench swebench`` (each in this process, through the typer app); ``live`` is
  what a monitored process does with the model ``train`` wrote (trained first, not traced):
  ``Monitor.load(models/swebench)``, then for each of the first ``LIVE_RUNS`` runs of the sample (by run id)
  ``start(task, run_id)`` and ``observe(step)`` per step until a halt.  PYTHONHASHSEED is pinned to 0.
* Walk: every function of the package (a code object whose file is under ``ROOT/earlyeval``) in the order of its
  FIRST call during the traced run (``sys.setprofile``/``threading.setprofile``; a later call of the same
  function adds nothing), module-level code (imports made on the way) left out, each function replaced by its
  module, and consecutive repeats of one module merged.  The walk is that sequence of modules.
* visits: the length of the walk (a "stay" in a module); modules: the distinct modules in it;
  returns: the visits to a module the walk already left once, ``visits - modules``.  A walk that goes straight
  down the layers has returns 0; a module that asks another for one number at a time, a function per number, adds
  a return per function.

Prints one line per measure (``name value``); ``--show`` also prints the module arrows per importing layer, and
with ``--walk`` the walk, the returns per folder of the module gone back into, and the module pairs that make the
returns (how often the walk goes from A back into B).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parents[1]
BENCH = "swebench"
LIVE_RUNS = 5
# files per catalog run in the fixture: the SWE-bench catalog holds out agents of at least 100 runs
# (holdout_min_runs), so fewer leave no held-out agent and evaluate stops with too little data
FILES = 110


def _layer_contract(root: Path) -> Any:
    """ROOT's own ``tests/test_layers.py`` as a module (its collector, layer table and cycle finder)."""
    path = root / "tests" / "test_layers.py"
    if not (root / "earlyeval" / "__init__.py").is_file() or not path.is_file():
        raise ValueError(
            f"{root}: not a checkout of earlyeval (no earlyeval/ or tests/test_layers.py)"
        )
    spec = importlib.util.spec_from_file_location("_layers_of_" + root.name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses and annotations resolve through sys.modules
    spec.loader.exec_module(mod)
    return mod


def top_folders(pkg: Path) -> set[str]:
    """The package's folders: its top-level subpackages (``ingest``, ``app``, ...; ``app/verbs`` is part of ``app``)."""
    return {d.name for d in pkg.iterdir() if (d / "__init__.py").is_file()}


def folder_of(module: str, folders: set[str]) -> str:
    """``earlyeval.ingest.chat`` and ``earlyeval.ingest`` -> ``earlyeval.ingest``; ``earlyeval.app.verbs.train`` ->
    ``earlyeval.app``; the facade and ``__main__`` -> ``earlyeval``."""
    parts = module.split(".")
    return f"earlyeval.{parts[1]}" if len(parts) > 1 and parts[1] in folders else "earlyeval"


def static_numbers(root: Path) -> dict[str, int]:
    """Files, folders, layers, module and folder arrows, upward arrows and cycles of ROOT's package."""
    lay = _layer_contract(root)
    pkg = root / "earlyeval"
    files, edges = lay.collect(pkg, "earlyeval")
    arrows = {(m, t) for m, ts in edges.items() for t, _ in ts}
    upward = [
        (m, t)
        for m, t in arrows
        if (lay.layer_index(m, lay.LAYERS) or 0) < (lay.layer_index(t, lay.LAYERS) or 0)
    ]
    tops = top_folders(pkg)
    folder_pairs = {(folder_of(m, tops), folder_of(t, tops)) for m, t in arrows}
    graph: dict[str, set[str]] = {}
    for m, t in arrows:
        graph.setdefault(m, set()).add(t)
    counts = Counter(lay.layer_index(m, lay.LAYERS) or 0 for m, _ in arrows)
    by_layer = {lay.LAYERS[i][0]: counts[i] for i in sorted(counts)}  # bottom to top
    return {
        "files": len(files),
        "folders": len(tops),
        "layers": len(lay.LAYERS),
        "module_arrows": len(arrows),
        "folder_arrows": len({(fm, ft) for fm, ft in folder_pairs if fm != ft}),
        "upward_arrows": len(upward),
        "cycles": len(lay.find_cycles(graph)),
        "_arrows_by_layer": by_layer,
    }


# ------------------------------------------------------------------ the walk


class FirstCalls:
    """Records, in order, the module of every package function at its first call (module-level code skipped)."""

    def __init__(self, pkg_dir: Path, module_of: Callable[[str], str]) -> None:
        self.prefix = str(pkg_dir) + os.sep
        self.module_of = module_of
        self.seen: set[Any] = set()
        self.modules: list[str] = []
        self.importing = 0  # depth of module bodies being executed (an import on the way)
        self.lock = threading.Lock()

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        code = frame.f_code
        if code.co_name == "<module>":
            self.importing += 1 if event == "call" else -1
            return
        if event != "call" or self.importing or code in self.seen:
            return
        with self.lock:
            self.seen.add(code)
            if code.co_filename.startswith(self.prefix):
                rel = os.path.relpath(code.co_filename, self.prefix.rsplit(os.sep, 2)[0])
                self.modules.append(self.module_of(rel))

    def run(self, fn: Callable[[], Any]) -> Any:
        threading.setprofile(self)
        sys.setprofile(self)
        try:
            return fn()
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # type: ignore[arg-type]


def walk_of(modules: list[str]) -> list[str]:
    """Consecutive repeats merged: one entry per stay."""
    return [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]


def walk_numbers(walk: list[str]) -> dict[str, Any]:
    visits, distinct = len(walk), len(set(walk))
    return {
        "visits": visits,
        "modules": distinct,
        "returns": visits - distinct,
        "returns_share": round((visits - distinct) / visits, 3) if visits else 0.0,
    }


def return_pairs(walk: list[str]) -> Counter:
    """(from, back into) -> how often the walk leaves ``from`` for a module it had already left."""
    seen: set[str] = set()
    out: Counter = Counter()
    for i, m in enumerate(walk):
        if m in seen:
            out[(walk[i - 1], m)] += 1
        seen.add(m)
    return out


def _sample_workspace(ws: Path, max_files: int) -> None:
    """The fixture: the sample of SWE-bench runs and the task table as an ingest leaves them (not traced)."""
    from earlyeval.config.catalog import data_root, load_catalog
    from earlyeval.ingest import ingest_catalog
    from earlyeval.tables.store import bench_dir, write_tasks, write_trajectories
    from earlyeval.tables.tasks import load_tasks

    cat = load_catalog(BENCH)
    root = data_root()
    trajs, _ = ingest_catalog(cat, root, show_progress=False, max_files=max_files)
    out = bench_dir(BENCH)
    write_trajectories(trajs, out / "trajectories.parquet")
    write_tasks(load_tasks(cat, root).values(), out / "tasks.parquet")
    (out / "ingest.done").write_text("{}\n")  # the store's mark of a finished ingest


def _verb(ws: Path, *args: str) -> Callable[[], Any]:
    from earlyeval.app.cli import app

    def run() -> None:
        try:
            app(["--workspace", str(ws), *args, "--bench", BENCH], standalone_mode=False)
        except SystemExit as e:  # pragma: no cover - a verb that exits is a failed measurement
            if e.code:
                raise RuntimeError(f"earlyeval {' '.join(args)} exited {e.code}") from None

    return run


def _live(ws: Path) -> Callable[[], Any]:
    from earlyeval import Monitor
    from earlyeval.tables.store import read_ingested_tasks, read_ingested_trajectories

    tasks = read_ingested_tasks(BENCH)
    runs = sorted(read_ingested_trajectories(BENCH), key=lambda t: t.run_id)[:LIVE_RUNS]

    def run() -> None:
        mon = Monitor.load(ws / "models" / BENCH)
        for traj in runs:
            mon.start(task=tasks.get(traj.task_id), run_id=traj.run_id)
            for step in traj.steps:
                if mon.observe(step).halt:
                    break

    return run


def measure_walk(root: Path, what: str, max_files: int, show: bool) -> dict[str, Any]:
    import earlyeval

    pkg = Path(earlyeval.__file__).resolve().parent
    if pkg != (root / "earlyeval").resolve():
        raise ValueError(
            f"this interpreter imports {pkg}, not {root}/earlyeval: run ROOT/.venv/bin/python"
        )
    lay = _layer_contract(root)
    with tempfile.TemporaryDirectory(prefix="structure-walk-") as tmp:
        ws = Path(tmp)
        from earlyeval.config.workspace import set_workspace

        set_workspace(ws)
        _sample_workspace(ws, max_files)
        if what == "live":
            _verb(ws, "train")()
            fn = _live(ws)
        else:
            fn = _verb(ws, *(["evaluate", "--no-ablations"] if what == "evaluate" else [what]))
        rec = FirstCalls(pkg, lay.module_of)
        rec.run(fn)
    walk = walk_of(rec.modules)
    out = {"walk": what, "files_per_run": max_files, **walk_numbers(walk)}
    if show:
        print("walk: " + " > ".join(m.removeprefix("earlyeval.") for m in walk))
        tops = top_folders(pkg)
        into = Counter(
            folder_of(b, tops) for (_, b), n in return_pairs(walk).items() for _ in range(n)
        )
        for folder, n in into.most_common():
            print(f"returns into {folder.removeprefix('earlyeval.')}/: {n}")
        for (a, b), n in return_pairs(walk).most_common():
            print(
                f"  back into {b.removeprefix('earlyeval.')} from {a.removeprefix('earlyeval.')}: {n}"
            )
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=str(HERE))
    ap.add_argument("--walk", choices=("evaluate", "train", "live"))
    ap.add_argument("--files", type=int, default=FILES, help="files per catalog run in the fixture")
    ap.add_argument("--show", action="store_true", help="print the walk and its returns")
    a = ap.parse_args(argv[1:])
    root = Path(a.root).resolve()
    if a.walk and os.environ.get("PYTHONHASHSEED") != "0":  # set and dict orders of strings: pinned
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        return subprocess.call([sys.executable, *argv], env=env)
    try:
        numbers = measure_walk(root, a.walk, a.files, a.show) if a.walk else static_numbers(root)
    except ValueError as e:
        print(f"structure: {e}", file=sys.stderr)
        return 2
    for k, v in numbers.items():
        if not k.startswith("_"):
            print(f"{k} {v}")
    if a.show and not a.walk:
        for layer, n in numbers["_arrows_by_layer"].items():
            print(f"  module arrows from the {layer} layer: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

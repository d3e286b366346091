"""Docs that run: every fenced code block of README.md and docs/*.md.

Unit (no data): every block says its language; every bash block parses (``bash -n``); every
workspace or repository path a snippet names exists or is one the pipeline writes (``models/<bench>``
for a catalog bench, ...); no snippet installs earlyeval from a package index (it is not on one).

Integration (``-m integration``, the real runs of ../shared/data): the python blocks of each file are
executed in order in one namespace per file (as doctest does), and the bash blocks run with ``bash -e``,
both in a temporary workspace whose ``models/swebench`` is the shipped model (or, where it is absent as
in CI, one trained the same way on a bounded sample of the real runs), whose
``data/swebench/tasks.parquet`` is the real task table, and beside which ``../shared/data`` is the real
data root. ``earlyeval`` in a bash block is this checkout's CLI. A block preceded by
``<!-- docs-test: skip REASON -->`` is reported as skipped with its reason; a python block that imports
an agent framework that is not installed is skipped naming it. What the docs leave to the reader
(``issue``, ``my_agent_turns()``, an agent framework's ``model`` and ``env``, ...) comes from
``reader_context``: real steps of a real run, and scripted harmless commands for a framework that
executes them; every name it defines is used by some snippet (checked), so the list cannot rot.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LANGS = {"python", "bash", "text", "yaml"}
FRAMEWORKS = {
    "minisweagent": "mini-swe-agent",
    "inspect_ai": "inspect_ai",
    "openhands": "openhands-sdk (Python >= 3.12)",
    "sweagent": "SWE-agent",
}
SKIP_RE = re.compile(r"<!--\s*docs-test:\s*skip\s+(.+?)\s*-->\s*$")
FENCE_RE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)


@dataclass
class Block:
    file: Path
    line: int
    lang: str
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    text = path.read_text()
    out = []
    for m in FENCE_RE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = [ln for ln in text[: m.start()].splitlines() if ln.strip()]
        sk = SKIP_RE.search(before[-1]) if before else None
        out.append(Block(path, line, m.group(1).strip(), m.group(2), sk.group(1) if sk else None))
    return out


ALL = [b for f in DOC_FILES for b in blocks(f)]
BY_LANG = {lang: [b for b in ALL if b.lang == lang] for lang in LANGS}


def test_the_docs_have_snippets_at_all():
    assert len(BY_LANG["python"]) >= 10 and len(BY_LANG["bash"]) >= 5, {
        k: len(v) for k, v in BY_LANG.items()
    }


@pytest.mark.parametrize("block", ALL, ids=lambda b: b.id)
def test_every_block_says_its_language(block):
    assert block.lang in LANGS, (
        f"{block.id}: fence language {block.lang!r}; use one of {sorted(LANGS)}"
    )


@pytest.mark.parametrize("block", BY_LANG["bash"], ids=lambda b: b.id)
def test_bash_blocks_parse(block):
    r = subprocess.run(["bash", "-n"], input=block.code, capture_output=True, text=True)
    assert r.returncode == 0, f"{block.id}: {r.stderr}"


@pytest.mark.parametrize("block", BY_LANG["yaml"], ids=lambda b: b.id)
def test_yaml_blocks_parse(block):
    import yaml

    assert isinstance(yaml.safe_load(block.code), dict), f"{block.id}: not a YAML mapping"


@pytest.mark.parametrize("block", BY_LANG["python"], ids=lambda b: b.id)
def test_python_blocks_parse(block):
    ast.parse(block.code, filename=block.id)


# ------------------------------------------------------------------ paths named by snippets

WORKSPACE_OUTPUTS = {  # what the pipeline writes under <workspace>/<top>/<bench>/
    "data": {"trajectories.parquet", "tasks.parquet", "tasks.jsonl", "ingest.done"},
    "features": {"loao_predictions.parquet", "prefixes.parquet", "runs.parquet"},
    "reports": {
        "loao.json",
        "sweep.csv",
        "sweep_frontier.png",
        "budget.json",
        "routing.json",
        "latency.json",
        "latency.png",
        "ingest.json",
        "report.html",
        "bench_scale.json",
        "bench_scale.txt",
        "bench_scale.png",
        # written by the measurement tools (tools/pass_ceiling.py, tools/dask_train_floor.py, tools/encoder_compare.py)
        "pass_ceiling.json",
        "dask_train_floor.json",
        "encoders.json",
    },
    "models": set(),
}
PATH_RE = re.compile(
    r"(?<![\w./-])((?:\.\./shared/data|models|data|features|reports|docs|tests|earlyeval|tools)/[\w./*'{}<>-]*)"
)


def _benches() -> set[str]:
    """The shipped catalogs, and the ones a doc's own walkthrough writes (``data/<bench>.toml`` in a bash
    block: docs/catalogs.md's private benchmark)."""
    shipped = {p.stem for p in (REPO / "earlyeval" / "catalogs").glob("*.toml")}
    written = {
        m.group(1)
        for b in ALL
        if b.lang == "bash"
        for m in re.finditer(r"cat > data/([\w.-]+)\.toml", b.code)
    }
    return shipped | written


# inspect_ai's registry name of the earlyeval solver, not a file
NOT_PATHS = {"earlyeval/early_stop"}


def path_problem(p: str) -> str | None:
    """Why the path a snippet names is not a real one (None when it is)."""
    p = p.rstrip(".,;:'\"")
    if p in NOT_PATHS:
        return None
    if any(c in p for c in "*{}<>") or not p:
        return None  # a glob or a placeholder pattern, not a path
    parts = p.split("/")
    top = parts[0]
    if p.startswith("../shared/data"):
        from earlyeval.config.catalog import data_root

        root = data_root()
        rel = p[len("../shared/data") :].strip("/")
        if root.exists() and rel and not (root / rel).exists():
            return f"{p}: not under the data root {root}"
        return None
    if top in WORKSPACE_OUTPUTS:
        if len(parts) < 2 or not parts[1]:
            return None  # the folder itself
        if top == "data" and parts[1].endswith(".toml"):
            return None
        if parts[1] not in _benches():
            return f"{p}: {parts[1]!r} is no benchmark catalog (earlyeval/catalogs/: {', '.join(sorted(_benches()))})"
        rest = "/".join(x for x in parts[2:] if x)
        if (
            rest
            and top != "models"
            and rest not in WORKSPACE_OUTPUTS[top]
            and not rest.startswith("export-")
        ):
            return f"{p}: {top}/<bench>/ holds {sorted(WORKSPACE_OUTPUTS[top])}, not {rest!r}"
        return None
    return None if (REPO / p).exists() else f"{p}: no such file in the repository"


def inline_code(path: Path) -> list[tuple[int, str]]:
    """`code spans` of the prose (outside fences), with their line numbers."""
    text = FENCE_RE.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text())
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(1)) for m in re.finditer(r"`([^`\n]+)`", text)
    ]


def test_paths_named_in_the_docs_exist_or_are_pipeline_outputs():
    problems = []
    for b in ALL:
        if b.lang in ("python", "bash"):
            problems += [
                f"{b.id}: {why}" for p in PATH_RE.findall(b.code) if (why := path_problem(p))
            ]
    for f in DOC_FILES:
        for line, span in inline_code(f):
            problems += [
                f"{f.relative_to(REPO)}:{line}: {why}"
                for p in PATH_RE.findall(span)
                if (why := path_problem(p))
            ]
    assert not problems, "\n".join(problems)


def test_path_check_catches_the_old_wrong_paths():
    assert (
        path_problem("models/swe")
        and path_problem("models/swe-v1")
        and path_problem("data/swebench/tasks.pq")
    )
    assert path_problem("docs/nosuch.md")
    assert (
        path_problem("models/swebench") is None
        and path_problem("data/swebench/tasks.parquet") is None
    )


# a dotted name in a code span that starts with a package folder (`fitting.budget_targets.run_usage`) or with `earlyeval.`
# must name a module or attribute that exists: a module that moved leaves such names behind
LAYER_FOLDERS = sorted(
    p.name for p in (REPO / "earlyeval").iterdir() if (p / "__init__.py").exists()
)
DOTTED_RE = re.compile(
    r"(?<![\w./-])((?:earlyeval\.)?(?:"
    + "|".join(LAYER_FOLDERS)
    + r")(?:\.[A-Za-z_]\w*)+)(?![\w/-])"
)
NOT_PYTHON = (
    ".json",
    ".md",
    ".toml",
    ".csv",
    ".yaml",
    ".parquet",
    ".txt",
    ".html",
    ".png",
    ".done",
    ".py",
)


def dotted_problem(name: str) -> str | None:
    """None if ``earlyeval.<name>`` (or ``name``) imports or is an attribute of what imports; else why not."""
    import importlib

    parts = name.split(".")
    parts = parts if parts[0] == "earlyeval" else ["earlyeval", *parts]
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for a in parts[k:]:
            if not hasattr(obj, a):
                return f"{name}: {'.'.join(parts[:k])} has no {a!r}"
            obj = getattr(obj, a)
        return None
    return f"{name}: no such module"


def test_dotted_names_in_the_docs_exist():
    problems = [
        f"{f.relative_to(REPO)}:{line}: {why}"
        for f in DOC_FILES
        for line, span in inline_code(f)
        for n in DOTTED_RE.findall(span)
        if not n.endswith(NOT_PYTHON) and (why := dotted_problem(n))
    ]
    assert not problems, "\n".join(problems)


def test_dotted_name_check_catches_a_moved_module():
    assert dotted_problem("budget.shipped.predict_prefixes") and dotted_problem("budget.run_usage")
    assert dotted_problem("evaluation.budget_shipped.predict_prefixes") is None
    assert dotted_problem("earlyeval.core.errors.EarlyEvalError") is None


# absolute paths of one machine (a checkout, a home, a pyenv, a pytest temp folder): a reader has none of them
MACHINE_PATH_RE = re.compile(
    r"(?<![\w.])(/work/|/root/|/home/|/Users/|/tmp/tmp|/tmp/pytest-|/private/var/|[A-Z]:\\Users\\)"
)


def machine_paths(text: str) -> list[tuple[int, str]]:
    return [
        (text.count("\n", 0, m.start()) + 1, text[m.start() : m.start() + 40].split()[0])
        for m in MACHINE_PATH_RE.finditer(text)
    ]


def test_docs_name_no_machine_paths():
    """README.md and docs/*.md, prose and code alike: no path that exists on one machine only."""
    hits = [
        f"{f.relative_to(REPO)}:{ln}: {s}"
        for f in [*DOC_FILES, REPO / "tests" / "README.md"]
        for ln, s in machine_paths(f.read_text())
    ]
    assert not hits, "\n".join(hits)


def test_machine_path_check_catches_them():
    for bad in (
        "PYTHONPATH=/work/main",
        "/root/.pyenv/versions/3.12.1/bin/python",
        "see /home/me/x",
        "/tmp/tmpab12/x",
    ):
        assert machine_paths(bad), bad
    for ok in (
        "../shared/data",
        "reports/swebench/loao.json",
        "python3.12 -m venv .venv-oh",
        "https://example.org/work/x",
        "/tmp/venv is not flagged by design: any machine has /tmp",
    ):
        assert not machine_paths(ok), ok


def test_no_snippet_installs_earlyeval_from_a_package_index():
    """earlyeval is not published: `pip install earlyeval[...]` finds no distribution; install from the repository."""
    bad = re.compile(r"pip install\s+(?:-U\s+)?[\"']?earlyeval(?:\[|[\"'\s]|$)")
    hits = [f"{b.id}" for b in ALL if bad.search(b.code)]
    hits += [
        f"{f.relative_to(REPO)}:{ln}: {s}"
        for f in DOC_FILES
        for ln, s in inline_code(f)
        if bad.search(s)
    ]
    assert not hits, hits


# ------------------------------------------------------------------ running them (integration)

SAMPLE_FILES = 30


def _real_runs_and_tasks():
    from earlyeval.config.catalog import data_root, load_catalog
    from earlyeval.ingest import ingest_catalog
    from earlyeval.tables.store import bench_dir, read_tasks, read_trajectories
    from earlyeval.tables.tasks import load_tasks

    p = bench_dir("swebench") / "trajectories.parquet"
    if p.exists():
        return read_trajectories(p), read_tasks(bench_dir("swebench") / "tasks.parquet")
    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")
    cat = load_catalog("swebench")
    trajs, _ = ingest_catalog(cat, data_root(), show_progress=False, max_files=SAMPLE_FILES)
    return trajs, load_tasks(cat, data_root())


@pytest.fixture(scope="module")
def docs_workspace(tmp_path_factory):
    """<tmp>/ws (the workspace and cwd) with models/swebench and data/swebench/tasks.parquet; <tmp>/shared/data."""
    from earlyeval.app.stages.train import train_bench
    from earlyeval.config.catalog import data_root
    from earlyeval.config.workspace import models_dir
    from earlyeval.evaluation.dataset import load_dataset
    from earlyeval.evaluation.settings import eval_config
    from earlyeval.tables.store import write_tasks

    if not data_root().exists():
        pytest.skip(f"real data absent: {data_root()}")
    trajs, tasks = _real_runs_and_tasks()
    root = tmp_path_factory.mktemp("docs")
    ws = root / "ws"
    (ws / "models").mkdir(parents=True)
    (ws / "data" / "swebench").mkdir(parents=True)
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(data_root().resolve())
    shipped = models_dir("swebench")
    if (shipped / "manifest.json").exists():
        (ws / "models" / "swebench").symlink_to(shipped.resolve())
    else:  # CI: the same training on a bounded sample
        from synth import SMALL_LGBM

        cfg = eval_config(
            "swebench", lgbm_params=SMALL_LGBM, holdout_min_runs=25, n_jobs=2, warm_repeats=1
        )
        ds = load_dataset("swebench", cfg.families, trajs=trajs, tasks=tasks, progress=False)
        train_bench("swebench", ws / "models" / "swebench", cfg, ds=ds, budget=True)
    write_tasks(tasks.values(), ws / "data" / "swebench" / "tasks.parquet")
    return ws, trajs, tasks


@dataclass
class Usage:
    prompt: int | None
    completion: int | None


@dataclass
class Turn:
    """One turn of the reader's own loop, made from a real step."""

    command: str
    output: str
    returncode: int
    thought: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cost: float | None

    @property
    def usage(self) -> Usage:
        return Usage(self.prompt_tokens, self.completion_tokens)


SAFE_COMMANDS = [
    "ls -la",
    "cat README.txt",
    "grep -n bug README.txt",
    "echo try-a-fix > fix.txt",
    "ls",
]


def reader_context(tmp: Path, trajs: list, tasks: dict) -> dict[str, Any]:
    """The names the docs leave to the reader, from one real labelled run with a known task."""
    run = next(
        t
        for t in sorted(trajs, key=lambda t: t.run_id)
        if t.outcome == 0 and t.task_id in tasks and len(t.steps) >= 5
    )
    task = tasks[run.task_id]
    turns = [
        Turn(
            s.action,
            s.observation,
            1 if s.error else 0,
            s.thought,
            s.input_tokens,
            s.output_tokens,
            s.cost_usd,
        )
        for s in run.steps
    ]
    script = iter(turns)
    outputs: dict[str, tuple[str, int]] = {}

    def my_llm(history):
        t = next(script, None)
        if t is None:
            return "", "submit"
        outputs[t.command] = (t.output, t.returncode)
        return t.thought, t.command

    def my_shell(command):
        return outputs.get(command, ("", 0))

    saved: dict[str, Any] = {}
    (tmp / "README.txt").write_text("a bug\n")
    ctx: dict[str, Any] = {
        "issue": task.prompt,
        "issue_text": task.prompt,
        "problem_statement": task.prompt,
        "instance_id": run.task_id,
        "task_id": run.task_id,
        "my_agent_turns": lambda: iter(turns),
        "my_run": lambda: iter(run.steps),
        "my_llm": my_llm,
        "my_shell": my_shell,
        "history": [],
        "save": lambda **kw: saved.update(kw),
        "record": lambda **kw: saved.update(kw),
        "finished_runs": [t for t in trajs if t.outcome is not None and t.task_id in tasks][:40],
        "tasks": tasks,
        "traj_path": tmp / "run.traj.json",
    }
    try:  # mini-swe-agent: its own offline model and a local shell in a scratch folder, harmless scripted commands
        os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
        os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
        from minisweagent.environments.local import LocalEnvironment
        from minisweagent.models.test_models import DeterministicModel, make_output

        def out(cmd: str):
            return make_output(
                f"THOUGHT: next\n\n```mswea_bash_command\n{cmd}\n```", [{"command": cmd}], cost=0.0
            )

        outs = [out(c) for c in SAFE_COMMANDS] + [
            out("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat fix.txt")
        ]
        cfg = {
            "system_template": "You are a test agent.",
            "instance_template": "Task: {{task}}",
            "step_limit": 0,
            "cost_limit": 0,
        }
        ctx.update(
            model=DeterministicModel(outputs=list(outs)),
            env=LocalEnvironment(cwd=str(tmp)),
            agent_config=dict(cfg),
            agent_cfg=dict(cfg),
            model_cfg={
                "model_class": "deterministic",
                "model_name": "deterministic",
                "outputs": list(outs),
            },
        )
    except ImportError:
        pass
    return ctx


READER_NAMES = {
    "issue",
    "issue_text",
    "problem_statement",
    "instance_id",
    "task_id",
    "my_agent_turns",
    "my_run",
    "my_llm",
    "my_shell",
    "history",
    "save",
    "record",
    "finished_runs",
    "tasks",
    "traj_path",
    "model",
    "env",
    "agent_config",
    "agent_cfg",
    "model_cfg",
}


def test_every_reader_name_is_used_by_a_snippet():
    code = "\n".join(b.code for b in BY_LANG["python"])
    unused = sorted(n for n in READER_NAMES if not re.search(rf"\b{n}\b", code))
    assert not unused, f"reader_context defines names no snippet uses: {unused}"


_NAMESPACES: dict[Path, dict[str, Any]] = {}


@pytest.mark.integration
@pytest.mark.parametrize("block", BY_LANG["python"], ids=lambda b: b.id)
def test_python_blocks_run(block, docs_workspace, monkeypatch):
    from earlyeval.config import workspace

    ws, trajs, tasks = docs_workspace
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    scratch = ws.parent / f"scratch-{block.line}-{block.file.stem}"
    scratch.mkdir(exist_ok=True)
    ns = _NAMESPACES.setdefault(block.file, {"__name__": "__docs__", "__ran__": set()})
    monkeypatch.chdir(ws)
    workspace.set_workspace(ws)
    try:
        # the file's earlier blocks first (as a reader reads them), when this one is run alone (-k)
        todo = [
            b
            for b in BY_LANG["python"]
            if b.file == block.file
            and b.line < block.line
            and not b.skip
            and b.line not in ns["__ran__"]
        ] + [block]
        for b in todo:
            for k, v in reader_context(scratch, trajs, tasks).items():
                if (
                    k in ("model", "env", "model_cfg") or k not in ns
                ):  # a framework's scripted model and env serve one run
                    ns[k] = v
            ns["__ran__"].add(b.line)
            exec(compile(b.code, b.id, "exec"), ns)
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top in FRAMEWORKS:
            pytest.skip(f"{block.id}: needs {FRAMEWORKS[top]}, not installed in this venv")
        raise
    finally:
        workspace.set_workspace(None)


BASH_PRELUDE = """set -e
earlyeval() { "$DOCS_PY" -c 'from earlyeval.app.cli import app; app()' "$@"; }
"""


@pytest.mark.integration
@pytest.mark.parametrize("block", BY_LANG["bash"], ids=lambda b: b.id)
def test_bash_blocks_run(block, docs_workspace):
    ws, _, _ = docs_workspace
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    env = {
        **os.environ,
        "DOCS_PY": sys.executable,
        "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "EARLYEVAL_HOME": str(ws),
    }
    env.pop("EARLYEVAL_DATA", None)  # the docs' default: ../shared/data beside the workspace
    r = subprocess.run(
        ["bash", "-c", BASH_PRELUDE + block.code],
        cwd=ws,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert r.returncode == 0, (
        f"{block.id} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    )


def test_skip_markers_are_few_and_say_why():
    skipped = [b for b in ALL if b.skip]
    assert all(len(b.skip.split()) >= 4 for b in skipped), [(b.id, b.skip) for b in skipped]
    assert len(skipped) <= len([b for b in ALL if b.lang in ("python", "bash")]) // 2, [
        b.id for b in skipped
    ]


def test_docs_test_marker_only_precedes_a_block():
    for f in DOC_FILES:
        lines = f.read_text().splitlines()
        for i, ln in enumerate(lines):
            if ln.lstrip().startswith("<!--") and "docs-test:" in ln:
                nxt = next((x for x in lines[i + 1 :] if x.strip()), "")
                assert SKIP_RE.search(ln) and nxt.startswith("```"), (
                    f"{f.name}:{i + 1}: a docs-test marker must say `skip REASON` and precede a fence"
                )


if __name__ == "__main__":  # pragma: no cover - list the blocks
    for b in ALL:
        print(b.id, b.lang, f"skip: {b.skip}" if b.skip else "")


def test_architecture_counts_the_layers_the_contract_has():
    """docs/architecture.md's "<N> layers, bottom to top" and its numbered table agree with tests/test_layers.py."""
    from test_layers import LAYERS

    words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
    ]
    text = (REPO / "docs" / "architecture.md").read_text()
    said = re.search(r"^(\w+) layers, bottom to top", text, re.M)
    assert said and said.group(1).lower() == words[len(LAYERS)], (
        said and said.group(1),
        len(LAYERS),
    )
    numbered = [int(n) for n in re.findall(r"^\| (\d+) [^|]+\|", text, re.M)]
    assert numbered == list(range(1, len(LAYERS) + 1)), numbered

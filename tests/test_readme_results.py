"""The SWE-bench results tables are the reports' (issue 29 item 9): every table row that ``tools/results_tables.py``
prints from a fresh ``evaluate --no-ablations`` of the ingested runs is in docs/results.md, and every row of its
``--summary`` in README.md,
character for character, so a number typed by hand, or left behind by a change of the model, fails here.

Integration tier: it needs the full SWE-bench ingest in the workspace (``make train BENCH=swebench`` makes it, as CI
does first) and one leave-one-agent-out evaluation (about a minute on 2 cores)."""

from __future__ import annotations

import subprocess
import sys

import _paths
import pytest

from earlyeval.core.atomic import write_json
from earlyeval.tables.store import bench_dir

pytestmark = pytest.mark.integration

# the lines the README takes as printed: table rows, the threshold rule's sentences (rule, guarantee, how it
# held) and the targets' (report/targets.py)
PRINTED = (
    "|",
    "**The threshold rule**",
    "The rule's guarantee",
    "How it held (",
    "share of the per-agent oracle",
    "Target ",
)


def test_the_readme_results_tables_are_printed_from_the_reports(tmp_path):
    if not (bench_dir("swebench") / "ingest.done").exists():
        pytest.skip("no SWE-bench ingest in this workspace (make train BENCH=swebench)")
    from earlyeval.app.stages.evaluate import evaluate_bench

    report, _ = evaluate_bench("swebench", ablations=[])
    path = write_json(report, tmp_path / "loao.json")
    out = subprocess.run(
        [sys.executable, str(_paths.REPO / "tools" / "results_tables.py"), str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=_paths.REPO,
    ).stdout
    rows = [line for line in out.splitlines() if line.startswith(PRINTED)]
    assert len(rows) >= 60, out[:2000]
    results = (_paths.REPO / "docs" / "results.md").read_text()
    missing = [r for r in rows if r not in results]
    assert not missing, (
        "docs/results.md lacks these rows of tools/results_tables.py (re-print the tables):\n"
        + "\n".join(missing)
    )
    head = subprocess.run(
        [sys.executable, str(_paths.REPO / "tools" / "results_tables.py"), "--summary", str(path)],
        capture_output=True,
        text=True,
        check=True,
        cwd=_paths.REPO,
    ).stdout.splitlines()
    readme = (_paths.REPO / "README.md").read_text()
    assert len(head) == 6 and not [r for r in head if r not in readme], head

"""docs/catalogs.md's example label files (issue 42): one per label format, each read by its reader as the doc
says (``a`` resolved, ``b`` not), so the reference cannot drift from the readers."""

from __future__ import annotations

import re

import _paths
import pytest

from earlyeval.config.catalog import LabelSpec
from earlyeval.config.file_schemas import LABEL_FORMATS
from earlyeval.ingest.labels import read_labels

DOC = (_paths.REPO / "docs" / "catalogs.md").read_text()
# format -> (the file the example is written to, the label entry's glob, its options)
FILES = {
    "sb-cli": ("report.json", "report.json", {}),
    "instance-reports": ("logs/a/report.json", "logs/*/report.json", {}),
    "harness-lists": ("result.json", "result.json", {}),
    "resolved-list": ("final_report.json", "final_report.json", {}),
    "openhands-md": ("output.swebench_eval.md", "output.swebench_eval.md", {}),
    "csv-summary": ("results_summary.csv", "results_summary.csv", {}),
    "resolved-submissions": (
        "resolved_submissions.json",
        "resolved_submissions.json",
        {"submission": "mine"},
    ),
}


def example(fmt: str) -> str:
    """The text block after the paragraph that starts with `fmt`."""
    m = re.search(rf"^`{re.escape(fmt)}` \(.*?\n```text\n(.*?)^```", DOC, re.S | re.M)
    assert m, f"docs/catalogs.md has no example file for the label format {fmt}"
    return m.group(1)


def test_every_label_format_has_an_example():
    assert set(FILES) == set(LABEL_FORMATS) - {"inline"}
    assert re.search(r"^`inline`:", DOC, re.M)


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_each_example_reads_as_the_doc_says(tmp_path, fmt):
    name, glob, options = FILES[fmt]
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(example(fmt))
    if fmt == "instance-reports":  # the doc's second file
        (tmp_path / "logs" / "b").mkdir(parents=True)
        (tmp_path / "logs" / "b" / "report.json").write_text('{"resolved": false}')
    ls = read_labels(tmp_path, LabelSpec(fmt, glob, options))
    assert ls.resolved == {"a"}
    assert ls.outcome("b") == (0, True)

"""``earlyeval.read_run(path)``: one run file (or run folder) as a Trajectory without a catalog entry, its format
sniffed as ``earlyeval score --format auto`` sniffs it; every failure an IngestError naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _paths import FIXTURES

import earlyeval
from earlyeval.core.errors import IngestError
from earlyeval.ingest import ingest_run
from earlyeval.ingest.detect import generic_spec
from earlyeval.ingest.one_run import read_run

OH_CONV = FIXTURES / "openhands-conversation" / "django__django-11099"
# (path, its format): a file, or the folder of one run
ONE_RUN = [
    (FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj", "swe-agent-traj"),
    (FIXTURES / "coder-traj" / "trajs" / "astropy__astropy-1.traj", "coder-traj"),
    (
        FIXTURES / "moatless-transitions" / "trajs" / "astropy__astropy-1.json",
        "moatless-transitions",
    ),
    (
        FIXTURES / "openhands-events" / "logs" / "issue_1" / "astropy__astropy-1.json",
        "openhands-events",
    ),
    (FIXTURES / "toolathlon" / "trajs" / "fake-model_sales-report.json", "toolathlon"),
    (FIXTURES / "atif" / "job" / "graded__p6q7r8", "atif"),
    (next(OH_CONV.iterdir()), "openhands-conversation"),
]


@pytest.mark.parametrize("path, fmt", ONE_RUN, ids=[f for _, f in ONE_RUN])
def test_a_run_file_reads_as_its_format_would_ingest_it(path, fmt):
    t = read_run(path)
    again = read_run(str(path), fmt=fmt)
    ingested, report = ingest_run(generic_spec(path.resolve(), fmt), "", Path("/"))
    assert report.skipped == [] and len(ingested) == 1
    assert t.to_dict() == again.to_dict() == ingested[0].to_dict()
    assert t.steps and t.meta["source_file"].startswith(str(path.resolve()))


def test_the_facade_names_it():
    assert earlyeval.read_run is read_run


def _refused(path, fmt="auto", field=None) -> IngestError:
    with pytest.raises(IngestError) as e:
        read_run(path, fmt)
    if field is not None:
        assert e.value.field == field, e.value
    return e.value


def test_what_cannot_be_read_is_an_error_naming_the_file(tmp_path):
    missing = tmp_path / "nope.traj"
    assert _refused(missing, field="<file>").file == str(missing)
    text = tmp_path / "notes.txt"
    text.write_text("not a run\n")
    e = _refused(text, field="format")
    assert e.file == str(text) and "give fmt=" in e.reason
    e = _refused(FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj", fmt="no-such-format")
    assert e.field == "format" and "unknown format 'no-such-format'" in e.reason
    bad = FIXTURES / "toolathlon" / "trajs" / "fake-model_bad-call.json"
    e = _refused(bad, fmt="toolathlon")
    assert e.file == str(bad.resolve()) and e.field.startswith("messages[")


def test_a_file_of_several_runs_is_refused_naming_the_count(tmp_path):
    good = tmp_path / "two.json"
    doc = json.loads((FIXTURES / "tau2" / "shop_2025.json").read_text())
    doc["simulations"] = doc["simulations"][:2]  # two evaluated simulations
    good.write_text(json.dumps(doc))
    e = _refused(good, fmt="tau2", field="<runs>")
    assert "holds 2 runs" in e.reason and "earlyeval score" in e.reason


MINI = (
    FIXTURES / "export-atif" / "mini-swe-agent" / "trajs" / "toy__repo-1" / "toy__repo-1.traj.json"
)


def test_a_folder_of_several_formats_is_refused(tmp_path):
    shutil.copy(FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj", tmp_path)
    shutil.copy(MINI, tmp_path)
    assert read_run(tmp_path / MINI.name).steps  # each alone reads
    e = _refused(tmp_path, field="format")
    assert "several formats" in e.reason and "mini-swe-agent-v1 (1)" in e.reason

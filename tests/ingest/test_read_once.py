"""A run stored twice in one folder is read once (issue 43 item 4): the same content from another file is a skip
naming both files; two runs of one file alike (a deterministic agent's trials) are two runs."""

from __future__ import annotations

import logging

from earlyeval.ingest.once import copy_of


def test_a_copy_from_another_file_is_a_skip_naming_both(caplog):
    seen: dict[str, str] = {}
    assert copy_of("fp1", "a/x.traj", seen) is None
    with caplog.at_level(logging.WARNING, logger="earlyeval.ingest"):
        skip = copy_of("fp1", "b/x.traj", seen, "run r: ")
    assert skip == {
        "file": "b/x.traj",
        "field": "<run>",
        "reason": "the same run as a/x.traj (identical content: its task, steps and record): counted once",
    }
    assert "run r: b/x.traj" in caplog.text and "a/x.traj" in caplog.text
    assert copy_of("fp1", "c/x.traj", seen) is not None  # a third copy too, still naming the first
    assert seen == {"fp1": "a/x.traj"}


def test_alike_runs_of_one_file_are_runs():
    seen: dict[str, str] = {}
    assert copy_of("fp", "trials.json", seen) is None
    assert copy_of("fp", "trials.json", seen) is None
    assert copy_of("other", "b.json", seen) is None

"""Shared set-up for every test, at any depth of tests/.

The helper modules (synth, _monitor_helpers, _integration_fakes, the stand-ins, faults, _paths) live in
tests/ itself; putting tests/ on sys.path here lets a test in tests/<layer>/ import them whatever the
working directory and whichever file is run alone.
"""

from __future__ import annotations

import gzip
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@dataclass
class IngestWorkspace:
    """A data root holding one run folder copied from a hand-written fixture, ready for ``ingest_run``."""

    root: Path  # the data root handed to ingest_run
    run: Path  # root / the copied folder
    spec: object  # the RunSpec (earlyeval.config.catalog), not imported here so that conftest stays light
    bench: str

    def ingest(self, spec=None):
        """``ingest_run(spec, bench, root)``: the (trajectories, report) of the run as the ingestor reads it."""
        from earlyeval.ingest import ingest_run

        return ingest_run(spec or self.spec, self.bench, self.root)


@pytest.fixture
def ingest_workspace(tmp_path: Path):
    """Factory: copy a fixture folder to ``tmp_path/<dest or spec.folder>``, gzip (``gz``) or delete (``drop``)
    some of its files as the shared data has them, and return an :class:`IngestWorkspace` on ``tmp_path``.

    The one set-up of every ingest test (tests/ingest/test_ingest_*.py); each test keeps its own assertions.
    """

    def make(
        src: Path,
        spec,
        bench: str,
        *,
        gz: tuple[str, ...] = (),
        drop: tuple[str, ...] = (),
        dest: str | None = None,
    ) -> IngestWorkspace:
        run = tmp_path / (dest or spec.folder)
        shutil.copytree(src, run)
        for name in gz:  # the same content, gzipped as in the shared data
            p = run / name
            with gzip.open(p.with_name(p.name + ".gz"), "wb") as out:
                out.write(p.read_bytes())
            p.unlink()
        for name in drop:
            (run / name).unlink()
        return IngestWorkspace(root=tmp_path, run=run, spec=spec, bench=bench)

    return make


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A unit test skipped for want of the OpenHands SDK must carry the ``openhands`` marker: the Python 3.12 stage
    (``make test-openhands``) runs only the tests so marked, so an unmarked one would run nowhere."""
    outcome = yield
    rep = outcome.get_result()
    reason = rep.longrepr[2] if rep.skipped and isinstance(rep.longrepr, tuple) else ""
    if (
        ("openhands.sdk" in reason or "openhands-sdk" in reason)
        and item.get_closest_marker("openhands") is None
        and item.get_closest_marker("integration") is None
    ):
        rep.outcome = "failed"
        rep.longrepr = (
            f"{item.nodeid}: skipped for want of openhands-sdk but not marked "
            "@pytest.mark.openhands, so the Python 3.12 stage would not run it"
        )

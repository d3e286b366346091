"""A cluster ingest gives what the in-process ingest gives: trajectories, order, run ids, skips, report.

On the hand-written SWE-agent fixtures, with one file per task (the worst split), and a second copy of
a task in a subfolder so that the same run id comes from two chunks: the driver must rename it as one
in-process pass does (``ingest.unique_run_id``) and rewrite that part.  A threaded in-process cluster is
enough here (tasks, parts, merge); worker processes and a killed worker are the integration tests'."""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

import _paths
from distributed import Client, LocalCluster

from earlyeval.config.catalog import Catalog, LabelSpec, RunSpec
from earlyeval.ingest import ingest_run
from earlyeval.scale.ingest import ingest_parts
from earlyeval.tables.store import part_names, read_trajectories

SPEC = RunSpec(
    name="fx-swe-agent",
    folder="runs/fx-swe-agent",
    agent="swe-agent__fake-model",
    scaffold="swe-agent",
    model="fake-model",
    format="swe-agent-traj",
    glob="**/*.traj*",
    labels=[LabelSpec(format="resolved-list", path="final_report.json*")],
)


@pytest.fixture(scope="module")
def client():
    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0"
        ) as lc,
        Client(lc) as c,
    ):
        yield c


@pytest.fixture
def root(tmp_path):
    run = tmp_path / "data" / SPEC.folder
    shutil.copytree(_paths.FIXTURES / "swe-agent-traj", run)
    (run / "sub").mkdir()
    # same task, another file (another run: a copy of one would be counted once, ingest.once)
    _another_run(run / "astropy__astropy-1.traj", run / "sub" / "astropy__astropy-1.traj")
    # a task id from the file: django
    _another_run(run / "django__django-2.traj", run / "sub" / "zz.traj")
    return tmp_path / "data"


def _another_run(src: Path, dst: Path) -> None:
    """``src``'s task in another file, its first thought worded otherwise: another run, not a copy."""
    dst.write_text(src.read_text().replace('"thought": "', '"thought": "Again: ', 1))


@pytest.mark.parametrize("chunk_files", [1, 3, 100])
def test_same_trajectories_ids_and_report_as_in_process(client, root, tmp_path, chunk_files):
    ref, rep = ingest_run(SPEC, "swebench", root)
    assert any("@" in t.run_id for t in ref), [t.run_id for t in ref]  # the fixture does collide
    assert rep.skipped  # and has bad files
    cat = Catalog(
        "swebench",
        Path("fx.toml"),
        [SPEC, dataclasses.replace(SPEC, name="missing", folder="runs/none")],
    )
    dest = tmp_path / "trajectories.parquet"
    got = ingest_parts(client, cat, root, dest, chunk_files=chunk_files)
    got.commit(dest)
    back = read_trajectories(dest)
    assert [t.run_id for t in back] == [t.run_id for t in ref] == [r.run_id for r in got.records]
    assert back == ref  # every field of every trajectory
    assert got.reports[0].to_dict() == rep.to_dict()
    assert (
        got.reports[1].skipped[0]["reason"] == "run folder does not exist"
        and got.reports[1].trajectories == 0
    )
    # one part per chunk (the missing run: one empty)
    assert len(part_names(dest)) == -(-rep.files_read // chunk_files) + 1
    # the staging directory became the dataset
    assert not list(tmp_path.glob(".trajectories.parquet.*"))


@pytest.mark.parametrize("chunk_files", [1, 100])
def test_a_copy_in_another_chunk_is_counted_once_as_in_process(client, root, tmp_path, chunk_files):
    """Issue 43 item 4: a run file copied into a sub-folder is read once on a cluster too, whichever chunk each
    copy falls in (the driver compares the chunks' fingerprints), with the skip in-process ingest gives."""
    run = root / SPEC.folder
    (run / "copies").mkdir()
    shutil.copy(run / "django__django-2.traj", run / "copies" / "django__django-2.traj")
    ref, rep = ingest_run(SPEC, "swebench", root)
    copies = [s for s in rep.skipped if "the same run as" in s["reason"]]
    assert (
        len(copies) == 1
    )  # the first read is kept (copies/ sorts first), the skip names both files
    assert {copies[0]["file"], copies[0]["reason"].split(" (")[0][len("the same run as ") :]} == {
        str(run / "django__django-2.traj"),
        str(run / "copies" / "django__django-2.traj"),
    }
    dest = tmp_path / "trajectories.parquet"
    got = ingest_parts(
        client, Catalog("swebench", Path("fx.toml"), [SPEC]), root, dest, chunk_files=chunk_files
    )
    got.commit(dest)
    assert read_trajectories(dest) == ref
    assert got.reports[0].to_dict() == rep.to_dict()


def test_ctrl_c_while_chunks_are_submitted_leaves_no_staging(client, root, tmp_path, monkeypatch):
    """Issue 29 item 4: a KeyboardInterrupt while the chunks are still being submitted (before any is gathered)
    cancels what was submitted and removes the staging directory; the interruption itself goes on up."""
    cat = Catalog("swebench", Path("fx.toml"), [SPEC])
    dest = tmp_path / "out" / "trajectories.parquet"
    dest.parent.mkdir()
    real, calls = client.submit, []

    def submit(*args, **kw):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kw)

    monkeypatch.setattr(client, "submit", submit)
    with pytest.raises(KeyboardInterrupt):
        ingest_parts(client, cat, root, dest, chunk_files=1)
    monkeypatch.undo()
    client.gather([])  # the client still works
    assert sorted(p.name for p in dest.parent.iterdir()) == []  # no staging, no part


def test_a_chunk_lost_on_the_cluster_is_one_cluster_error_and_no_staging(
    client, root, tmp_path, monkeypatch
):
    """Issue 29 item 4: a chunk lost with its worker (its future cancelled, as the driver sees it) ends the ingest in
    one ``ClusterError`` naming the chunk, not dask's traceback; the staging is removed."""
    from earlyeval.core.errors import ClusterError

    cat = Catalog("swebench", Path("fx.toml"), [SPEC])
    dest = tmp_path / "out" / "trajectories.parquet"
    dest.parent.mkdir()
    real = client.submit

    def submit(*args, **kw):
        fut = real(*args, **kw)
        client.cancel([fut])
        return fut

    monkeypatch.setattr(client, "submit", submit)
    with pytest.raises(
        ClusterError,
        match=r"ingest chunk \(0, \d+\) of fx-swe-agent: lost on the cluster \(FutureCancelledError",
    ):
        ingest_parts(client, cat, root, dest, chunk_files=1)
    assert list(dest.parent.iterdir()) == []


def test_a_chunk_never_re_makes_a_removed_staging_and_cleanup_outlasts_a_late_write(
    tmp_path, monkeypatch
):
    """The race behind a staging folder left after a failed ingest: a chunk still running on a worker wrote its
    part after the driver had removed the staging, and the write re-made the folder.  Now the chunk's write never
    makes a folder, and ``swap_cleanup`` removes again while a late file keeps the folder alive."""
    import earlyeval.scale.ingest as si
    from earlyeval.tables.store import write_trajectories

    gone = tmp_path / "staging-removed"
    with pytest.raises(OSError):
        write_trajectories([], gone / "part-00000-00000.parquet", parents=False)
    assert not gone.exists()  # not re-made

    staging = tmp_path / "staging"
    staging.mkdir()
    (staging / "part-a.parquet").write_bytes(b"x")
    real_rmtree, calls = shutil.rmtree, []

    def rmtree_racing_a_chunk(
        path, ignore_errors=False
    ):  # the first removal loses to a chunk's late file
        calls.append(path)
        real_rmtree(path, ignore_errors=ignore_errors)
        if len(calls) == 1:
            staging.mkdir()
            (staging / "part-late.parquet").write_bytes(b"y")

    monkeypatch.setattr(si.shutil, "rmtree", rmtree_racing_a_chunk)
    si.swap_cleanup(staging)
    assert not staging.exists() and len(calls) == 2


def _held_chunk_results(client) -> int:
    """How many chunk results the workers still hold in memory."""
    held = client.run(
        lambda dask_worker: sum(
            1 for k in dask_worker.data if str(k).startswith("earlyeval-ingest-")
        )
    )
    return sum(held.values())


def test_a_chunk_result_is_freed_on_its_worker_once_the_driver_has_it(client, root, tmp_path):
    """The workers do not keep every chunk's result until the last one is read (at 100x, 4,200 chunks): after the
    driver has read n of them, the workers hold at most the ones it has not read yet and the one it just read.
    Before the fix every result stayed held to the end (the driver's future dict kept them)."""
    cat = Catalog("swebench", Path("fx.toml"), [SPEC])
    seen: list[tuple[int, int, int]] = []

    def progress(msg: str) -> None:
        n, total = (int(x) for x in msg.split()[1].split("/"))
        for _ in range(100):  # releases reach the workers asynchronously
            held = _held_chunk_results(client)
            if held <= total - n + 1:  # + the one just read, still the loop's variable
                break
            time.sleep(0.05)
        seen.append((n, total, held))

    ingest_parts(
        client, cat, root, tmp_path / "trajectories.parquet", chunk_files=1, progress=progress
    )
    total = seen[-1][1]
    assert total >= 5 and len(seen) == total
    assert all(held <= tot - n + 1 for n, tot, held in seen), seen

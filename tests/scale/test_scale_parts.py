"""A dataset is one parquet file or a directory of parts; every reader reads either, in part order."""

from __future__ import annotations

import os

import pandas as pd
import pyarrow.parquet as pq
import pytest
from _monitor_helpers import make_runs

from earlyeval.tables.store import read_table, read_trajectories, write_trajectories


def _parts(d, runs, sizes):
    d.mkdir(parents=True)
    k = 0
    for j, n in enumerate(sizes):
        write_trajectories(runs[k : k + n], d / f"part-00000-{j:05d}.parquet")
        k += n
    return d


def test_parts_are_read_in_name_order_as_one_table(tmp_path):
    runs = make_runs(12, seed=1)
    one = write_trajectories(runs, tmp_path / "one.parquet")
    d = _parts(tmp_path / "trajectories.parquet", runs, [5, 0, 7])
    # a killed writer's temp file: not a part
    (d / ".part-00000-00009.parquet.123.x.tmp").write_bytes(b"torn")
    back = read_trajectories(d)
    assert [t.run_id for t in back] == [t.run_id for t in runs]
    assert back == read_trajectories(one)
    dask_df = pytest.importorskip("dask.dataframe")
    # the synchronous scheduler: this checks that dask reads the parts, and must not depend on dask's global
    # "scheduler" setting, which two distributed Clients closed out of order elsewhere in the suite leave set to
    # "dask.distributed" with no Client (seen once in a fresh-clone CI: "no Client active")
    for df in (
        pd.read_parquet(d),
        pq.read_table(d).to_pandas(),
        dask_df.read_parquet(str(d)).compute(scheduler="sync"),
    ):
        assert sorted(df["run_id"]) == sorted(t.run_id for t in runs)


def test_an_empty_parts_directory_is_an_empty_table(tmp_path):
    d = tmp_path / "empty.parquet"
    d.mkdir()
    assert read_trajectories(d) == [] and read_table(d).num_rows == 0


def test_a_file_and_a_parts_directory_replace_each_other_whole(tmp_path):
    runs = make_runs(6, seed=2)
    d = _parts(tmp_path / "trajectories.parquet", runs, [3, 3])
    # an in-process ingest after a cluster's: the directory is swapped for a file
    write_trajectories(runs[:2], d)
    assert d.is_file() and [t.run_id for t in read_trajectories(d)] == [t.run_id for t in runs[:2]]
    assert sorted(os.listdir(tmp_path)) == ["trajectories.parquet"]  # nothing left beside it
    write_trajectories(runs, d)  # and a file replaces a file atomically, as before
    assert len(read_trajectories(d)) == 6

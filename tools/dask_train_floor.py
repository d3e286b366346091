"""The memory floor of lightgbm.dask itself: a worker's peak RSS when DaskLGBMClassifier trains on N rows x F float32
features spread over W workers, with the shipped LightGBM settings (issue 31's 100x train target, measured on the
engine the issue names, without any earlyeval code in the fit).

`python tools/dask_train_floor.py --rows 40931,409310,4093100 --features 96 --workers 2` (1x, 10x, 100x the SWE-bench
prefix count). Each size runs on a fresh LocalCluster (one thread a worker); the rows are generated on the workers
(`dask.array.random`), so the driver never holds them. A worker's peak is its resident memory sampled every 50 ms, the largest
value; its baseline is the same before the data exist. `--real` repeats the bench's real 1x shipped-fit matrix
(labels and weights too) instead of uniform random features, as bench-scale replicates runs. Prints a table and writes
reports/<bench>/dask_train_floor.json.
"""

from __future__ import annotations

import argparse
import threading
import time
import warnings
from typing import Any

import dask
import dask.array as da
import numpy as np
import psutil
from distributed import Client, LocalCluster, wait
from lightgbm.dask import DaskLGBMClassifier

from earlyeval.config.eval_config import DEFAULT_LGBM
from earlyeval.config.workspace import reports_dir
from earlyeval.core.atomic import write_json


def _sample(box: dict[str, float], every: float) -> None:
    proc = psutil.Process()
    while True:
        box["mb"] = max(box["mb"], proc.memory_info().rss / 2**20)
        time.sleep(every)


def start_sampler(dask_worker: Any, every: float = 0.05) -> float:
    """In a worker: sample its resident memory every ``every`` s from now on, the largest value kept on the worker
    object (``ru_maxrss`` cannot be used: Linux carries the parent's peak over fork and exec, and the driver that
    spawned the workers may have held more; a module global would not do either, since this script's functions
    travel by value)."""
    box = {"mb": 0.0}
    dask_worker.earlyeval_peak = box
    threading.Thread(target=_sample, args=(box, every), daemon=True).start()
    time.sleep(2 * every)
    return box["mb"]


def peak_mb(dask_worker: Any) -> float:
    return dask_worker.earlyeval_peak["mb"]


def real_matrix(bench: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 1x shipped-fit matrix of ``bench`` (the catalog's model families over every prefix), labels, weights."""
    from earlyeval.evaluation.dataset import load_dataset
    from earlyeval.evaluation.fold_runner import FoldRunner
    from earlyeval.evaluation.settings import eval_config

    cfg = eval_config(bench)
    ds = load_dataset(bench, list(cfg.families), progress=False)
    runner = FoldRunner(ds, cfg)
    _, long_runs, rows = runner.fit_rows(frozenset())
    X, _ = runner.features([], long_runs, rows)
    pf = ds.prefixes.iloc[rows]
    return (
        np.ascontiguousarray(X, dtype=np.float32),
        pf["y"].to_numpy().astype(np.int32),
        pf["weight"].to_numpy(),
    )


def _rows_of(a: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows start..stop-1 of ``a`` repeated end to end (the k-th copy of the 1x rows, as bench-scale replicates runs)."""
    return a[np.arange(start, stop) % len(a)]


def tiled(client: Client, a: np.ndarray, n: int, chunks: int) -> da.Array:
    """``a`` repeated to ``n`` rows as a dask array whose chunks are built on the workers from one broadcast copy."""
    ref = client.scatter(a, broadcast=True, hash=False)
    return da.concatenate(
        [
            da.from_delayed(
                dask.delayed(_rows_of)(ref, s, min(n, s + chunks)),
                shape=(min(n, s + chunks) - s, *a.shape[1:]),
                dtype=a.dtype,
            )
            for s in range(0, n, chunks)
        ]
    )


def one_size(
    rows: int,
    features: int,
    workers: int,
    chunk_rows: int,
    seed: int,
    real: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=0,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        client.run(lambda: __import__("lightgbm"))
        base = client.run(start_sampler)
        # at least 4 chunks a worker, balanced below
        chunks = max(1, min(chunk_rows, -(-rows // (4 * workers))))
        if real is None:
            rng = da.random.default_rng(seed)
            X = rng.random((rows, features), dtype=np.float32, chunks=(chunks, features))
            y = (rng.random(rows, chunks=chunks) < 0.37).astype(np.int32)
            w = rng.random(rows, dtype=np.float32, chunks=chunks)
        else:
            X, y, w = (tiled(client, a, rows, chunks) for a in real)
        X, y, w = client.persist([X, y, w])
        wait([X, y, w])
        client.rebalance()
        held = client.run(
            lambda dask_worker: (
                sum(getattr(v, "nbytes", 0) for v in dask_worker.data.values()) / 2**20
            )
        )
        t0 = time.time()
        params = {k: v for k, v in DEFAULT_LGBM.items() if k != "n_jobs"}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            DaskLGBMClassifier(client=client, **params).fit(X, y, sample_weight=w)
        fit_s = time.time() - t0
        peak = client.run(peak_mb)
    return {
        "rows": rows,
        "features": features,
        "workers": workers,
        "float32_mb_per_worker": rows * features * 4 / workers / 2**20,
        "data_mb_held": sorted(held.values()),
        "baseline_mb": sorted(base.values()),
        "peak_mb": sorted(peak.values()),
        "largest_peak_mb": max(peak.values()),
        "fit_seconds": round(fit_s, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="40931,409310,4093100")
    ap.add_argument("--features", type=int, default=96)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk-rows", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--bench",
        default="swebench",
        help="where the report goes (reports/<bench>/), and with --real whose matrix",
    )
    ap.add_argument(
        "--real",
        action="store_true",
        help="the bench's real 1x shipped-fit matrix repeated --factors times, "
        "instead of uniform random features (needs `make train`'s ingest)",
    )
    ap.add_argument(
        "--factors", default="1,10,100", help="with --real: how many copies of the 1x rows"
    )
    args = ap.parse_args()
    real = real_matrix(args.bench) if args.real else None
    if real is not None:
        args.features = real[0].shape[1]
        sizes = [int(f) * len(real[0]) for f in args.factors.split(",")]
    else:
        sizes = [int(r) for r in args.rows.split(",")]
    out = []
    for k, n in enumerate(sizes, 1):
        print(
            f"[{k}/{len(sizes)}] {n:,} rows x {args.features} on {args.workers} workers", flush=True
        )
        out.append(one_size(n, args.features, args.workers, args.chunk_rows, args.seed, real))
        print(
            f"    largest worker peak {out[-1]['largest_peak_mb']:,.0f} MB (baseline {max(out[-1]['baseline_mb']):,.0f} MB), "
            f"fit {out[-1]['fit_seconds']} s",
            flush=True,
        )
    first = out[0]["largest_peak_mb"]
    print(
        "\n| rows | float32 per worker MB | worker baseline MB | largest worker peak MB | x the first size | fit s |"
    )
    print("|---|---|---|---|---|---|")
    for r in out:
        print(
            f"| {r['rows']:,} | {r['float32_mb_per_worker']:,.0f} | {max(r['baseline_mb']):,.0f} | {r['largest_peak_mb']:,.0f} | "
            f"{r['largest_peak_mb'] / first:.2f} | {r['fit_seconds']} |"
        )
    path = write_json(
        {
            "data": f"{args.bench} 1x shipped-fit matrix repeated"
            if real is not None
            else "uniform random float32",
            "sizes": out,
            "lgbm_params": DEFAULT_LGBM,
        },
        reports_dir(args.bench) / "dask_train_floor.json",
    )
    print(f"\nOutputs:\n  report       {path}")


if __name__ == "__main__":
    main()

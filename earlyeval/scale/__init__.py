"""earlyeval on a dask.distributed cluster: ``--scheduler local[:N] | tcp://HOST:PORT`` (docs/scale.md).

Without a scheduler nothing here is imported and every verb runs in one process.  With one, the stages
run the in-process code in parallel tasks: ingest by chunks of run files (``ingest``), features by
partition (``features``), LOAO and inner folds as independent tasks (``folds``), the shipped booster with
lightgbm.dask (``train``), score's replays on the workers (``replay``); ``backend`` is what the pipeline
is handed.  ``spec`` parses the option without importing dask.
"""

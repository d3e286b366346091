"""The stages behind the CLI verbs, one module per verb that fits or reads a benchmark: ingest, train, evaluate,
budget, route, learning-curve.

Each stage reads the previous stage's files and writes its own, so any stage can be re-run alone.  Paths:
``data/<bench>/`` (normalized runs), ``features/<bench>/``, ``models/<bench>/``, ``reports/<bench>/``.  The verbs
(``earlyeval.app.verbs``) parse options, call a stage and print; the stages are what Python callers use."""

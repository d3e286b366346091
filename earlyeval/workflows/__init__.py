"""Scoring folders of runs, routing, transfer, sweeps, export and benchmarks, built on the layers below."""

from earlyeval.core.extras import require

require("train", "earlyeval.workflows (score, sweep, route, transfer, export)")

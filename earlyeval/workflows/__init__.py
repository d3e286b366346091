"""Scoring folders of runs, routing, transfer, sweeps, export and benchmarks, built on the layers below."""

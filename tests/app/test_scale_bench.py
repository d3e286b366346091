"""bench-scale's arithmetic and output (no stage is run here: the benchmark itself is not a test)."""

from __future__ import annotations

import json

import pytest

from earlyeval.app.scale_measure import Point
from earlyeval.app.scale_report import extrapolate, fit_exponent, summary, write


def _pts():
    return [
        Point("ingest", "in-process", 1, 100, seconds=10.0, cpu_seconds=10.0, peak_total_mb=500),
        Point(
            "ingest", "in-process", 10, 1000, seconds=100.0, cpu_seconds=100.0, peak_total_mb=5000
        ),
        Point(
            "ingest",
            "local:2",
            1,
            100,
            seconds=8.0,
            cpu_seconds=14.0,
            driver_cpu=2.0,
            worker_cpu=12.0,
            peak_worker_mb=300,
        ),
        Point(
            "ingest",
            "local:2",
            10,
            1000,
            seconds=50.0,
            cpu_seconds=95.0,
            driver_cpu=5.0,
            worker_cpu=90.0,
            peak_worker_mb=310,
        ),
        Point(
            "ingest",
            "local:2",
            100,
            10000,
            seconds=600.0,
            status="partial",
            peak_worker_mb=320,
            note="stopped",
        ),
        Point(
            "ingest",
            "in-process",
            100,
            10000,
            seconds=1000.0,
            status="not run",
            note="predicted 50.0 GB",
        ),
    ]


def test_the_exponent_and_the_extrapolation():
    pts = _pts()
    assert fit_exponent(pts[:2]) == pytest.approx(1.0)
    assert extrapolate(pts[:2], 10000) == pytest.approx(1000.0)
    # a partial point counts (its full time at its rate)
    assert fit_exponent(pts[2:5]) == pytest.approx(0.9, abs=0.05)
    assert fit_exponent(pts[5:]) is None  # not run: never fitted


def test_the_summary_states_ratio_projection_and_worker_memory(tmp_path):
    text = "\n".join(summary(_pts()))
    assert "ingest       10x  2.00" in text  # in-process / cluster, side by side
    assert "16 workers ~11 s (driver 5 s + workers 90 s / 16)" in text
    assert "per-worker peak memory at 100x" in text and "320 MB (partial)" in text
    assert "not run: predicted 50.0 GB" in text
    out = write(_pts(), tmp_path)
    assert json.loads(out["json"].read_text())[4]["status"] == "partial"
    assert out["plot"].stat().st_size > 1000 and out["table"].read_text().startswith("stage")


def test_every_stage_of_the_first_factor_counts_the_runs_its_ingest_read(tmp_path, monkeypatch):
    """The runs of 1x are known only once its ingest has read them: the featurize points of 1x carry them too,
    so their exponent is fitted (it was missing: 1x featurize had runs=None and k came out '-')."""
    import earlyeval.app.scale_bench as sb
    import earlyeval.scale.resample as resample

    monkeypatch.setattr(resample, "replicate", lambda bench, src, root, ws, n: None)

    def fake_measure(stage, bench, ws, data, mode, factor, runs, timeout=None):
        if stage == "ingest":
            (ws / "reports" / bench).mkdir(parents=True, exist_ok=True)
            (ws / "reports" / bench / "ingest.json").write_text(
                json.dumps({"totals": {"trajectories": 7 * factor}})
            )
        return Point(stage, mode, factor, runs, seconds=float(factor), cpu_seconds=float(factor))

    monkeypatch.setattr(sb, "measure", fake_measure)
    pts = sb.bench_scale(
        "swebench",
        factors=(1, 10),
        stages=("ingest", "featurize"),
        tmp=tmp_path,
        say=lambda s: None,
    )
    assert [(p.stage, p.factor, p.runs) for p in pts if p.mode == "in-process"] == [
        ("ingest", 1, 7),
        ("featurize", 1, 7),
        ("ingest", 10, 70),
        ("featurize", 10, 70),
    ]
    assert fit_exponent(
        [p for p in pts if p.stage == "featurize" and p.mode == "in-process"]
    ) == pytest.approx(1.0)

"""Every bad input of `earlyeval score` and its exit code, in one table: 2 and one line on stderr (no
traceback, nothing written) for what the user must fix; 0 with a warning for what only needs saying."""

from __future__ import annotations

import json
import shutil

import _paths
import pytest
from _monitor_helpers import make_runs, make_tasks, quantile_thresholds, train_bundle
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.config import workspace
from earlyeval.model.modeldir import save_model_dir
from earlyeval.workflows.export import export_runs

FIXTURES = _paths.FIXTURES


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    base = tmp_path_factory.mktemp("exit-codes")
    tasks = make_tasks(12)
    bundle, _, _ = train_bundle(
        make_runs(60, seed=0), tasks, families=("behaviour", "gold", "prior")
    )
    runs = make_runs(24, seed=11, agents=("agent-a",))
    bundle.thresholds = quantile_thresholds(bundle, runs, tasks, min_halt_step=1)
    model = save_model_dir(bundle, base / "model")
    bundle.training = {**bundle.training, "benchmarks": ["tau2"]}
    tau2_model = save_model_dir(bundle, base / "tau2-model")
    export_runs(runs, base / "runs", fmt="atif")
    (base / "empty").mkdir()
    (base / "notes").mkdir()
    (base / "notes" / "readme.txt").write_text("not a run")
    (base / "not-a-model").mkdir()
    tampered = base / "tampered"
    shutil.copytree(model, tampered)
    mf = json.loads((tampered / "manifest.json").read_text())
    mf["thresholds"]["success"] = 0.5
    (tampered / "manifest.json").write_text(json.dumps(mf))
    other = base / "other-scoring"
    other.mkdir()
    (other / "score.json").write_text(
        json.dumps({"runs_path": "/somewhere/else", "format": "atif"})
    )
    return {"base": base, "model": model, "tau2": tau2_model, "tasks": tasks}


# (case, arguments with {base}/{model}/{tau2} placeholders, exit code, what stderr's one line says)
CASES = [
    ("no --model", ["--runs", "{base}/runs"], 2, "Missing option '--model'"),
    (
        "--model is no folder",
        ["-m", "{base}/nope", "--runs", "{base}/runs"],
        2,
        "not a model directory",
    ),
    (
        "--model is a folder but no model",
        ["-m", "{base}/not-a-model", "--runs", "{base}/runs"],
        2,
        "manifest.json",
    ),
    (
        "--model tampered with",
        ["-m", "{base}/tampered", "--runs", "{base}/runs"],
        2,
        "manifest edited",
    ),
    ("no --runs", ["-m", "{model}"], 2, "Missing option '--runs'"),
    (
        "--runs does not exist",
        ["-m", "{model}", "--runs", "{base}/nope"],
        2,
        "no such file or folder",
    ),
    (
        "unknown --format",
        ["-m", "{model}", "--runs", "{base}/runs", "-f", "nope"],
        2,
        "unknown format 'nope'",
    ),
    (
        "--format auto, no format reads the files",
        ["-m", "{model}", "--runs", "{base}/notes"],
        2,
        "no known format reads",
    ),
    (
        "--format that reads no run",
        ["-m", "{model}", "--runs", "{base}/runs", "-f", "tau2"],
        2,
        "no runs read",
    ),
    (
        "empty folder",
        ["-m", "{model}", "--runs", "{base}/empty", "-f", "atif"],
        2,
        "no file matches",
    ),
    (
        "unknown --labels format",
        ["-m", "{model}", "--runs", "{base}/runs", "--labels", "sbcli:*.json"],
        2,
        "unknown label format",
    ),
    (
        "--labels without a glob",
        ["-m", "{model}", "--runs", "{base}/runs", "--labels", "sb-cli"],
        2,
        "FORMAT:GLOB",
    ),
    (
        "--labels with an absolute glob",
        ["-m", "{model}", "--runs", "{base}/runs", "--labels", "sb-cli:/etc/*"],
        2,
        "relative to --runs",
    ),
    (
        "--labels with a glob out of --runs",
        ["-m", "{model}", "--runs", "{base}/runs", "--labels", "sb-cli:../*.json"],
        2,
        "relative to --runs",
    ),
    (
        "--as-of not a date",
        ["-m", "{model}", "--runs", "{base}/runs", "--as-of", "last week"],
        2,
        "is not a YYYY-MM-DD date",
    ),
    (
        "--thresholds out of range",
        ["-m", "{model}", "--runs", "{base}/runs", "--thresholds", "0.4,0.9"],
        2,
        "Invalid value",
    ),
    (
        "--what-if-grid out of range",
        ["-m", "{model}", "--runs", "{base}/runs", "--what-if-grid", "0.2"],
        2,
        "Invalid value",
    ),
    (
        "--warm-start K > labelled runs",
        ["-m", "{model}", "--runs", "{base}/runs", "--warm-start", "99"],
        2,
        "only 24 labelled",
    ),
    (
        "--data-root does not exist",
        ["-m", "{model}", "--runs", "{base}/runs", "--data-root", "{base}/nope"],
        2,
        "no such folder",
    ),
    (
        "--out holds another scoring",
        ["-m", "{model}", "--runs", "{base}/runs", "--out", "{base}/other-scoring"],
        2,
        "--force",
    ),
    (
        "a model of another benchmark",
        ["-m", "{tau2}", "--runs", "{fixtures}/swe-agent-traj"],
        2,
        "trained on tau2",
    ),
    # not errors: said, and scored
    (
        "--out holds another scoring, --force",
        ["-m", "{model}", "--runs", "{base}/runs", "--out", "{base}/other-scoring", "--force"],
        0,
        "",
    ),
    (
        "another benchmark, --cross-bench",
        [
            "-m",
            "{tau2}",
            "--runs",
            "{fixtures}/swe-agent-traj",
            "--cross-bench",
            "--out",
            "{base}/x",
        ],
        0,
        "cross-bench",
    ),
    (
        "undated runs (today's pool)",
        ["-m", "{model}", "--runs", "{base}/runs", "--out", "{base}/y"],
        0,
        "carry no date",
    ),
]


@pytest.mark.parametrize("case,args,code,says", CASES, ids=[c[0] for c in CASES])
def test_exit_code(env, case, args, code, says, monkeypatch):
    from earlyeval.workflows import score as score_mod

    real = score_mod.score_runs
    monkeypatch.setattr(
        score_mod, "score_runs", lambda *a, **k: real(*a, **k, tasks=env["tasks"], progress=False)
    )
    sub = {
        "{base}": str(env["base"]),
        "{model}": str(env["model"]),
        "{tau2}": str(env["tau2"]),
        "{fixtures}": str(FIXTURES),
    }
    argv = [a for x in args for a in [_sub(x, sub)]]
    before = (env["base"] / "other-scoring" / "score.json").read_bytes()
    try:
        r = CliRunner().invoke(app, ["--workspace", str(env["base"] / "ws"), "score", *argv])
    finally:
        workspace.set_workspace(None)
    assert r.exit_code == code, (case, r.output)
    assert (
        "Traceback" not in r.output and r.exception is None or isinstance(r.exception, SystemExit)
    ), case
    if code == 2:
        err = [ln for ln in r.stderr.splitlines() if ln.strip()]
        # click's own usage errors: Usage, hint, Error line
        usage = any(ln.startswith("Usage:") for ln in err)
        assert usage or len(err) == 1, (case, r.stderr)
        assert says in r.stderr, (case, r.stderr)
        if "--force" not in argv:
            assert (
                env["base"] / "other-scoring" / "score.json"
            ).read_bytes() == before  # nothing overwritten
    else:
        assert says in r.output, (case, r.output)


def _sub(x: str, sub: dict[str, str]) -> str:
    for k, v in sub.items():
        x = x.replace(k, v)
    return x

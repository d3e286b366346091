"""`earlyeval score` on real runs copied out of the shared data (integration: ../shared/data).

* a copied training folder, renamed and half un-gzipped, is flagged by content: the fingerprints recorded
  from the ingested parquet (what `earlyeval train` reads) equal those of a fresh read of the copy;
* with the shipped model (when `earlyeval train --bench swebench` has run), the same copy is flagged;
* old runs whose files carry no date warn without --as-of; mini-swe-agent runs are dated by their files;
* every SWE-bench format of the catalog is recognised by --format auto on a copy outside the data root.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from _monitor_helpers import make_runs, make_tasks, train_bundle

from earlyeval.app.stages.train import training_identity
from earlyeval.config.catalog import data_root, load_catalog
from earlyeval.config.workspace import models_dir
from earlyeval.ingest import ingest_run
from earlyeval.model.modeldir import save_model_dir
from earlyeval.model.overlap import content_record, fingerprint
from earlyeval.tables.store import read_trajectories, write_trajectories
from earlyeval.workflows.score import score_runs
from earlyeval.workflows.score_checks import detect_format
from earlyeval.workflows.score_options import ScoreOptions

pytestmark = pytest.mark.integration

LIVE = "verified__live-swe-agent__mini-v1.14.2__gpt-5-mini__mas-evaluation"  # 15 real mini-swe-agent runs
SWE = "lite__swe-agent__gpt4"  # SWE-agent 0.x: no timestamp in its .traj files


def _spec(name: str):
    spec = load_catalog("swebench").run(name)
    if not (data_root() / spec.folder).exists():
        pytest.skip(f"real data absent: {data_root() / spec.folder}")
    return spec


def _copy(src: Path, dst: Path, gunzip_every: int = 2, keep: int | None = None) -> Path:
    """A copy of a run folder under another name; every other .gz file un-gzipped (`x.json.gz` -> `x.json`)."""
    files = sorted(p for p in src.rglob("*") if p.is_file())
    if keep is not None:
        trajs = [p for p in files if ".traj" in p.name][:keep]
        files = [p for p in files if ".traj" not in p.name] + trajs
    for k, p in enumerate(files):
        out = dst / p.relative_to(src)
        out.parent.mkdir(parents=True, exist_ok=True)
        if p.suffix == ".gz" and k % gunzip_every == 0:
            out.with_suffix("").write_bytes(gzip.decompress(p.read_bytes()))
        else:
            shutil.copyfile(p, out)
    return dst


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    spec = _spec(LIVE)
    base = tmp_path_factory.mktemp("real-copies")
    trajs, _ = ingest_run(spec, "swebench", data_root())
    # what train reads
    stored = read_trajectories(write_trajectories(trajs, base / "trajectories.parquet"))
    return {
        "spec": spec,
        "base": base,
        "trajs": stored,
        "copy": _copy(data_root() / spec.folder, base / "my-new-agent-runs"),
    }


def test_fingerprints_survive_the_parquet_round_trip_and_a_copy(live):
    from earlyeval.workflows.score import read_runs, run_specs

    fresh, _, _ = read_runs(run_specs(live["copy"], "mini-swe-agent-v1"))
    assert len(fresh) == len(live["trajs"]) == 15
    # the copy really mixes plain and gzipped
    assert any(Path(t.meta["source_file"]).suffix != ".gz" for t in fresh)
    assert {fingerprint(t) for t in fresh} == {fingerprint(t) for t in live["trajs"]}
    assert {t.meta["run_date"] for t in fresh} == {"2025-10-30", "2025-10-31"} and {
        t.meta["native_model"] for t in fresh
    } == {"tensorblock/gpt-5-mini"}


def test_a_copied_training_folder_is_flagged_by_content(live, tmp_path):
    tasks = make_tasks(12)
    bundle, _, _ = train_bundle(make_runs(60, seed=0), tasks, families=("behaviour",))
    t = live["trajs"]
    formats = {live["spec"].name: live["spec"].format}
    bundle = dataclasses.replace(
        bundle,
        training={
            "benchmarks": ["swebench"],
            "agents": dict(Counter(x.agent for x in t)),
            "agent_identity": training_identity(t),
            "run_ids": sorted(x.run_id for x in t),
            "content": content_record(t, formats),
        },
    )
    mdir = save_model_dir(bundle, tmp_path / "model")
    rep = json.loads(
        score_runs(
            mdir, live["copy"], ScoreOptions("auto", out=tmp_path / "o"), tasks={}, progress=False
        )["score"].read_text()
    )
    hit = rep["training_overlap"]["agents"]["my-new-agent-runs"]
    assert rep["format"] == "mini-swe-agent-v1" and rep["format_detected"]
    # neither its name nor its run ids give it away
    assert hit["runs_in_training"] == 15 and hit["run_ids_in_training"] == 0
    assert set(hit["by"]) == {"content", "scaffold x model in the files"} and hit[
        "training_agents"
    ] == ["live-swe-agent__gpt-5-mini"]
    assert rep["as_of_detail"]["runs_dated_by"] == {"catalog": 0, "files": 15, "none": 0}


def test_the_shipped_model_flags_the_copy(live, tmp_path):
    mdir = models_dir("swebench")
    mf = mdir / "manifest.json"
    if not mf.exists() or "content" not in json.loads(mf.read_text()).get("training", {}):
        pytest.skip(
            "no shipped model with training.content (run `earlyeval train --bench swebench`)"
        )
    rep = json.loads(
        score_runs(mdir, live["copy"], ScoreOptions("auto", out=tmp_path / "o"), progress=False)[
            "score"
        ].read_text()
    )
    hit = rep["training_overlap"]["agents"]["my-new-agent-runs"]
    assert hit["runs_in_training"] == 15 and "content" in hit["by"]
    assert rep["bench_check"]["match"] is True and rep["as_of_detail"]["warning"] is None


def test_old_runs_without_a_date_warn(tmp_path):
    spec = _spec(SWE)
    runs = _copy(data_root() / spec.folder, tmp_path / "sweagent-copy", keep=12)
    tasks = make_tasks(12)
    bundle, _, _ = train_bundle(make_runs(60, seed=0), tasks, families=("behaviour", "prior"))
    mdir = save_model_dir(bundle, tmp_path / "model")
    rep = json.loads(
        score_runs(mdir, runs, ScoreOptions("auto", out=tmp_path / "o"), tasks={}, progress=False)[
            "score"
        ].read_text()
    )
    assert rep["format"] == "swe-agent-traj" and rep["n_trajectories"] == 12
    assert rep["as_of_detail"]["runs_dated_by"]["none"] == 12
    assert (
        "12 of 12 runs carry no date (the swe-agent-traj files record none"
        in rep["as_of_detail"]["warning"]
    )


@pytest.mark.parametrize("name", [r.name for r in load_catalog("swebench").runs])
def test_format_auto_on_every_catalog_format_outside_the_data_root(name, tmp_path):
    spec = _spec(name)
    src = data_root() / spec.folder
    link = tmp_path / f"copy-of-{Path(spec.folder).name}"
    link.symlink_to(src, target_is_directory=True)  # another path: no catalog entry describes it
    assert detect_format(link, []) == spec.format

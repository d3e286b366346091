"""bench-scale's larger benchmarks: N replicated copies of every run, new names and run ids, the real files."""

from __future__ import annotations

import tomllib

from earlyeval.config.catalog import catalog_path, load_catalog
from earlyeval.config.workspace import set_workspace
from earlyeval.scale.resample import replicate, to_toml


def test_a_catalog_round_trips_through_the_writer():
    raw = tomllib.loads(catalog_path("swebench").read_text())
    assert tomllib.loads(to_toml(raw)) == raw
    tau = tomllib.loads(catalog_path("tau2").read_text())
    assert tomllib.loads(to_toml(tau)) == tau


def test_copies_of_every_run_under_new_names(tmp_path):
    src = tmp_path / "real"
    orig = load_catalog("swebench")
    for r in orig.runs:  # a stand-in data root: the folders exist, empty
        (src / r.folder).mkdir(parents=True)
    for e in [*orig.tasks, orig.priors]:
        (src / e["path"]).parent.mkdir(parents=True, exist_ok=True)
        (src / e["path"]).write_text("x")
    path = replicate("swebench", src, tmp_path / "data", tmp_path / "ws", 3)
    try:
        set_workspace(tmp_path / "ws")
        cat = load_catalog("swebench")
        assert cat.path == path
        assert len(cat.runs) == 3 * len(orig.runs) and len({r.name for r in cat.runs}) == len(
            cat.runs
        )
        for i, r in enumerate(orig.runs):
            for k in range(3):
                c = cat.runs[3 * i + k]
                assert (
                    c.name == f"{r.name}~c{k:03d}"
                    and c.agent == r.agent
                    and c.date == r.date
                    and c.labels == r.labels
                )
                link = tmp_path / "data" / c.folder
                assert link.is_symlink() and link.resolve() == (src / r.folder).resolve()
        assert (cat.settings, cat.families, cat.tasks, cat.priors) == (
            orig.settings,
            orig.families,
            orig.tasks,
            orig.priors,
        )
        assert all(
            (tmp_path / "data" / e["path"]).resolve() == (src / e["path"]).resolve()
            for e in cat.tasks
        )
    finally:
        set_workspace(None)

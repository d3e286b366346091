"""The workspace decides where outputs go; packaged catalogs are found from anywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

import earlyeval
from earlyeval.config import workspace
from earlyeval.config.catalog import available_benches, catalog_path, load_catalog
from earlyeval.core.errors import CatalogError


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv("EARLYEVAL_HOME", raising=False)
    monkeypatch.delenv("EARLYEVAL_DATA", raising=False)
    workspace.set_workspace(None)
    yield
    workspace.set_workspace(None)


def test_default_is_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert workspace.workspace_root() == tmp_path.resolve()
    assert workspace.models_dir("swebench") == tmp_path.resolve() / "models" / "swebench"
    assert workspace.data_dir("tau2") == tmp_path.resolve() / "data" / "tau2"
    assert workspace.features_dir("tau2") == tmp_path.resolve() / "features" / "tau2"
    assert workspace.data_root() == tmp_path.resolve().parent / "shared" / "data"


def test_env_then_explicit_take_precedence(tmp_path, monkeypatch):
    home, pinned = tmp_path / "home", tmp_path / "pinned"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EARLYEVAL_HOME", str(home))
    assert workspace.workspace_root() == home.resolve()
    workspace.set_workspace(pinned)
    assert workspace.workspace_root() == pinned.resolve()
    d = workspace.reports_dir("swebench")
    assert d == pinned.resolve() / "reports" / "swebench" and d.is_dir()
    monkeypatch.setenv("EARLYEVAL_DATA", str(tmp_path / "runs"))
    assert workspace.data_root() == (tmp_path / "runs").resolve()
    assert workspace.data_root(tmp_path / "other") == (tmp_path / "other").resolve()


def test_packaged_catalogs_load_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    benches = available_benches()
    assert {"swebench", "tau2", "toolathlon", "terminalbench"} <= set(benches)
    # package data, wherever workspace.py lives
    pkg = Path(earlyeval.__file__).resolve().parent / "catalogs"
    assert catalog_path("swebench") == pkg / "swebench.toml"
    assert load_catalog("swebench").bench == "swebench"


def test_a_workspace_catalog_adds_and_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "mybench.toml").write_text('bench = "mybench"\n')
    (tmp_path / "data" / "tau2.toml").write_text('bench = "tau2-local"\n')
    assert load_catalog("mybench").bench == "mybench"
    # the workspace's file wins over the packaged one
    assert load_catalog("tau2").bench == "tau2-local"
    assert load_catalog("swebench").bench == "swebench"


@pytest.mark.parametrize("bad", ["nosuchbench", "../..", "a/b", ".hidden", ""])
def test_unknown_or_path_like_bench_is_a_named_error_listing_the_available_ones(bad):
    with pytest.raises(CatalogError) as e:
        catalog_path(bad)
    assert "swebench" in str(e.value) and "tau2" in str(e.value)


def test_cli_workspace_option_pins_the_workspace(tmp_path):
    from typer.testing import CliRunner

    from earlyeval.app.cli import app

    res = CliRunner().invoke(app, ["--workspace", str(tmp_path / "ws"), "formats"])
    assert res.exit_code == 0, res.output
    assert workspace.workspace_root() == (tmp_path / "ws").resolve()
    assert "swe-agent" in res.output or "atif" in res.output


def test_the_default_data_root_through_a_symlinked_shared_folder_is_resolved(tmp_path, monkeypatch):
    """A clone beside a symlinked ../shared (how a fresh clone is often set up): the default data root is the
    resolved path, as --data-root and $EARLYEVAL_DATA are, so that every reader (an in-process ingest, a
    cluster's chunks) names a run's files by one path (issue 29: the killed-worker ingest test failed on such a
    clone, its re-read trajectories carrying the other spelling of source_file)."""
    real = tmp_path / "elsewhere" / "shared"
    (real / "data").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    (tmp_path / "shared").symlink_to(real, target_is_directory=True)
    monkeypatch.delenv("EARLYEVAL_DATA", raising=False)
    workspace.set_workspace(tmp_path / "ws")
    try:
        assert workspace.data_root() == (real / "data").resolve()
        assert (
            workspace.data_root()
            == workspace.data_root(tmp_path / "shared" / "data")
            == workspace.data_root(str(workspace.data_root()))
        )
    finally:
        workspace.set_workspace(None)

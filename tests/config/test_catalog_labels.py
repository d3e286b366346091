"""Catalog label entries (issue 42): a label format is checked when the catalog loads, so a misspelt one is an
error naming its key (rc 2 from the CLI), never a run silently left unlabelled."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.config.catalog import load_catalog
from earlyeval.config.file_schemas import LABEL_FORMATS
from earlyeval.core.errors import CatalogError
from earlyeval.ingest.labels import READERS

CATALOG = """bench = "mine"
families = ["behaviour"]

[[runs]]
folder = "a"
agent = "agent-a"
format = "mini-swe-agent-v1"
labels = [{{ format = "{fmt}", path = "results.json" }}]
"""


def test_the_schema_knows_exactly_the_label_readers():
    assert set(LABEL_FORMATS) == {"inline", *READERS}


def test_every_known_label_format_loads(tmp_path):
    for fmt in LABEL_FORMATS:
        p = tmp_path / f"{fmt}.toml"
        p.write_text(CATALOG.format(fmt=fmt))
        assert load_catalog(p).runs[0].labels[0].format == fmt


def test_a_misspelt_label_format_is_an_error_naming_the_key(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text(CATALOG.format(fmt="harness-list"))
    with pytest.raises(CatalogError) as e:
        load_catalog(p)
    assert e.value.field == "runs[0].labels[0].format" and "harness-lists" in e.value.reason


def test_the_cli_exits_2_naming_the_key(tmp_path):
    ws = tmp_path / "ws"
    (ws / "data").mkdir(parents=True)
    (ws / "data" / "mine.toml").write_text(CATALOG.format(fmt="sb_cli"))
    r = CliRunner().invoke(
        app, ["--workspace", str(ws), "ingest", "--bench", "mine", "--data-root", str(tmp_path)]
    )
    assert r.exit_code == 2, r.output
    assert "runs[0].labels[0].format" in r.stderr and "'sb_cli' is not one of" in r.stderr
    assert "Traceback" not in r.output

"""The readers of issue 22 without their frameworks: ``earlyeval formats`` lists them with a description, and
``inspect-eval`` without inspect_ai installed skips each file with a reason naming the extra (runs anywhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.config.catalog import LabelSpec, RunSpec
from earlyeval.core.errors import IngestError
from earlyeval.ingest import inspect_eval


def test_earlyeval_formats_lists_the_new_readers_with_a_description():
    r = CliRunner().invoke(app, ["formats", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["inspect-eval"].startswith("inspect_ai evaluation logs")
    assert d["openhands-conversation"].startswith("OpenHands Software Agent SDK (V1) conversations")
    r = CliRunner().invoke(app, ["formats"])
    assert any(ln.startswith("inspect-eval ") for ln in r.output.splitlines())


def test_inspect_eval_without_inspect_installed_is_a_named_skip(tmp_path, monkeypatch):
    monkeypatch.setattr(inspect_eval, "read_eval_log", None)
    (tmp_path / "x.eval").write_bytes(b"PK")
    spec = RunSpec(
        name="r",
        folder=str(tmp_path),
        agent="a",
        scaffold="a",
        model="",
        format="inspect-eval",
        glob="*.eval",
        labels=[LabelSpec("inline", "")],
    )
    with pytest.raises(IngestError) as e:
        list(inspect_eval.parse(Path(tmp_path / "x.eval"), spec, "b"))
    assert e.value.field == "<file>" and 'pip install -e ".[inspect]"' in e.value.reason

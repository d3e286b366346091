"""--scheduler / $EARLYEVAL_SCHEDULER: the forms it takes, and that it is checked without dask."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from earlyeval.app.cli import app
from earlyeval.scale.spec import SCHEDULER_ENV, SchedulerSpec, parse_scheduler, scheduler_from_env


@pytest.mark.parametrize("value", [None, "", "none", "in-process", "  NONE "])
def test_no_scheduler_means_in_process(value):
    assert parse_scheduler(value) is None


def test_local_and_addresses():
    assert parse_scheduler("local") == SchedulerSpec("local", workers=0)
    assert parse_scheduler("local:2") == SchedulerSpec("local", workers=2)
    assert parse_scheduler("tcp://10.0.0.5:8786") == SchedulerSpec(
        "address", address="tcp://10.0.0.5:8786"
    )
    assert parse_scheduler("tls://sched.example:8786/").address == "tls://sched.example:8786"
    assert str(parse_scheduler("local:3")) == "local:3" and str(parse_scheduler("local")) == "local"


@pytest.mark.parametrize(
    "value", ["local:0", "local:x", "remote", "tcp://host", "http://host:8786", "local:2:3"]
)
def test_anything_else_is_an_error_naming_the_forms(value):
    with pytest.raises(ValueError, match="local:N"):
        parse_scheduler(value)


def test_the_environment_variable(monkeypatch):
    monkeypatch.delenv(SCHEDULER_ENV, raising=False)
    assert scheduler_from_env() is None
    monkeypatch.setenv(SCHEDULER_ENV, "local:4")
    assert scheduler_from_env() == SchedulerSpec("local", workers=4)


@pytest.mark.parametrize("verb", ["ingest", "train", "evaluate"])
def test_a_bad_scheduler_is_a_one_line_usage_error(verb, monkeypatch):
    r = CliRunner().invoke(app, [verb, "--bench", "swebench", "--scheduler", "bogus"])
    assert r.exit_code == 2, r.output
    assert "--scheduler" in r.output and "local:N" in r.output and "Traceback" not in r.output
    monkeypatch.setenv(SCHEDULER_ENV, "tcp://nowhere")  # the variable is checked the same way
    r = CliRunner().invoke(app, [verb, "--bench", "swebench"])
    assert r.exit_code == 2 and "local:N" in r.output, r.output


def test_score_takes_it_too():
    r = CliRunner().invoke(app, ["score", "--help"])
    assert r.exit_code == 0 and "--scheduler" in r.output and "EARLYEVAL_SCHEDULER" in r.output

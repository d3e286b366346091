"""The ``earlyeval`` config block every framework adapter reads (earlyeval/integrations/config.py)."""

from __future__ import annotations

import json

import pytest
from _monitor_helpers import make_runs, make_tasks, train_bundle

from earlyeval.integrations.config import TASK, ConfigError, monitor_from_config, split_config
from earlyeval.model.modeldir import save_model_dir

TH = {"success": 0.8, "failure": 0.85, "min_halt_step": 2}


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "m"
    bundle, _, _ = train_bundle(
        make_runs(40, 0), make_tasks(12), families=("behaviour",), thresholds=dict(TH)
    )
    save_model_dir(bundle, path)
    return path


def test_each_run_gets_its_own_monitor_on_one_loaded_model(model_dir):
    a = monitor_from_config({"model": str(model_dir)})
    b = monitor_from_config({"model": str(model_dir)})
    assert a is not b and a.bundle is b.bundle  # spawned from one cached load
    assert a.thresholds == TH


def test_split_config_names_the_bad_key():
    with pytest.raises(ConfigError, match=r"agent.earlyeval: unknown key\(s\) \['modle'\]"):
        split_config({"modle": "x"}, {"task": TASK}, "agent.earlyeval")
    with pytest.raises(ConfigError, match=r"agent.earlyeval.model: missing"):
        split_config({"task": "t"}, {"task": TASK}, "agent.earlyeval")
    with pytest.raises(ConfigError, match="no earlyeval config"):
        split_config(None, {}, "agent.earlyeval")
    mon, rest = split_config({"model": "m", "tasks": None, "task": "t"}, {"task": TASK}, "x")
    assert mon.block() == {"model": "m"} and rest == {"task": "t"}


def test_missing_model_dir_is_an_error_naming_it(tmp_path):
    with pytest.raises(Exception, match="nope"):
        monitor_from_config({"model": str(tmp_path / "nope")})


def test_thresholds_override(model_dir, tmp_path):
    """A table, a pair, "TS,TF" or a JSON file of the table: the run halts with it, never silently with the
    model's own; a bad key, in the block or in the file, is a ConfigError naming it."""
    override = {"success": 0.95, "failure": 0.97, "min_halt_step": 3}
    f = tmp_path / "th.json"
    f.write_text(json.dumps(override))
    for given in (override, str(f)):
        assert (
            monitor_from_config({"model": str(model_dir), "thresholds": given}).thresholds
            == override
        )
    for given in ([0.95, 0.97], "0.95,0.97"):
        got = monitor_from_config({"model": str(model_dir), "thresholds": given}).thresholds
        assert got == {**TH, "success": 0.95, "failure": 0.97}
    with pytest.raises(ConfigError, match=r"thresholds\.sucess: unknown key"):
        monitor_from_config({"model": str(model_dir), "thresholds": {"sucess": 0.9}})
    f.write_text(json.dumps({"sucess": 0.9}))
    with pytest.raises(ConfigError, match=r"earlyeval\.thresholds\.sucess: unknown key"):
        monitor_from_config({"model": str(model_dir), "thresholds": str(f)})


def test_config_schema_halt_on_is_the_policy_halt_on():
    """The adapter block's schema (config layer, below model) spells HALT_ON out: the two stay equal, and a
    bad value is a ConfigError naming the key."""
    from earlyeval.config.monitor_config import ADAPTER
    from earlyeval.model.policy import HALT_ON

    assert tuple(ADAPTER.fields["halt_on"].choices) == tuple(HALT_ON)
    with pytest.raises(ConfigError, match="halt_on"):
        split_config({"model": "m", "halt_on": "sometimes"}, {}, "earlyeval")

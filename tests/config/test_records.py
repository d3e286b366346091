"""One typed record per job (issue 30 item 3): each constraint beside its field, checked when the record is made,
and the catalog, the CLI, an adapter block and a Python caller meeting the same check and naming the same key."""

from __future__ import annotations

import dataclasses
import re

import pytest

from earlyeval.config.budget_config import BudgetConfig
from earlyeval.config.catalog import load_catalog
from earlyeval.config.eval_config import SETTINGS, EvalConfig
from earlyeval.config.monitor_config import ADAPTER, MONITOR_KEYS, MonitorConfig, PassConfig
from earlyeval.config.schema import Bool
from earlyeval.core.errors import CatalogError, SettingError
from earlyeval.evaluation.settings import eval_config
from earlyeval.integrations.config import TASK, ConfigError, split_config

CATALOG = """bench = "rec"
families = ["behaviour"]
[settings]
min_steps = 2
{settings}
[[runs]]
folder = "f"
agent = "a"
format = "tau2"
"""


def _catalog(tmp_path, settings: str):
    p = tmp_path / "rec.toml"
    p.write_text(CATALOG.format(settings=settings))
    return load_catalog(p)


@pytest.mark.parametrize("record", [EvalConfig, BudgetConfig, MonitorConfig, PassConfig])
def test_every_field_declares_its_check(record):
    for f in dataclasses.fields(record):
        assert f.metadata.get("check") is not None, (
            f"{record.__name__}.{f.name} has no check beside it"
        )


def test_the_file_schemas_are_the_records_own_checks():
    """Written once: the catalog's [settings] schema and the adapter block's schema hold the very validators the
    records declare (no second copy to drift)."""
    by_key = {f.metadata.get("key") or f.name: f for f in dataclasses.fields(EvalConfig)}
    assert set(SETTINGS.fields) == {
        "model_families",
        "min_steps",
        "holdout_min_runs",
        "target_accuracy",
        "constraint",
        "confidence",
        "inner_holdout",
        "threshold_rule",
        "risk_alpha",
        "risk_delta",
        "risk",
        "prior_guard",
        "twin",
        "monotone",
        "peer_prior",
        "success_risk",
        "success_alpha",
        "success_evidence",
        "task_skips",
        "live_risk",
        "live_alpha",
    }
    for k, v in SETTINGS.fields.items():
        assert v is by_key[k].metadata["check"]
    assert set(ADAPTER.fields) == set(MONITOR_KEYS)
    assert ADAPTER.fields["halt_on"] is dataclasses.fields(MonitorConfig)[3].metadata["check"]


@pytest.mark.parametrize(
    "key, value, toml",
    [
        ("target_accuracy", 0.4, "target_accuracy = 0.4"),
        ("min_steps", 0, "min_steps = 0"),
        ("constraint", "precision", 'constraint = "precision"'),
        ("confidence", 1.0, "confidence = 1.0"),
    ],
)
def test_one_bad_value_one_message_from_a_catalog_the_cli_and_python(tmp_path, key, value, toml):
    p = tmp_path / "rec.toml"
    p.write_text(CATALOG.format(settings=toml).replace("min_steps = 2\n", ""))
    with pytest.raises(CatalogError) as from_file:
        load_catalog(p)
    with pytest.raises(SettingError) as from_python:
        EvalConfig(**{key: value})
    with pytest.raises(SettingError) as from_override:
        eval_config("swebench", **{key: value})
    assert f"settings.{key}" in str(from_file.value)
    assert from_python.value.key == from_override.value.key == key
    assert from_python.value.reason == from_override.value.reason
    assert from_python.value.reason in str(from_file.value)


def test_the_cli_names_its_option(tmp_path):
    from earlyeval.app.cli_support import cli_eval_config

    with pytest.raises(
        SettingError, match=r"^--target-accuracy: 'target_accuracy': 0.3 is out of range"
    ):
        cli_eval_config("swebench", target_accuracy=0.3)
    with pytest.raises(SettingError, match=r"^--seed: 'seed': -1 is out of range"):
        cli_eval_config("swebench", seed=-1)


def test_a_record_is_frozen_and_replace_checks_again():
    cfg = EvalConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.min_steps = 0  # type: ignore[misc]
    with pytest.raises(SettingError, match="'risk_alpha'"):
        cfg.replace(risk_alpha=0.9)
    with pytest.raises(SettingError, match="'n_workers'"):
        BudgetConfig().replace(n_workers=0)
    assert cfg.replace(min_steps=3).min_steps == 3


def test_a_catalog_builds_the_record_its_settings_say(tmp_path):
    cat = _catalog(
        tmp_path,
        'confidence = "none"\ninner_holdout = "scaffold"\nmodel_families = ["behaviour", "peer_prior"]\n'
        "[settings.peer_prior]\nstrength = 2.0",
    )
    assert cat.config == EvalConfig(
        families=["behaviour", "peer_prior"],
        min_steps=2,
        confidence=None,
        inner_holdout="scaffold",
        peer_params={"strength": 2.0},
    )
    # settings no family of the catalog reads: an error naming both keys
    with pytest.raises(CatalogError, match=r"'settings\.peer_prior': .*'settings\.model_families'"):
        _catalog(tmp_path, "[settings.peer_prior]\nstrength = 2.0")
    shipped = load_catalog("swebench")
    assert (
        eval_config("swebench") == shipped.config
        and shipped.config.min_steps == shipped.settings["min_steps"]
    )
    with pytest.raises(CatalogError, match=r"'settings\.minsteps': unknown key"):
        _catalog(tmp_path, "minsteps = 3")
    with pytest.raises(CatalogError, match=r"settings\.peer_prior\.strength"):
        _catalog(
            tmp_path, 'model_families = ["peer_prior"]\n[settings.peer_prior]\nstrength = -1.0'
        )


def test_an_adapter_block_and_a_python_caller_build_the_same_record():
    block = {
        "model": "models/x",
        "halt_on": "both",
        "pass": {"state": "p.json", "seed": 3},
        "task": "t",
    }
    mon, rest = split_config(block, {"task": TASK}, "agent.earlyeval")
    assert mon == MonitorConfig(
        model="models/x", halt_on="both", pass_=PassConfig(state="p.json", seed=3)
    )
    assert rest == {"task": "t"} and split_config(mon, {"task": TASK}, "x") == (mon, {})
    assert mon.block() == {
        "model": "models/x",
        "halt_on": "both",
        "pass": {"state": "p.json", "audit_share": None, "seed": 3},
    }
    with pytest.raises(
        ConfigError, match=r"^agent\.earlyeval\.pass\.audit_share: 2 is out of range"
    ):
        split_config(
            {**block, "pass": {"state": "p", "audit_share": 2}}, {"task": TASK}, "agent.earlyeval"
        )
    with pytest.raises(ConfigError, match=r"^agent\.earlyeval\.pass\.stat: unknown key"):
        split_config({**block, "pass": {"stat": "p"}}, {"task": TASK}, "agent.earlyeval")
    with pytest.raises(SettingError, match="'halt_on'"):
        MonitorConfig(model="m", halt_on="sometimes")


@pytest.mark.parametrize(
    "settings,other",
    [
        ({"halt_on_impossible": True, "halt_on": "success"}, "halt_on: success"),
        ({"halt_on_impossible": "steps", "budget": False}, "budget: false"),
        ({"halt_on_impossible": ["cost_usd"], "budget": ["steps"]}, "budget: ['steps']"),
        ({"key": "k" * 32}, "require_signature"),
    ],
)
def test_settings_that_can_never_take_effect_are_refused_naming_both_keys(settings, other):
    """A rule armed on paper that can never fire (issue 43 item 5): the record refuses it, in a file block and
    from Python alike, naming the key and the one it contradicts."""
    first = next(iter(settings))
    with pytest.raises(SettingError, match=rf"'{first}':.*{re.escape(other)}"):
        MonitorConfig(model="m", **settings)
    block = {"model": "m", **settings}
    if "key" not in settings:  # a signing key is given from code only
        with pytest.raises(ConfigError, match=rf"^x\.{first}:.*{re.escape(other)}"):
            split_config(block, {}, "x")
    assert MonitorConfig(model="m", halt_on_impossible=True, halt_on="both", budget=True)


def test_adapter_keys_are_typed_like_the_monitors():
    """An adapter's own keys carry their checks: "no" is not a yes, and the checked value is what the adapter
    reads."""
    keys = {"task": TASK, "submit_diff": Bool()}
    with pytest.raises(
        ConfigError, match=r"^x\.submit_diff: 'no' is a string, expected true or false"
    ):
        split_config({"model": "m", "submit_diff": "no"}, keys, "x")
    _, opts = split_config(
        {"model": "m", "submit_diff": False, "task": {"task_id": "t"}}, keys, "x"
    )
    assert opts == {"submit_diff": False, "task": {"task_id": "t"}}
    with pytest.raises(ConfigError, match=r"^x\.task: 7 is not"):
        split_config({"model": "m", "task": 7}, keys, "x")

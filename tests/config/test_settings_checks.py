"""Settings that cannot contradict each other or say nothing (issue 43 item 5): lists that must not repeat, feature
names that name features, a key given twice in a settings file, options read only with another option."""

from __future__ import annotations

import json

import _paths  # noqa: F401
import pytest

from earlyeval.config.catalog import load_catalog
from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.errors import CatalogError, IngestError, SettingError
from earlyeval.core.jsonio import loads_strict, read_settings_json
from earlyeval.features.known import check_feature_settings

CATALOG = 'bench = "x"\nfamilies = {families}\n[[runs]]\nfolder = "f"\nagent = "a"\nformat = "tau2"\n{extra}'


def _catalog(tmp_path, families='["behaviour"]', extra=""):
    p = tmp_path / "x.toml"
    p.write_text(CATALOG.format(families=families, extra=extra))
    return load_catalog(p)


def test_a_family_or_pattern_listed_twice_is_refused_naming_both_places(tmp_path):
    with pytest.raises(CatalogError, match=r"'families\[2\]': 'behaviour' repeats families\[0\]"):
        _catalog(tmp_path, '["behaviour", "gold", "behaviour"]')
    with pytest.raises(SettingError, match=r"model_families\[1\]"):
        EvalConfig(families=["gold", "gold"])
    with pytest.raises(SettingError, match=r"drop_features\[1\]"):
        EvalConfig(drop_features=("step", "step"))
    with pytest.raises(CatalogError, match=r"runs\[0\]\.public_submissions\[1\]"):
        _catalog(tmp_path, extra='public_submissions = ["s1", "s1"]')
    assert _catalog(tmp_path, '["behaviour", "gold"]').families == ["behaviour", "gold"]


@pytest.mark.parametrize(
    "change, key",
    [
        ({"monotone": {"prior_solve_rat": 1}}, "monotone.prior_solve_rat"),
        ({"drop_features": ("stepz",)}, r"drop_features\[0\]"),
        ({"only_features": ("zzz_*",)}, r"only_features\[0\]"),
    ],
)
def test_a_feature_name_no_family_makes_is_an_error(change, key):
    with pytest.raises(SettingError, match=key):
        check_feature_settings(EvalConfig(**change))
    # real names (of this model's families or of another family, as the ablations use them) pass
    check_feature_settings(EvalConfig(monotone={"prior_solve_rate": 1, "peer_rate": 1}))
    check_feature_settings(
        EvalConfig(drop_features=("share_*", "step"), only_features=("prior_*",))
    )


def test_train_refuses_a_misspelt_monotone_key_before_any_fit():
    from earlyeval.evaluation.fold_runner import FoldRunner

    with pytest.raises(SettingError, match="monotone.prior_solve_rat.*similar: prior_solve_rate"):
        FoldRunner(None, EvalConfig(monotone={"prior_solve_rat": 1}))  # type: ignore[arg-type]


def test_settings_read_only_by_a_family_the_catalog_never_uses_are_refused(tmp_path):
    with pytest.raises(CatalogError, match=r"settings\.peer_prior.*settings\.model_families"):
        _catalog(tmp_path, extra="[settings.peer_prior]\nstrength = 2.0\n")
    cat = _catalog(
        tmp_path, '["behaviour", "peer_prior"]', "[settings.peer_prior]\nstrength = 2.0\n"
    )
    assert cat.config.peer_params == {"strength": 2.0}


@pytest.mark.parametrize(
    "text, key",
    [
        ('{"success": 0.9, "failure": 0.9, "success": 0.6}', "success"),
        ('{"a": {"b": 1, "b": 2}}', "b"),
        ('{"success": NaN}', "<json>"),
        ("[" * 200 + "]" * 200, "<json>"),
    ],
)
def test_a_settings_file_is_strict_json(tmp_path, text, key):
    p = tmp_path / "t.json"
    p.write_text(text)
    with pytest.raises(IngestError) as e:
        read_settings_json(p)
    assert e.value.field == key and e.value.file == str(p)
    assert loads_strict('{"a": 1}') == json.loads('{"a": 1}')


def test_a_model_manifest_with_a_key_given_twice_is_refused_naming_it(tmp_path):
    import shutil

    from _paths import REPO

    from earlyeval.core.errors import ModelDirError
    from earlyeval.model.modeldir import load_model_dir

    src = REPO / "models" / "swebench"
    if not (src / "manifest.json").is_file():
        pytest.skip("needs models/swebench (make train)")
    d = tmp_path / "m"
    shutil.copytree(src, d)
    text = (d / "manifest.json").read_text()
    (d / "manifest.json").write_text(text.replace('"format":', '"format": "x", "format":', 1))
    with pytest.raises(ModelDirError, match="manifest.json: format"):
        load_model_dir(d)


@pytest.mark.parametrize(
    "kw, words",
    [
        ({"pass_workers": 4}, "--pass-workers 4 is read only with --pass"),
        ({"audit_share": 0.5}, "--audit-share 0.5 is read only with --pass"),
        ({"warm_rule": "check"}, "--warm-rule 'check' is read only with --warm-start"),
        (
            {"pass_replay": True, "pass_workers": 10**9},
            r"--pass-workers 1000000000: an integer in \[1, ",
        ),
        ({"seed": -1}, r"--seed -1: an integer in \[0, "),
        ({"pass_replay": True, "audit_share": float("nan")}, "--audit-share nan must be in"),
    ],
)
def test_score_options_read_only_with_another_or_out_of_bounds_are_named(kw, words):
    from earlyeval.workflows.score_options import ScoreOptions

    with pytest.raises(ValueError, match=words):
        ScoreOptions(fmt="auto", **kw)

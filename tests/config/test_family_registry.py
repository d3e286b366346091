"""Open extension: families and formats by name, entry point or dotted path; nothing dropped silently."""

from __future__ import annotations

import tomllib

import _custom_family
import _paths
import numpy as np
import pytest
from synth import SMALL_LGBM, make_dataset, make_trajectories

from earlyeval.config.catalog import RunSpec
from earlyeval.config.eval_config import EvalConfig
from earlyeval.config.plugins import load_object
from earlyeval.core.errors import IngestError, ModelDirError, UnknownPluginError
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.features import (
    BUILTIN_FAMILIES,
    FAMILIES,
    FOLD_FITTED,
    FOLD_FREE,
    FeatureNamesError,
    Featurizer,
    RunContext,
    bind_values,
    build_family,
    family_class,
    fold_fitted,
    fold_free,
)
from earlyeval.features.context import context_absent_counts, context_gaps
from earlyeval.ingest import FORMAT_MODULES, FORMATS, format_module, parse_files
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import ModelBundle, load_model_dir, save_model_dir

CUSTOM = "_custom_family:ActionLengthFamily"
PYPROJECT = tomllib.loads((_paths.REPO / "pyproject.toml").read_text())


@pytest.fixture
def custom():
    """The custom family resolved by dotted path (which registers it); forgotten again afterwards."""
    cls = family_class(CUSTOM)
    yield cls
    FAMILIES.unregister(cls.name)


def test_fit_scope_replaces_the_closed_tuples():
    assert fold_free(["behaviour", "text", "gold", "prior", "peer_prior"]) == [
        "behaviour",
        "gold",
        "prior",
    ]
    assert fold_fitted(["behaviour", "text", "gold", "prior", "peer_prior"]) == [
        "text",
        "peer_prior",
    ]
    assert family_class(CUSTOM).fit_scope == FOLD_FITTED
    FAMILIES.unregister("cx_action_length")
    assert {n: family_class(n).fit_scope for n in BUILTIN_FAMILIES} == {
        "behaviour": FOLD_FREE,
        "text": FOLD_FITTED,
        "gold": FOLD_FREE,
        "prior": FOLD_FREE,
        "peer_prior": FOLD_FITTED,
        "pass": FOLD_FREE,
        "phase": FOLD_FREE,
    }


def test_unknown_family_is_a_named_error_everywhere():
    for call in (
        lambda: fold_free(["behaviour", "behavior"]),
        lambda: build_family("behavior"),
        lambda: make_dataset(["behaviour", "behavior"]),
    ):
        with pytest.raises(UnknownPluginError) as e:
            call()
        assert "'behavior'" in str(e.value) and "behaviour, text, gold, prior, peer_prior" in str(
            e.value
        )
    with pytest.raises(UnknownPluginError, match="cannot import 'no_such_pkg.fam'"):
        family_class("no_such_pkg.fam:Fam")
    with pytest.raises(UnknownPluginError, match="fit_scope is None"):
        family_class("_custom_family:NoScope")  # a scope is declared, never guessed
    assert "cx_no_scope" not in FAMILIES.known()


def test_a_config_family_is_never_dropped(custom):
    trajs, tasks = make_trajectories(12)
    ds = make_dataset(["behaviour", CUSTOM], trajs=trajs, tasks=tasks)
    cfg = EvalConfig(
        families=["behaviour", CUSTOM], min_steps=2, lgbm_params=dict(SMALL_LGBM), n_jobs=1
    )
    with pytest.raises(UnknownPluginError):  # the old FoldRunner skipped a name in neither tuple
        FoldRunner(ds, EvalConfig(**{**cfg.__dict__, "families": ["behaviour", "nope"]})).fit(
            frozenset()
        )
    full = FoldRunner(ds, cfg).fit(frozenset())
    assert full.feature_names[-2:] == ["cx_steps", "cx_act_rel"]
    assert list(full.model.feature_names_in_) == full.feature_names
    mean_len = float(np.mean([len(s.action) for t in trajs for s in t.steps]))
    assert full.fold_families[0].mean_len == pytest.approx(mean_len)


def test_custom_family_end_to_end_fit_save_load_observe(custom, tmp_path):
    trajs, tasks = make_trajectories(12)
    ds = make_dataset(["behaviour", CUSTOM], trajs=trajs, tasks=tasks)
    cfg = EvalConfig(
        families=["behaviour", CUSTOM], min_steps=2, lgbm_params=dict(SMALL_LGBM), n_jobs=1
    )
    runner = FoldRunner(ds, cfg)
    full = runner.fit(frozenset())
    # as train_bench builds the shipped featurizer: fold-free families, then the fold's fitted ones
    fz = Featurizer([build_family(n) for n in fold_free(cfg.families)] + full.fold_families)
    assert fz.names == full.feature_names
    bundle = ModelBundle(
        fz,
        full.model,
        {"success": 0.99, "failure": 0.99, "min_halt_step": 1},
        training={
            "context_runs": len(ds.trajs),
            "context_absent_runs": context_absent_counts(fz, ds.contexts),
        },
    )
    save_model_dir(bundle, tmp_path / "m")
    assert (tmp_path / "m" / "family_cx_action_length.json").exists()

    mon = Monitor.load(tmp_path / "m", budget=False)
    assert [f.name for f in mon.featurizer.families] == ["behaviour", "cx_action_length"]
    assert mon.featurizer.families[1].mean_len == pytest.approx(full.fold_families[0].mean_len)
    t = ds.trajs[0]
    mon.start(tasks[t.task_id], agent=t.agent)
    assert mon.run.context == "full"
    i = ds.runs_of({t.agent})[0]
    rows = runner.rows_of(np.asarray([i]), 2)
    X, _ = runner.features(full, np.asarray([i]), rows)
    for k, step in enumerate(t.steps[:3]):
        mon.observe(step)
        assert mon.run.last_features[-2] == k + 1
        assert mon.run.last_features[-1] == pytest.approx(
            len(step.action) / full.fold_families[0].mean_len, rel=1e-6
        )
        np.testing.assert_array_equal(
            mon.run.last_features, X[k]
        )  # live row == the row training saw

    # the Monitor asks the family what context it needs: no agent name -> a gap named by the family
    mon.start(tasks[t.task_id], agent="")
    assert mon.run.warnings == ["the cx_action_length family wants the agent's name"]
    assert mon.run.context == "partial"  # no training run lacked it: halting stays off

    # a loader that does not know the name refuses the directory (it never imports what the directory names)
    FAMILIES.unregister("cx_action_length")
    with pytest.raises(
        ModelDirError, match="unknown feature family 'cx_action_length'.*known: behaviour, text"
    ):
        load_model_dir(tmp_path / "m")


def test_values_are_bound_to_names():
    np.testing.assert_array_equal(bind_values("f", ["a", "b"], {"b": 2.0, "a": 1.0}), [1.0, 2.0])
    with pytest.raises(FeatureNamesError, match="missing \\['b'\\], extra \\['c'\\]"):
        bind_values("f", ["a", "b"], {"a": 1.0, "c": 2.0})
    with pytest.raises(FeatureNamesError, match="shape \\(3,\\), its names are 2"):
        bind_values("f", ["a", "b"], np.zeros(3))
    arr = np.arange(2.0)
    # built-in arrays pass through untouched (bitwise)
    assert bind_values("f", ["a", "b"], arr) is arr

    class Drifted(_custom_family.ActionLengthFamily):
        @property
        def names(self):
            return ["cx_steps"]  # one name fewer than values gives

    fz = Featurizer([Drifted(1.0)])
    st = fz.start(RunContext(agent="a"))
    with pytest.raises(FeatureNamesError, match="cx_action_length"):
        fz.values(st)


def test_builtin_context_checks_are_the_families_own():
    fz = Featurizer([build_family(n) for n in ("behaviour", "gold", "prior")])
    gaps = context_gaps(fz, RunContext())
    assert gaps == [
        (
            "gold",
            "the model uses the gold family but the task has no gold patch: its 25 features are NaN",
        ),
        ("prior", "the model uses the prior family but no task was given: its features are NaN"),
    ]
    assert [f.name for f in fz.families if f.needs_task] == ["gold", "prior"]


def test_builtins_are_declared_as_entry_points_too():
    eps = PYPROJECT["project"]["entry-points"]
    assert eps["earlyeval.families"] == BUILTIN_FAMILIES
    assert eps["earlyeval.formats"] == FORMAT_MODULES
    for name, path in BUILTIN_FAMILIES.items():
        assert load_object(path) is family_class(name)


def test_formats_by_name_and_dotted_path(tmp_path, monkeypatch):
    with pytest.raises(IngestError) as e:
        format_module("openhands-event")
    assert e.value.field == "format" and "openhands-events" in e.value.reason
    assert format_module("tau2").__name__ == "earlyeval.ingest.tau2"
    # a dotted path that no registration names is refused before anything is imported or called
    (tmp_path / "fz_marker_mod.py").write_text(
        f"open({str(tmp_path / 'imported')!r}, 'w').write('x')\nclass F:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for path in ("fz_marker_mod:F", "subprocess:Popen", "os:system"):
        with pytest.raises(IngestError, match="registered format"):
            format_module(path)
    assert not (tmp_path / "imported").exists()
    # registered (here in-process; an installed plug-in declares an entry point), its dotted path names it
    (tmp_path / "t1.txt").write_text("edit\tsed -i s/a/b/ x.py\nsubmit\tsubmit\n")
    FORMATS.register("line-format", _custom_family.LineFormat)
    try:
        for name in ("line-format", "_custom_family:LineFormat"):
            spec = RunSpec(
                name="r", folder=str(tmp_path), agent="a", scaffold="s", model="m", format=name
            )
            [traj] = list(parse_files([tmp_path / "t1.txt"], spec, "synth"))
            assert [s.action for s in traj.steps] == [
                "sed -i s/a/b/ x.py",
                "submit",
            ] and traj.task_id == "t1"
        assert "line-format" in FORMATS.known()
    finally:
        FORMATS.unregister("line-format")

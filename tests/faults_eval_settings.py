"""Fault cases of the class "settings that contradict or say nothing": a family or a pattern listed twice, a
feature name no family makes, a key given twice in a settings file, settings no rule will ever read.  Shared by
tests/test_faults.py and tools/fault_summary.py.

Every case is refused: "named" when the error (one line, rc 2 for a verb) names the file or the option and the
key(s); "silent" when the setting is taken (and dropped, repeated or overridden) without a word."""

from __future__ import annotations

import json
from typing import Any, Callable

from faults import Env, rehash
from faults24 import _tau2_workspace, cli, one_line_error
from faults29 import _no_traceback, _score_args, score_inputs


def _verb_case(
    verb: str, settings: str, needles: tuple[str, ...], families: str = "", run: str = ""
):
    """``earlyeval <verb> --bench fz`` on a workspace whose catalog says ``settings`` (and ``families``)."""

    def case(env: Env):
        ws = _tau2_workspace(
            env, f"settings_{abs(hash((verb, settings, families, run))) % 10**8}", run, settings
        )
        cat = ws / "data" / "fz.toml"
        if families:
            cat.write_text(
                cat.read_text().replace('families = ["behaviour"]', f"families = {families}")
            )
        data = {"EARLYEVAL_DATA": str(ws / "shared")}
        if verb == "train":
            rc, _, err = cli(["ingest", "--bench", "fz"], ws, env=data)
            if rc != 0:  # the catalog itself was refused: that is the answer
                return (
                    "named" if one_line_error(rc, err, *needles) else "silent",
                    err.strip()[-160:],
                )
        rc, _, err = cli([verb, "--bench", "fz"], ws, env=data)
        last = _no_traceback(rc, err)
        if rc == 0:
            return ("silent", f"{verb} took it: rc 0")
        return ("named" if one_line_error(rc, err, *needles) else "silent", f"rc {rc}: {last}")

    return case


def _api_case(build: Callable[[Env], Any], *needles: str):
    def case(env: Env):
        from earlyeval.core.errors import EarlyEvalError

        try:
            build(env)
        except (EarlyEvalError, ValueError) as e:
            msg = str(e)
            return (
                "named" if all(n in msg for n in needles) and "\n" not in msg else "silent",
                msg[:160],
            )
        return ("silent", "taken without a word")

    return case


def _feature_names(change: dict[str, Any]) -> Callable[[Env], Any]:
    def build(env: Env) -> Any:
        from earlyeval.config.eval_config import EvalConfig
        from earlyeval.features.known import check_feature_settings

        return check_feature_settings(EvalConfig(**change))

    return build


def _thresholds_file(env: Env) -> Any:
    from earlyeval.config.monitor_config import MonitorConfig

    p = env.base / "settings_thresholds.json"
    p.write_text('{"success": 0.95, "failure": 0.95, "success": 0.55}')
    return MonitorConfig(thresholds=str(p)).threshold_table()


def _model_file_twice(name: str) -> Callable[[Env], Any]:
    """The model directory's ``name`` with its first key given twice, every hash recomputed (a careful edit)."""

    def build(env: Env) -> Any:
        from earlyeval.model.modeldir import load_model_dir

        d = env.copy_model(f"settings_twice_{name.split('.')[0]}")
        text = (d / name).read_text()
        key = next(iter(json.loads(text)))
        (d / name).write_text(text.replace(f'"{key}":', f'"{key}": 0, "{key}":', 1))
        if name != "manifest.json":
            rehash(d)
        return load_model_dir(d)

    return build


def _signature_twice(env: Env) -> Any:
    from faults24 import _env

    from earlyeval.model.modeldir import load_model_dir, save_model_dir

    with _env("EARLYEVAL_MODEL_KEY", "k" * 32):
        d = save_model_dir(env.tiny()[1], env.base / "settings_signed")
        sig = d / "signature.json"
        sig.write_text(sig.read_text().replace('"format":', '"format": "x", "format":', 1))
        return load_model_dir(d, require_signature=True)


def _score_option_case(extra: list[str], *needles: str):
    def case(env: Env):
        _, _, ws = score_inputs(env)
        out = env.base / f"settings_score_{abs(hash(tuple(extra))) % 10**6}"
        args = _score_args(env, out)
        rc, _, err = cli([*args, "--force", *extra], ws)
        last = _no_traceback(rc, err)
        ok = one_line_error(rc, err, *needles) and not (out / "score.json").exists()
        return ("named" if ok else "silent", f"rc {rc}: {last}")

    return case


C = "settings that contradict or say nothing"
CASES_EVAL_SETTINGS: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    (
        C,
        "a catalog's families list behaviour twice",
        _verb_case(
            "ingest", "", ("families[1]", "repeats families[0]"), '["behaviour", "behaviour"]'
        ),
    ),
    (
        C,
        "model_families lists a family twice",
        _verb_case(
            "ingest",
            '[settings]\nmodel_families = ["behaviour", "behaviour"]',
            ("model_families[1]",),
        ),
    ),
    (
        C,
        "a run's public_submissions twice",
        _verb_case("ingest", "", ("public_submissions[1]",), run='public_submissions = ["s", "s"]'),
    ),
    (
        C,
        "a run's prior_match twice",
        _verb_case("ingest", "", ("prior_match[1]",), run='prior_match = ["^a", "^a"]'),
    ),
    (
        C,
        "settings.peer_prior without the family",
        _verb_case(
            "ingest",
            "[settings.peer_prior]\nstrength = 2.0",
            ("settings.peer_prior", "model_families"),
        ),
    ),
    (
        C,
        "a misspelt monotone key at train",
        _verb_case("train", "[settings.monotone]\nstep_z = 1", ("monotone.step_z", "no feature")),
    ),
    (
        C,
        "a monotone key of a family no registry knows",
        _api_case(_feature_names({"monotone": {"zz_feature": 1}}), "monotone.zz_feature"),
    ),
    (
        C,
        "drop_features naming no feature",
        _api_case(
            _feature_names({"drop_features": ("setp",)}), "drop_features[0]", "similar: step"
        ),
    ),
    (
        C,
        "only_features matching nothing",
        _api_case(
            _feature_names({"only_features": ("gold_zz*",)}),
            "only_features[0]",
            "matches no feature",
        ),
    ),
    (
        C,
        "an adapter's thresholds file with success twice",
        _api_case(_thresholds_file, "settings_thresholds.json", "'success'"),
    ),
    (
        C,
        "manifest.json with a key twice",
        _api_case(_model_file_twice("manifest.json"), "manifest.json", "given twice"),
    ),
    (
        C,
        "thresholds.json with a key twice (rehashed)",
        _api_case(_model_file_twice("thresholds.json"), "thresholds.json", "given twice"),
    ),
    (
        C,
        "signature.json with a key twice",
        _api_case(_signature_twice, "signature.json", "given twice"),
    ),
    (
        C,
        "score --pass-workers without --pass",
        _score_option_case(["--pass-workers", "4"], "--pass-workers 4", "--pass"),
    ),
    (
        C,
        "score --audit-share without --pass",
        _score_option_case(["--audit-share", "0.5"], "--audit-share 0.5", "--pass"),
    ),
    (
        C,
        "score --warm-rule without --warm-start",
        _score_option_case(["--warm-rule", "check"], "--warm-rule", "--warm-start"),
    ),
]

"""The files of a model directory, each rebuilt from its verified bytes and checked (``modeldir.load_model_dir``
reads them): JSON, the feature families, the outcome model's boosters and the optional extras.  A failure is a
``ModelDirError`` naming the file and the field; nothing is imported or executed from the directory."""

from __future__ import annotations

import io
import logging
import re
from pathlib import Path
from typing import Any

import numpy as np

from earlyeval.core.errors import ModelDirError, StrictJSONError, UnknownPluginError
from earlyeval.core.jsonio import loads_strict
from earlyeval.core.trajectory import Action, Task, make_step
from earlyeval.features import FAMILIES, FeatureFamily, Featurizer, RunContext, bind_values
from earlyeval.model.boostercheck import BoosterTextError, check_model_text, probe
from earlyeval.model.lgbm_capi import load_booster
from earlyeval.model.outcome import OutcomePredictor

log = logging.getLogger("earlyeval.model.modeldir")

MANIFEST = "manifest.json"


def read_json(b: bytes, f: str) -> Any:
    """A model file's JSON, strict (``jsonio.loads_strict``: a key given twice is refused, naming it; NaN is
    allowed, a model's arrays hold it)."""
    try:
        return loads_strict(b.decode(), allow_nan=True, max_depth=None)
    except UnicodeDecodeError as e:
        raise ModelDirError(f, Path(f).name, f"not valid JSON ({e})") from e
    except StrictJSONError as e:
        field = Path(f).name if e.key == "<json>" else f"{Path(f).name}: {e.key}"
        raise ModelDirError(
            f, field, e.reason if e.key != "<json>" else f"not valid JSON ({e.reason})"
        ) from e


def booster_text(b: bytes, f: str) -> str:
    try:
        return b.decode()
    except UnicodeDecodeError as e:
        raise ModelDirError(f, Path(f).name, f"not text ({e})") from e


def checked_booster(text: str, f: str, n_features: int | None) -> str:
    """The booster text after ``boostercheck.check_model_text``; a ModelDirError naming the file and where."""
    try:
        return check_model_text(text, n_features)
    except BoosterTextError as e:
        raise ModelDirError(
            f, Path(f).name, f"not a LightGBM model text this loader accepts: {e}"
        ) from e


def parse_booster(text: str, f: str) -> Any:
    """A LightGBM booster from checked (and probed) text; any LightGBM error is a ModelDirError naming the file."""
    try:
        return load_booster(text)
    except Exception as e:
        raise ModelDirError(
            f, Path(f).name, f"LightGBM could not read it ({type(e).__name__}: {e})"
        ) from e


def booster_strings(obj: Any, out: list[str], depth: int = 0) -> list[str]:
    """Every LightGBM model text inside a JSON value (the budget estimators' boosters)."""
    if depth > 64:
        return out
    if isinstance(obj, str):
        if obj.startswith("tree\n"):
            out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            booster_strings(v, out, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            booster_strings(v, out, depth + 1)
    return out


def run_once(fz: Featurizer, p: Path) -> None:
    """Each stored family follows one tiny run (start, one step, values): a state that loads but cannot run
    (a corrupt public-history table) is refused here, named, not at a live run's start (where it would only
    fail open)."""
    task = Task(task_id="earlyeval-load-check", prompt="load check")
    ctx = RunContext(
        task=task, agent="a", scaffold="s", model="m", task_id=task.task_id, prompt=task.prompt
    )
    step = make_step(0, [Action("bash", "ls")], observation="ok")
    for fam in fz.families:
        try:
            st = fam.start(ctx)
            fam.update(st, step)
            bind_values(fam.name, fam.names, fam.values(st))
        except Exception as e:
            raise ModelDirError(
                str(p / f"family_{fam.name}.json"),
                f"family_{fam.name}",
                f"the stored family cannot follow a run ({type(e).__name__}: {e})",
            ) from e


def lgb_name(n: str) -> str:
    """The feature name as LightGBM stores it (it replaces spaces and JSON special characters)."""
    return re.sub(r"[\s]", "_", n)


def rebuilt_family(p: Path, entry: dict[str, Any], blobs: dict[str, bytes]) -> FeatureFamily:
    """One family of the manifest rebuilt from its verified files, and checked to make as many features as listed."""
    name: str = entry["name"]  # the manifest's schema requires it (config.schema.FAMILY_ENTRY)
    # by registered name only (built-in, entry point, or registered in this process): the directory
    # never makes the loader import a module it names
    try:
        cls = FAMILIES.get(name)
    except UnknownPluginError as e:
        raise ModelDirError(
            str(p / MANIFEST),
            "families",
            f"unknown feature family {name!r} (known: {', '.join(e.known)}; "
            "a custom family must be installed as an entry point or registered with earlyeval.features.register_family "
            "before loading)",
        ) from e
    meta = read_json(blobs.get(f"family_{name}.json", b"{}"), str(p / f"family_{name}.json"))
    arrays: dict[str, np.ndarray] = {}
    if entry.get("arrays"):
        key = f"family_{name}.npz"
        if key not in blobs:
            raise ModelDirError(str(p / key), key, "missing")
        try:
            with np.load(io.BytesIO(blobs[key]), allow_pickle=False) as z:
                arrays = {k: z[k] for k in z.files}
        except Exception as e:  # a corrupt archive must not surface as a zipfile traceback
            raise ModelDirError(
                str(p / key), key, f"cannot read arrays ({type(e).__name__}: {e})"
            ) from e
    try:
        fam: FeatureFamily = cls.from_state(meta, arrays)
    except Exception as e:  # a missing key or array: name the family's files, not a KeyError
        raise ModelDirError(
            str(p / f"family_{name}.json"),
            f"family_{name}",
            f"cannot rebuild the {name} family ({type(e).__name__}: {e})",
        ) from e
    if len(fam.names) != entry.get("n_features"):
        raise ModelDirError(
            str(p / f"family_{name}.json"),
            f"families.{name}.n_features",
            f"the manifest says {entry.get('n_features')}, the stored family makes {len(fam.names)}",
        )
    return fam


def outcome_boosters(
    p: Path, blobs: dict[str, bytes], state: Any, n_features: int, do_probe: bool
) -> dict[str, str]:
    """The outcome model's booster texts, checked (and probed): the success booster always, the failure one if listed
    or if ``model.json``'s twin needs it."""
    boosters = {}
    for k in ("success", "failure"):
        key = f"booster_{k}.txt"
        if key in blobs:
            boosters[k] = checked_booster(
                booster_text(blobs[key], str(p / key)), str(p / key), n_features
            )
    if "success" not in boosters:
        raise ModelDirError(str(p / "booster_success.txt"), "booster_success.txt", "missing")
    if state.get("twin") in ("flipped", "balanced") and "failure" not in boosters:
        raise ModelDirError(
            str(p / "booster_failure.txt"),
            "booster_failure.txt",
            f"missing (model.json says twin={state.get('twin')!r})",
        )
    if do_probe:
        try:
            probe(list(boosters.values()))
        except BoosterTextError as e:
            raise ModelDirError(str(p / "booster_success.txt"), "booster_*.txt", str(e)) from e
    return boosters


def extras(
    p: Path, blobs: dict[str, bytes], do_probe: bool
) -> tuple[dict[str, Any], dict[str, str]]:
    """Optional extras (the budget estimators) fail open, as documented: one whose boosters do not pass the check or
    the probe is left out (``ModelBundle.extra_errors`` says why; the Monitor's budget_status too)."""
    extra: dict[str, Any] = {}
    extra_errors: dict[str, str] = {}
    for n, b in blobs.items():
        if not n.startswith("extra_"):
            continue
        key = n[len("extra_") : -len(".json")]
        try:
            v = read_json(b, str(p / n))
            texts = [checked_booster(t, str(p / n), None) for t in booster_strings(v, [])]
            if do_probe:
                try:
                    probe(texts)
                except BoosterTextError as e:
                    raise ModelDirError(str(p / n), n, str(e)) from e
            extra[key] = v
        except ModelDirError as e:
            extra_errors[key] = str(e)
            log.warning("earlyeval: model dir %s: %s left out (%s)", p, n, e)
    return extra, extra_errors


def outcome_model(
    p: Path, state: Any, boosters: dict[str, str], names: list[str], n_jobs: int
) -> OutcomePredictor:
    """The outcome predictor from ``model.json`` and the checked booster texts, each booster calibrated and trained on
    exactly the featurizer's features."""
    if not isinstance(state, dict):
        raise ModelDirError(str(p / "model.json"), "model.json", "expected an object")
    state["boosters"] = {}
    try:
        model = OutcomePredictor.from_state(state, n_jobs=n_jobs)
    except Exception as e:
        raise ModelDirError(
            str(p / "model.json"),
            "model.json",
            f"not a saved OutcomeModel ({type(e).__name__}: {e})",
        ) from e
    for k, text in boosters.items():
        model.boosters_[k] = parse_booster(text, str(p / f"booster_{k}.txt"))
        if k not in model.platt_:
            raise ModelDirError(
                str(p / "model.json"), f"platt.{k}", "missing calibration for the booster"
            )
    if list(model.feature_names_in_) != names:
        raise ModelDirError(str(p / "model.json"), "feature_names", "differ from the featurizer's")
    for k, b in model.boosters_.items():
        nfeat = b.num_feature()
        if nfeat != len(names):
            raise ModelDirError(
                str(p / f"booster_{k}.txt"),
                "num_feature",
                f"booster expects {nfeat} features, featurizer makes {len(names)}",
            )
        if b.feature_name() != [lgb_name(n) for n in names] and b.feature_name() != [
            f"Column_{i}" for i in range(nfeat)
        ]:
            raise ModelDirError(
                str(p / f"booster_{k}.txt"),
                "feature_names",
                "the booster was trained on other features than the featurizer makes",
            )
    return model

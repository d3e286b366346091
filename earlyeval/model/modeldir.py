"""A model directory that is safe to load.

No pickle; every file hashed in the manifest and checked before anything is parsed; nothing imported or executed
from the directory. The hashes detect corruption, not an adversary. Files and checks: docs/monitor.md, "The model
directory".
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import platform
import shutil
from dataclasses import dataclass, field
from importlib.metadata import version as _dist_version
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

from earlyeval.config import file_schemas, schema
from earlyeval.core import atomic
from earlyeval.core.env import env_int
from earlyeval.core.errors import ModelDirError, SettingError, StrictJSONError, UnknownPluginError
from earlyeval.core.jsonio import loads_strict
from earlyeval.core.trajectory import Action, Task, make_step
from earlyeval.core.version import (
    __version__,  # not the facade's: that would close earlyeval -> monitor -> modeldir -> earlyeval
)
from earlyeval.features import FAMILIES, FeatureFamily, Featurizer, RunContext, bind_values
from earlyeval.model import signature
from earlyeval.model.boostercheck import BoosterTextError, check_model_text, probe, probe_enabled
from earlyeval.model.lgbm_capi import load_booster
from earlyeval.model.outcome import OutcomePredictor
from earlyeval.model.safedir import OpenDir

FORMAT = "earlyeval-model"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


@dataclass
class ModelBundle:
    """Everything the Monitor needs: featurizer, calibrated model, thresholds."""

    featurizer: Featurizer
    model: Any  # OutcomePredictor when loaded, a fitted model.OutcomeModel when trained
    thresholds: dict[str, float]
    training: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. budget estimators' JSON
    manifest: dict[str, Any] = field(default_factory=dict)
    # extras left out at load (fail-open), and why
    extra_errors: dict[str, str] = field(default_factory=dict)

    @property
    def feature_names(self) -> list[str]:
        return self.featurizer.names


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _versions() -> dict[str, str]:
    """Read from the installed distributions' metadata: recording a version imports nothing."""
    return {
        "earlyeval": __version__,
        "lightgbm": _dist_version("lightgbm"),
        "scikit-learn": _dist_version("scikit-learn"),
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def save_model_dir(
    bundle: ModelBundle, path: str | Path, *, key: bytes | str | None = None
) -> Path:
    """Write the directory beside any old one and swap it in whole (``atomic.swap_dir``): a kill at any
    moment leaves ``path`` the previous complete model or the new one.  Nothing wall-clock is written:
    two identical trainings give identical files and hashes.  With a signing key (``key``, else
    ``EARLYEVAL_MODEL_KEY`` / ``EARLYEVAL_MODEL_KEY_FILE``) ``signature.json`` is written too (``signature``).
    The written directory is loaded with ``load_model_dir`` before it is swapped in: a model its own loader
    refuses (thresholds out of range ...) is a ``ModelDirError`` naming the field, and the old one stays."""
    out = Path(path)
    signing_key = signature.model_key(key)
    files: dict[str, bytes] = {}
    state = bundle.model.get_state()
    for name, text in state.pop("boosters").items():
        files[f"booster_{name}.txt"] = text.encode()
    files["model.json"] = json.dumps(state, indent=1, sort_keys=True).encode()
    files["thresholds.json"] = json.dumps(bundle.thresholds, indent=1, sort_keys=True).encode()
    fam_index = []
    for fam in bundle.featurizer.families:
        meta, arrays = fam.get_state()
        files[f"family_{fam.name}.json"] = json.dumps(meta, sort_keys=True).encode()
        if arrays:
            files[f"family_{fam.name}.npz"] = _npz_bytes(arrays)
        fam_index.append({"name": fam.name, "n_features": len(fam.names), "arrays": bool(arrays)})
    for k, v in bundle.extra.items():
        files[f"extra_{k}.json"] = json.dumps(v, sort_keys=True).encode()
    hashes = {n: _sha(b) for n, b in sorted(files.items())}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "families": fam_index,
        "feature_names": bundle.featurizer.names,
        "thresholds": bundle.thresholds,
        "training": bundle.training,
        "library_versions": _versions(),
        "files": hashes,
        "content_hash": _sha("".join(f"{n}:{h}\n" for n, h in hashes.items()).encode()),
    }
    # hash exactly what a reader will see (tuples -> lists, ...)
    manifest = json.loads(json.dumps(manifest))
    manifest["manifest_hash"] = manifest_hash(manifest)
    with atomic.machine_faults(out):
        tmp = atomic.new_dir_beside(out)
    try:
        with atomic.machine_faults(out):
            for n, b in files.items():
                (tmp / n).write_bytes(b)
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1))
            if signing_key is not None:
                (tmp / signature.SIGNATURE).write_bytes(
                    signature.sign(manifest["manifest_hash"], signing_key)
                )
        _loads(tmp, out)
        with atomic.machine_faults(out):
            atomic.swap_dir(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _loads(tmp: Path, out: Path) -> None:
    """The staged directory ``tmp`` (for ``out``) loads with this package's own loader, or a ModelDirError
    naming ``out`` and the refused field (nothing has replaced ``out`` yet)."""
    try:
        # the structural booster check only: LightGBM wrote the text
        load_model_dir(tmp, probe_boosters=False)
    except ModelDirError as e:
        raise ModelDirError(
            str(out),
            e.field,
            f"{e.reason} (the loader refuses the model just fitted: nothing "
            "written; too little or one-sided training data?)",
        ) from None


def manifest_hash(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest's canonical JSON without its own ``manifest_hash``."""
    body = {k: v for k, v in manifest.items() if k != "manifest_hash"}
    return _sha(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


# bounds on what loading reads: the manifest is a few KB, a booster or the budget JSON a few MB
MAX_MANIFEST_BYTES = 8 << 20
# default of EARLYEVAL_MAX_MODEL_FILE_BYTES, read (and range-checked) at each load
MAX_FILE_BYTES = 512 << 20


def max_file_bytes() -> int:
    return env_int("EARLYEVAL_MAX_MODEL_FILE_BYTES", MAX_FILE_BYTES, lo=1, hi=1 << 50)


def _check_manifest(m: Any, mf: str) -> dict[str, Any]:
    """The manifest's schema (``config.file_schemas.MANIFEST``), every field a reader relies on; a ModelDirError naming
    the field.  The format and its version come first (another version may have another schema), then the
    manifest's own hash (an edit is named as one), then every type and range."""
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ModelDirError(mf, "format", f"expected '{FORMAT}'")
    if m.get("format_version") != FORMAT_VERSION:
        raise ModelDirError(
            mf,
            "format_version",
            f"this earlyeval reads version {FORMAT_VERSION}, the directory is version {m.get('format_version')!r}; retrain or upgrade",
        )
    for key in (
        "files",
        "content_hash",
        "feature_names",
        "families",
        "thresholds",
        "manifest_hash",
    ):
        if key not in m:
            raise ModelDirError(mf, key, "missing from manifest")
    if not isinstance(m["manifest_hash"], str) or m["manifest_hash"] != manifest_hash(m):
        raise ModelDirError(
            mf, "manifest_hash", "does not match the manifest's content: manifest edited"
        )
    return schema.check(file_schemas.MANIFEST, m, lambda key, why: ModelDirError(mf, key, why))


def _check_thresholds(th: Any, f: str, field: str) -> None:
    """(0.5, 1] each (a p >= tau below 0.5 would halt on both sides), or above 1 for "never halt this way"."""
    schema.check(
        file_schemas.MODEL_THRESHOLDS, th, lambda key, why: ModelDirError(f, key, why), key=field
    )


def read_manifest(path: str | Path, _d: OpenDir | None = None) -> dict[str, Any]:
    p = Path(path)
    d = _d or OpenDir(p)
    try:
        mf = str(p / MANIFEST)
        m = _json(d.read(MANIFEST, MAX_MANIFEST_BYTES), mf)
        return _check_manifest(m, mf)
    finally:
        if _d is None:
            d.close()


def _verified_bytes(p: Path, manifest: dict[str, Any], d: OpenDir) -> dict[str, bytes]:
    files = manifest["files"]
    limit = max_file_bytes()
    recomputed = _sha("".join(f"{n}:{h}\n" for n, h in sorted(files.items())).encode())
    if recomputed != manifest["content_hash"]:
        raise ModelDirError(
            str(p / MANIFEST),
            "content_hash",
            "does not match the file hashes listed: manifest edited",
        )
    out = {}
    for name, h in files.items():
        if "/" in name or "\\" in name or "\0" in name or name.startswith(".") or name == MANIFEST:
            raise ModelDirError(
                str(p / MANIFEST),
                f"files.{name}",
                "file names must be plain names inside the directory",
            )
        if not (name.endswith((".json", ".txt", ".npz"))):
            raise ModelDirError(
                str(p / MANIFEST),
                f"files.{name}",
                "only .json, .txt and .npz files belong in a model directory",
            )
        b = d.read(name, limit)
        if _sha(b) != h:
            raise ModelDirError(
                str(p / name), name, "SHA-256 differs from the manifest: truncated or tampered"
            )
        out[name] = b
    return out


def _json(b: bytes, f: str) -> Any:
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


def _booster_text(b: bytes, f: str) -> str:
    try:
        return b.decode()
    except UnicodeDecodeError as e:
        raise ModelDirError(f, Path(f).name, f"not text ({e})") from e


def _checked_booster(text: str, f: str, n_features: int | None) -> str:
    """The booster text after ``boostercheck.check_model_text``; a ModelDirError naming the file and where."""
    try:
        return check_model_text(text, n_features)
    except BoosterTextError as e:
        raise ModelDirError(
            f, Path(f).name, f"not a LightGBM model text this loader accepts: {e}"
        ) from e


def _parse_booster(text: str, f: str) -> Any:
    """A LightGBM booster from checked (and probed) text; any LightGBM error is a ModelDirError naming the file."""
    try:
        return load_booster(text)
    except Exception as e:
        raise ModelDirError(
            f, Path(f).name, f"LightGBM could not read it ({type(e).__name__}: {e})"
        ) from e


def _booster_strings(obj: Any, out: list[str], depth: int = 0) -> list[str]:
    """Every LightGBM model text inside a JSON value (the budget estimators' boosters)."""
    if depth > 64:
        return out
    if isinstance(obj, str):
        if obj.startswith("tree\n"):
            out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _booster_strings(v, out, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _booster_strings(v, out, depth + 1)
    return out


def _run_once(fz: Featurizer, p: Path) -> None:
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


def _lgb_name(n: str) -> str:
    """The feature name as LightGBM stores it (it replaces spaces and JSON special characters)."""
    import re

    return re.sub(r"[\s]", "_", n)


def load_model_dir(
    path: str | Path,
    n_jobs: int = 1,
    *,
    probe_boosters: bool | None = None,
    require_signature: bool = False,
    key: bytes | str | None = None,
) -> ModelBundle:
    """Load and verify a model directory (see the module doc); every failure is a ``ModelDirError``.

    ``require_signature``: also refuse a directory whose ``signature.json`` is missing or was not made with
    ``key`` (else ``EARLYEVAL_MODEL_KEY`` / ``EARLYEVAL_MODEL_KEY_FILE``; ``signature``): an edit that
    re-computed every hash is refused.  Off by default: the hashes alone are checked.

    Boosters (the outcome model's and the budget estimators') pass ``boostercheck`` first: the
    structural check always, the child-process LightGBM probe unless ``probe_boosters=False`` (or
    ``EARLYEVAL_BOOSTER_PROBE=0``).  A directory swapped in by a concurrent save while it is read is
    read again (up to three times)."""
    p = Path(path)
    do_probe = probe_enabled() if probe_boosters is None else probe_boosters
    signing_key = signature.model_key(key) if require_signature else None
    if require_signature and signing_key is None:
        raise SettingError(
            "environment",
            "EARLYEVAL_MODEL_KEY",
            "require_signature needs the signing key (EARLYEVAL_MODEL_KEY, EARLYEVAL_MODEL_KEY_FILE or key=)",
        )
    for attempt in range(3):
        d = OpenDir(p)
        try:
            return _load(p, d, n_jobs, do_probe, signing_key)
        except ModelDirError:
            if attempt < 2 and d.swapped():
                continue
            raise
        except (
            SettingError
        ):  # a malformed environment variable: named as such, not as the directory's fault
            raise
        except (
            Exception
        ) as e:  # a schema this loader did not foresee: still a refusal, never a raw traceback
            if attempt < 2 and d.swapped():
                continue
            raise ModelDirError(str(p), "<load>", f"cannot load ({type(e).__name__}: {e})") from e
        finally:
            d.close()
    raise AssertionError("unreachable")


def _load(
    p: Path, d: OpenDir, n_jobs: int, do_probe: bool, signing_key: bytes | None = None
) -> ModelBundle:
    manifest = read_manifest(p, d)
    blobs = _verified_bytes(p, manifest, d)
    if (
        signing_key is not None
    ):  # the hashes are verified: the signature of manifest_hash now vouches for every byte
        _check_signature(p, d, manifest, signing_key)
    fz = Featurizer([_family(p, entry, blobs) for entry in manifest["families"]])
    _run_once(fz, p)
    if fz.names != manifest["feature_names"]:
        raise ModelDirError(
            str(p / MANIFEST),
            "feature_names",
            "do not match the feature families stored in the directory",
        )
    state = _json(blobs["model.json"], str(p / "model.json")) if "model.json" in blobs else None
    if state is None:
        raise ModelDirError(str(p / "model.json"), "model.json", "missing")
    boosters = _outcome_boosters(p, blobs, state, len(fz.names), do_probe)
    extra, extra_errors = _extras(p, blobs, do_probe)
    model = _outcome_model(p, state, boosters, fz.names, n_jobs)
    thresholds = (
        _json(blobs["thresholds.json"], str(p / "thresholds.json"))
        if "thresholds.json" in blobs
        else None
    )
    if thresholds is None:
        raise ModelDirError(str(p / "thresholds.json"), "thresholds.json", "missing")
    _check_thresholds(thresholds, str(p / "thresholds.json"), "thresholds.json")
    if thresholds != manifest["thresholds"]:
        raise ModelDirError(str(p / "thresholds.json"), "thresholds", "differ from the manifest's")
    return ModelBundle(
        fz, model, thresholds, manifest.get("training", {}), extra, manifest, extra_errors
    )


def _check_signature(p: Path, d: OpenDir, manifest: dict[str, Any], signing_key: bytes) -> None:
    """``signature.json`` must sign the manifest's hash with the key; one that is missing is ``signature.verify``'s to refuse."""
    try:
        doc = d.read(signature.SIGNATURE, 1 << 16)
    except ModelDirError as e:
        if e.reason != "missing":
            raise
        doc = None
    signature.verify(doc, manifest["manifest_hash"], signing_key, str(p))


def _family(p: Path, entry: dict[str, Any], blobs: dict[str, bytes]) -> FeatureFamily:
    """One family of the manifest rebuilt from its verified files, and checked to make as many features as listed."""
    name = entry.get("name")
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
    meta = _json(blobs.get(f"family_{name}.json", b"{}"), str(p / f"family_{name}.json"))
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
        fam = cls.from_state(meta, arrays)
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


def _outcome_boosters(
    p: Path, blobs: dict[str, bytes], state: Any, n_features: int, do_probe: bool
) -> dict[str, str]:
    """The outcome model's booster texts, checked (and probed): the success booster always, the failure one if listed
    or if ``model.json``'s twin needs it."""
    boosters = {}
    for k in ("success", "failure"):
        key = f"booster_{k}.txt"
        if key in blobs:
            boosters[k] = _checked_booster(
                _booster_text(blobs[key], str(p / key)), str(p / key), n_features
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


def _extras(
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
            v = _json(b, str(p / n))
            texts = [_checked_booster(t, str(p / n), None) for t in _booster_strings(v, [])]
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


def _outcome_model(
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
        model.boosters_[k] = _parse_booster(text, str(p / f"booster_{k}.txt"))
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
        if b.feature_name() != [_lgb_name(n) for n in names] and b.feature_name() != [
            f"Column_{i}" for i in range(nfeat)
        ]:
            raise ModelDirError(
                str(p / f"booster_{k}.txt"),
                "feature_names",
                "the booster was trained on other features than the featurizer makes",
            )
    return model

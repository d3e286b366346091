"""A model directory that is safe to load.

Nothing in it is pickle.  LightGBM boosters are their own text format
(``model_to_string``), calibration and thresholds are JSON, vocabularies are
JSON and SVD components ``.npz`` read with ``allow_pickle=False``.  The manifest
names the format version, the feature list, what the model was trained on, the
library versions and the SHA-256 of every file plus a content hash over them;
loading checks all of it before any file is parsed, so a tampered, truncated or
mismatched directory gets a ``ModelDirError`` naming the file, not a crash deep
inside LightGBM.  Loading never imports or executes anything from the directory:
it reads only the files the manifest lists, by plain name, as bytes (JSON, LightGBM
text, ``.npz`` without pickle); anything else in the directory is never opened.

The hashes detect corruption and careless edits, not an adversary (who can
recompute them): ``manifest_hash`` covers the manifest itself (feature names,
thresholds, file list), ``content_hash`` the files it lists.
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ModelDirError
from .features import FAMILY_CLASSES, Featurizer
from .model import OutcomeModel

FORMAT = "earlyeval-model"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"


@dataclass
class ModelBundle:
    """Everything the Monitor needs: featurizer, calibrated model, thresholds."""

    featurizer: Featurizer
    model: OutcomeModel
    thresholds: dict[str, float]
    training: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. budget estimators' JSON
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def feature_names(self) -> list[str]:
        return self.featurizer.names


def _sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def _versions() -> dict[str, str]:
    import lightgbm
    import sklearn

    from . import __version__

    return {"earlyeval": __version__, "lightgbm": lightgbm.__version__, "scikit-learn": sklearn.__version__,
            "numpy": np.__version__, "python": platform.python_version()}


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def save_model_dir(bundle: ModelBundle, path: str | Path) -> Path:
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
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
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "families": fam_index,
        "feature_names": bundle.featurizer.names,
        "thresholds": bundle.thresholds,
        "training": bundle.training,
        "library_versions": _versions(),
        "files": hashes,
        "content_hash": _sha("".join(f"{n}:{h}\n" for n, h in hashes.items()).encode()),
    }
    manifest = json.loads(json.dumps(manifest))  # hash exactly what a reader will see (tuples -> lists, ...)
    manifest["manifest_hash"] = manifest_hash(manifest)
    for n, b in files.items():
        (out / n).write_bytes(b)
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return out


def manifest_hash(manifest: dict[str, Any]) -> str:
    """SHA-256 of the manifest's canonical JSON without its own ``manifest_hash``."""
    body = {k: v for k, v in manifest.items() if k != "manifest_hash"}
    return _sha(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())


def read_manifest(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    mf = p / MANIFEST
    if not p.is_dir():
        raise ModelDirError(str(p), "<dir>", "not a directory (train a model with `earlyeval train --bench B`)")
    if not mf.exists():
        raise ModelDirError(str(mf), MANIFEST, "missing: not an earlyeval model directory")
    try:
        m = json.loads(mf.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelDirError(str(mf), MANIFEST, f"not valid JSON ({e})") from e
    if not isinstance(m, dict) or m.get("format") != FORMAT:
        raise ModelDirError(str(mf), "format", f"expected '{FORMAT}'")
    if m.get("format_version") != FORMAT_VERSION:
        raise ModelDirError(str(mf), "format_version",
                            f"this earlyeval reads version {FORMAT_VERSION}, the directory is version {m.get('format_version')!r}; retrain or upgrade")
    for key in ("files", "content_hash", "feature_names", "families", "thresholds"):
        if key not in m:
            raise ModelDirError(str(mf), key, "missing from manifest")
    # directories written before manifest_hash existed have none; every directory written now has one
    if "manifest_hash" in m and m["manifest_hash"] != manifest_hash(m):
        raise ModelDirError(str(mf), "manifest_hash", "does not match the manifest's content: manifest edited")
    return m


def _verified_bytes(p: Path, manifest: dict[str, Any]) -> dict[str, bytes]:
    files = manifest["files"]
    if not isinstance(files, dict):
        raise ModelDirError(str(p / MANIFEST), "files", "expected an object of file -> sha256")
    recomputed = _sha("".join(f"{n}:{h}\n" for n, h in sorted(files.items())).encode())
    if recomputed != manifest["content_hash"]:
        raise ModelDirError(str(p / MANIFEST), "content_hash", "does not match the file hashes listed: manifest edited")
    out = {}
    for name, h in files.items():
        if not isinstance(name, str) or "/" in name or "\\" in name or name.startswith(".") or name == MANIFEST:
            raise ModelDirError(str(p / MANIFEST), f"files.{name}", "file names must be plain names inside the directory")
        if not (name.endswith((".json", ".txt", ".npz"))):
            raise ModelDirError(str(p / MANIFEST), f"files.{name}", "only .json, .txt and .npz files belong in a model directory")
        f = p / name
        if not f.is_file() or f.is_symlink():
            raise ModelDirError(str(f), name, "listed in the manifest but missing (or not a regular file)")
        b = f.read_bytes()
        if _sha(b) != h:
            raise ModelDirError(str(f), name, "SHA-256 differs from the manifest: truncated or tampered")
        out[name] = b
    return out


def _json(b: bytes, f: str) -> Any:
    try:
        return json.loads(b.decode())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ModelDirError(f, f, f"not valid JSON ({e})") from e


def _booster_text(b: bytes, f: str) -> str:
    try:
        return b.decode()
    except UnicodeDecodeError as e:
        raise ModelDirError(f, Path(f).name, f"not text ({e})") from e


def _parse_booster(text: str, f: str) -> Any:
    """A LightGBM booster from its text; a truncated or foreign file is a ModelDirError naming it."""
    import lightgbm as lgb

    if not text.startswith("tree\n") or "end of trees" not in text:
        raise ModelDirError(f, Path(f).name, "not a complete LightGBM model text (truncated?)")
    try:
        return lgb.Booster(model_str=text)
    except Exception as e:
        raise ModelDirError(f, Path(f).name, f"LightGBM could not read it ({type(e).__name__}: {e})") from e


def _lgb_name(n: str) -> str:
    """The feature name as LightGBM stores it (it replaces spaces and JSON special characters)."""
    import re

    return re.sub(r"[\s]", "_", n)


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def load_model_dir(path: str | Path, n_jobs: int = 1) -> ModelBundle:
    p = Path(path)
    manifest = read_manifest(p)
    blobs = _verified_bytes(p, manifest)
    families = []
    for entry in manifest["families"]:
        name = entry.get("name")
        if name not in FAMILY_CLASSES:
            raise ModelDirError(str(p / MANIFEST), "families", f"unknown feature family {name!r}")
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
                raise ModelDirError(str(p / key), key, f"cannot read arrays ({type(e).__name__}: {e})") from e
        cls = FAMILY_CLASSES[name]
        try:
            fam = cls.from_state(meta, arrays)
        except Exception as e:  # a missing key or array: name the family's files, not a KeyError
            raise ModelDirError(str(p / f"family_{name}.json"), f"family_{name}",
                                f"cannot rebuild the {name} family ({type(e).__name__}: {e})") from e
        if len(fam.names) != entry.get("n_features"):
            raise ModelDirError(str(p / f"family_{name}.json"), f"families.{name}.n_features",
                                f"the manifest says {entry.get('n_features')}, the stored family makes {len(fam.names)}")
        families.append(fam)
    fz = Featurizer(families)
    if fz.names != manifest["feature_names"]:
        raise ModelDirError(str(p / MANIFEST), "feature_names", "do not match the feature families stored in the directory")
    state = _json(blobs["model.json"], str(p / "model.json")) if "model.json" in blobs else None
    if state is None:
        raise ModelDirError(str(p / "model.json"), "model.json", "missing")
    boosters = {}
    for k in ("success", "failure"):
        key = f"booster_{k}.txt"
        if key in blobs:
            boosters[k] = _booster_text(blobs[key], str(p / key))
    if "success" not in boosters:
        raise ModelDirError(str(p / "booster_success.txt"), "booster_success.txt", "missing")
    if state.get("twin") in ("flipped", "balanced") and "failure" not in boosters:
        raise ModelDirError(str(p / "booster_failure.txt"), "booster_failure.txt", f"missing (model.json says twin={state.get('twin')!r})")
    state["boosters"] = {}
    try:
        model = OutcomeModel.from_state(state, n_jobs=n_jobs)
    except Exception as e:
        raise ModelDirError(str(p / "model.json"), "model.json", f"not a saved OutcomeModel ({type(e).__name__}: {e})") from e
    for k, text in boosters.items():
        model.boosters_[k] = _parse_booster(text, str(p / f"booster_{k}.txt"))
        if k not in model.platt_:
            raise ModelDirError(str(p / "model.json"), f"platt.{k}", "missing calibration for the booster")
    if model.feature_names_ != fz.names:
        raise ModelDirError(str(p / "model.json"), "feature_names", "differ from the featurizer's")
    for k, b in model.boosters_.items():
        nfeat = b.num_feature()
        if nfeat != len(fz.names):
            raise ModelDirError(str(p / f"booster_{k}.txt"), "num_feature", f"booster expects {nfeat} features, featurizer makes {len(fz.names)}")
        if b.feature_name() != [_lgb_name(n) for n in fz.names] and b.feature_name() != [f"Column_{i}" for i in range(nfeat)]:
            raise ModelDirError(str(p / f"booster_{k}.txt"), "feature_names", "the booster was trained on other features than the featurizer makes")
    thresholds = _json(blobs["thresholds.json"], str(p / "thresholds.json")) if "thresholds.json" in blobs else None
    if not isinstance(thresholds, dict) or not all(_is_num(thresholds.get(k)) for k in ("success", "failure")):
        raise ModelDirError(str(p / "thresholds.json"), "thresholds.json", "missing, or without numeric 'success' and 'failure'")
    if thresholds != manifest["thresholds"]:
        raise ModelDirError(str(p / "thresholds.json"), "thresholds", "differ from the manifest's")
    extra = {n[len("extra_"):-len(".json")]: _json(b, str(p / n)) for n, b in blobs.items() if n.startswith("extra_")}
    return ModelBundle(fz, model, thresholds, manifest.get("training", {}), extra, manifest)

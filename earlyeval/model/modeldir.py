"""A model directory that is safe to load.

No pickle; every file hashed in the manifest and checked before anything is parsed; nothing imported or executed
from the directory. The hashes detect corruption, not an adversary. Files and checks: docs/monitor.md, "The model
directory".
"""

from __future__ import annotations

import hashlib
import io
import json
import platform
import shutil
from dataclasses import dataclass, field
from importlib.metadata import version as _dist_version
from pathlib import Path
from typing import Any

import numpy as np

from earlyeval.config import file_schemas, schema
from earlyeval.core import atomic
from earlyeval.core.env import env_int
from earlyeval.core.errors import ModelDirError, SettingError
from earlyeval.core.version import (
    __version__,  # not the facade's: that would close earlyeval -> monitor -> modeldir -> earlyeval
)
from earlyeval.features import Featurizer
from earlyeval.model import signature
from earlyeval.model.boostercheck import probe_enabled
from earlyeval.model.modelfiles import (
    MANIFEST,
    extras,
    outcome_boosters,
    outcome_model,
    read_json,
    rebuilt_family,
    run_once,
)
from earlyeval.model.safedir import OpenDir

FORMAT = "earlyeval-model"
FORMAT_VERSION = 1


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
    named: dict[str, Any] = {
        k: np.asarray(v) for k, v in arrays.items()
    }  # by name, as np.load gives them back
    np.savez_compressed(buf, **named)
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
    checked: dict[str, Any] = schema.check(
        file_schemas.MANIFEST, m, lambda key, why: ModelDirError(mf, key, why)
    )
    return checked


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
        m = read_json(d.read(MANIFEST, MAX_MANIFEST_BYTES), mf)
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
    fz = Featurizer([rebuilt_family(p, entry, blobs) for entry in manifest["families"]])
    run_once(fz, p)
    if fz.names != manifest["feature_names"]:
        raise ModelDirError(
            str(p / MANIFEST),
            "feature_names",
            "do not match the feature families stored in the directory",
        )
    state = read_json(blobs["model.json"], str(p / "model.json")) if "model.json" in blobs else None
    if state is None:
        raise ModelDirError(str(p / "model.json"), "model.json", "missing")
    boosters = outcome_boosters(p, blobs, state, len(fz.names), do_probe)
    extra, extra_errors = extras(p, blobs, do_probe)
    model = outcome_model(p, state, boosters, fz.names, n_jobs)
    thresholds = (
        read_json(blobs["thresholds.json"], str(p / "thresholds.json"))
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

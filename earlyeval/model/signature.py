"""A keyed signature of a model directory (HMAC-SHA256 with a user key), for ``require_signature``.

The manifest's hashes detect corruption and careless edits; anyone can recompute them.  A signature
made with a key the user keeps (``EARLYEVAL_MODEL_KEY``, or a file named by ``EARLYEVAL_MODEL_KEY_FILE``)
covers ``manifest_hash``, which covers the manifest (thresholds, feature names, the file list and every
file's SHA-256): an edited and re-hashed directory no longer matches it.  ``signature.json`` sits beside
the manifest, outside its file list (it signs the list).  What it does and does not defend against:
docs/monitor.md, "Signed model directories".
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

from earlyeval.core.errors import IngestError, ModelDirError, SettingError, StrictJSONError
from earlyeval.core.jsonio import loads_strict, read_bytes

SIGNATURE = "signature.json"
FORMAT = "earlyeval-signature"
_DOMAIN = b"earlyeval model directory, manifest_hash, v1\n"  # what is signed, so the MAC means nothing elsewhere
MIN_KEY_BYTES = 16
MAX_KEY_FILE_BYTES = 64 << 10  # a key file is a key, not a data file


def model_key(key: bytes | str | None = None) -> bytes | None:
    """The signing key: ``key`` if given, else ``$EARLYEVAL_MODEL_KEY``, else the bytes of the file
    ``$EARLYEVAL_MODEL_KEY_FILE`` (one trailing newline dropped); None when there is none.  A key shorter
    than 16 bytes is refused (a guessable key defends nothing)."""
    source = "key"
    if key is None:
        env, path = (
            os.environ.get("EARLYEVAL_MODEL_KEY"),
            os.environ.get("EARLYEVAL_MODEL_KEY_FILE"),
        )
        if env:
            key, source = env, "EARLYEVAL_MODEL_KEY"
        elif path:
            source = "EARLYEVAL_MODEL_KEY_FILE"
            try:  # bounded (core.jsonio.read_bytes): EARLYEVAL_MODEL_KEY_FILE=/dev/zero is refused, not read forever
                key = read_bytes(Path(path).expanduser(), max_bytes=MAX_KEY_FILE_BYTES)
            except IngestError as e:
                raise SettingError(
                    "environment", source, f"cannot read the key file {path!r} ({e.reason})"
                ) from e
            key = key[:-1] if key.endswith(b"\n") else key
        else:
            return None
    k = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    if len(k) < MIN_KEY_BYTES:
        raise SettingError(
            "environment" if source != "key" else "Monitor.load",
            source,
            f"the signing key has {len(k)} bytes, fewer than {MIN_KEY_BYTES}",
        )
    return k


def mac_of(key: bytes, domain: bytes, payload: bytes) -> str:
    """HMAC-SHA256 of ``payload`` under ``key``, ``domain`` first (a line naming what is signed, so that a MAC
    made for one kind of file means nothing for another): the model directory's and the pass state's."""
    return hmac.new(key, domain + payload, hashlib.sha256).hexdigest()


def macs_match(expected: str, given: Any) -> bool:
    return isinstance(given, str) and hmac.compare_digest(expected, given)


def sign(manifest_hash: str, key: bytes) -> bytes:
    """The ``signature.json`` bytes for a manifest hash."""
    mac = mac_of(key, _DOMAIN, manifest_hash.encode("ascii"))
    doc = {
        "format": FORMAT,
        "version": 1,
        "algorithm": "HMAC-SHA256",
        "signs": "manifest_hash",
        "signature": mac,
    }
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def verify(doc_bytes: bytes | None, manifest_hash: str, key: bytes, path: str) -> None:
    """Refuse (``ModelDirError`` naming signature.json) unless ``doc_bytes`` signs ``manifest_hash`` with ``key``."""
    f = str(Path(path) / SIGNATURE)
    if doc_bytes is None:
        raise ModelDirError(
            f,
            SIGNATURE,
            "missing: the directory is not signed (train it with EARLYEVAL_MODEL_KEY set)",
        )
    try:
        doc: Any = loads_strict(doc_bytes.decode())
    except UnicodeDecodeError as e:
        raise ModelDirError(f, SIGNATURE, f"not valid JSON ({type(e).__name__})") from e
    except StrictJSONError as e:  # a key given twice is named
        field = SIGNATURE if e.key == "<json>" else f"{SIGNATURE}: {e.key}"
        raise ModelDirError(f, field, f"not valid JSON ({e.reason})") from e
    if (
        not isinstance(doc, dict)
        or doc.get("format") != FORMAT
        or doc.get("algorithm") != "HMAC-SHA256"
        or not isinstance(doc.get("signature"), str)
    ):
        raise ModelDirError(
            f, SIGNATURE, f"not an {FORMAT} file (format, algorithm HMAC-SHA256, signature)"
        )
    expect = mac_of(key, _DOMAIN, manifest_hash.encode("ascii"))
    if not macs_match(expect, doc["signature"]):
        raise ModelDirError(
            f,
            SIGNATURE,
            "does not match this key: the directory was edited after it was signed, "
            "or signed with another key",
        )


# ---- a verified directory's pin: what the driver checked, sent with each task of a cluster (``scale.replay``)


def pin_of(bundle: Any, require_signature: bool) -> dict[str, Any]:
    """What a load verified (``manifest_hash``, which covers every file's SHA-256, and the thresholds it halts
    with) and whether a signature was required: a worker's own load must give the same (``check_pin``)."""
    return {
        "manifest_hash": bundle.manifest.get("manifest_hash"),
        "thresholds": dict(bundle.thresholds),
        "require_signature": bool(require_signature),
    }


def check_pin(bundle: Any, pin: dict[str, Any], path: str) -> None:
    """Refuse (``ModelDirError``) a bundle loaded elsewhere that is not the one ``pin`` was made of."""
    got = bundle.manifest.get("manifest_hash")
    if got != pin["manifest_hash"]:
        raise ModelDirError(
            path,
            "manifest_hash",
            f"is {str(got)[:12]}... on the worker, {str(pin['manifest_hash'])[:12]}... "
            "when the driver checked it: the directory changed during the verb; nothing scored",
        )
    if dict(bundle.thresholds) != pin["thresholds"]:
        raise ModelDirError(
            path,
            "thresholds",
            f"{dict(bundle.thresholds)} on the worker, {pin['thresholds']} when the "
            "driver checked them: the directory changed during the verb; nothing scored",
        )

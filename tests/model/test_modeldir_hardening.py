"""A damaged model directory gives a ModelDirError naming the file; loading executes nothing from it."""

from __future__ import annotations

import io
import json
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from _monitor_helpers import save_tiny

from earlyeval.core.errors import ModelDirError
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import MANIFEST, _sha, load_model_dir, manifest_hash


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    path, *_ = save_tiny(
        tmp_path_factory.mktemp("pristine") / "m", families=("behaviour", "text", "prior"), n=50
    )
    return path


@pytest.fixture
def mdir(pristine, tmp_path):
    d = tmp_path / "m"
    shutil.copytree(pristine, d)
    return d


def _manifest(d: Path) -> dict:
    return json.loads((d / MANIFEST).read_text())


def _rehash(d: Path, names: list[str] | None = None) -> None:
    """What a careless tool (or an attacker) would do: recompute every hash so only the content is wrong."""
    m = _manifest(d)
    for n in names or list(m["files"]):
        m["files"][n] = _sha((d / n).read_bytes())
    m["content_hash"] = _sha("".join(f"{n}:{h}\n" for n, h in sorted(m["files"].items())).encode())
    m["manifest_hash"] = manifest_hash(m)
    (d / MANIFEST).write_text(json.dumps(m, indent=1))


def _err(d: Path) -> ModelDirError:
    with pytest.raises(ModelDirError) as ei:
        load_model_dir(d)
    return ei.value


def test_pristine_loads_and_is_complete(mdir):
    b = load_model_dir(mdir)
    assert set(b.featurizer.family_names) == {"behaviour", "text", "prior"}
    assert (mdir / "family_text.npz").exists() and "manifest_hash" in _manifest(mdir)


def test_one_byte_changed_in_booster(mdir):
    f = mdir / "booster_success.txt"
    b = bytearray(f.read_bytes())
    b[len(b) // 2] ^= 0x01
    f.write_bytes(bytes(b))
    e = _err(mdir)
    assert e.path.endswith("booster_success.txt") and "SHA-256" in e.reason


def test_truncated_booster_even_when_rehashed(mdir):
    f = mdir / "booster_success.txt"
    f.write_bytes(f.read_bytes()[: len(f.read_bytes()) // 3])
    assert "truncated" in _err(mdir).reason
    _rehash(mdir)
    e = _err(mdir)
    assert e.path.endswith("booster_success.txt") and (
        "truncated" in e.reason or "LightGBM" in e.reason
    )


def test_garbage_booster_rehashed_is_named(mdir):
    (mdir / "booster_success.txt").write_text("tree\nversion=v4\nnum_class=banana\nend of trees\n")
    _rehash(mdir)
    e = _err(mdir)
    assert e.path.endswith("booster_success.txt") and "no Tree= line" in e.reason


def test_missing_file(mdir):
    (mdir / "thresholds.json").unlink()
    e = _err(mdir)
    assert e.path.endswith("thresholds.json") and "missing" in e.reason


def test_missing_manifest_and_not_a_dir(mdir, tmp_path):
    (mdir / MANIFEST).unlink()
    assert "missing" in _err(mdir).reason
    assert "not a directory" in _err(tmp_path / "nope").reason


@pytest.mark.parametrize(
    "field,value",
    [
        ("thresholds", {"success": 0.1, "failure": 0.1, "min_halt_step": 1}),
        ("feature_names", ["step"]),
        ("files", {}),
    ],
)
def test_edited_manifest(mdir, field, value):
    m = _manifest(mdir)
    m[field] = value
    (mdir / MANIFEST).write_text(json.dumps(m))
    e = _err(mdir)
    assert e.path.endswith(MANIFEST) and e.field in ("manifest_hash", "content_hash")


def test_manifest_not_json(mdir):
    (mdir / MANIFEST).write_text("{not json")
    e = _err(mdir)
    assert e.path.endswith(MANIFEST) and "JSON" in e.reason


def test_format_version_mismatch(mdir):
    m = _manifest(mdir)
    m["format_version"] = 99
    (mdir / MANIFEST).write_text(json.dumps(m))
    e = _err(mdir)
    assert e.field == "format_version" and "99" in e.reason and e.path.endswith(MANIFEST)


def test_feature_list_mismatch(mdir):
    m = _manifest(mdir)
    m["feature_names"] = m["feature_names"][:-1] + ["something_else"]
    m["manifest_hash"] = manifest_hash(m)
    (mdir / MANIFEST).write_text(json.dumps(m))
    e = _err(mdir)
    assert e.field == "feature_names" and e.path.endswith(MANIFEST)


def test_model_json_feature_names_mismatch(mdir):
    d = json.loads((mdir / "model.json").read_text())
    d["feature_names"] = d["feature_names"][::-1]
    (mdir / "model.json").write_text(json.dumps(d))
    _rehash(mdir)
    e = _err(mdir)
    assert e.path.endswith("model.json") and e.field == "feature_names"


def test_booster_of_another_width(mdir, tmp_path):
    other, *_ = save_tiny(tmp_path / "other", families=("behaviour",), n=40)
    shutil.copy(other / "booster_success.txt", mdir / "booster_success.txt")
    _rehash(mdir)
    e = _err(mdir)
    narrow = len(json.loads((other / "model.json").read_text())["feature_names"])
    wide = len(json.loads((mdir / "model.json").read_text())["feature_names"])
    assert narrow < wide
    # refused by the structural check, before LightGBM parses it
    assert e.path.endswith("booster_success.txt")
    assert f"{narrow} features, expected {wide}" in e.reason


def test_thresholds_without_numbers(mdir):
    (mdir / "thresholds.json").write_text(json.dumps({"success": "high"}))
    _rehash(mdir)
    e = _err(mdir)
    assert e.path.endswith("thresholds.json")


def test_corrupt_npz(mdir):
    f = mdir / "family_text.npz"
    f.write_bytes(b"PK\x03\x04" + f.read_bytes()[4:200])
    _rehash(mdir)
    e = _err(mdir)
    assert e.path.endswith("family_text.npz") and "cannot read arrays" in e.reason


def test_npz_with_pickled_object_array_is_refused(mdir):
    """An object array inside the .npz would need pickle; allow_pickle=False refuses it, named."""
    with np.load(mdir / "family_text.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["prompt.idf"] = np.array([{"evil": 1}], dtype=object)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    (mdir / "family_text.npz").write_bytes(buf.getvalue())
    _rehash(mdir)
    e = _err(mdir)
    assert e.path.endswith("family_text.npz") and "pickle" in e.reason.lower()


def test_family_json_missing_key_is_named(mdir):
    d = json.loads((mdir / "family_text.json").read_text())
    del d["vocab"]
    (mdir / "family_text.json").write_text(json.dumps(d))
    _rehash(mdir)
    e = _err(mdir)
    assert e.path.endswith("family_text.json") and "KeyError" in e.reason


def test_path_outside_the_directory_is_refused(mdir):
    m = _manifest(mdir)
    m["files"]["../escape.json"] = "0" * 64
    m["content_hash"] = _sha("".join(f"{n}:{h}\n" for n, h in sorted(m["files"].items())).encode())
    m["manifest_hash"] = manifest_hash(m)
    (mdir / MANIFEST).write_text(json.dumps(m))
    assert "plain names" in _err(mdir).reason


class _Boom:
    """Unpickling it writes the sentinel file."""

    def __init__(self, sentinel: Path):
        self.sentinel = sentinel

    def __reduce__(self):
        return (Path.write_text, (self.sentinel, "unpickled"))


def test_loading_executes_nothing_from_the_directory(mdir, monkeypatch, tmp_path):
    sentinel = tmp_path / "executed"
    code = f"open({str(sentinel)!r}, 'w').write('ran')\n"
    (mdir / "__init__.py").write_text(code)
    (mdir / "evil.pth").write_text(f"import os; {code}")
    (mdir / "sitecustomize.py").write_text(code)
    (mdir / "model.pkl").write_bytes(pickle.dumps(_Boom(sentinel)))
    # listing a pickle in the manifest does not make it loadable
    m = _manifest(mdir)
    m["files"]["model.pkl"] = _sha((mdir / "model.pkl").read_bytes())
    m["content_hash"] = _sha("".join(f"{n}:{h}\n" for n, h in sorted(m["files"].items())).encode())
    m["manifest_hash"] = manifest_hash(m)
    (mdir / MANIFEST).write_text(json.dumps(m))
    assert "only .json, .txt and .npz" in _err(mdir).reason
    del m["files"]["model.pkl"]
    m["content_hash"] = _sha("".join(f"{n}:{h}\n" for n, h in sorted(m["files"].items())).encode())
    m["manifest_hash"] = manifest_hash(m)
    (mdir / MANIFEST).write_text(json.dumps(m))

    def no_pickle(*a, **k):
        raise AssertionError("pickle used while loading a model directory")

    real_np_load = np.load

    def checked_np_load(*a, **k):
        assert k.get("allow_pickle") is False, "np.load without allow_pickle=False"
        return real_np_load(*a, **k)

    from earlyeval.model.safedir import OpenDir

    opened = []
    real_read = OpenDir.read

    def tracked(self, name, limit):
        opened.append(name)
        return real_read(self, name, limit)

    monkeypatch.setattr(pickle, "load", no_pickle)
    monkeypatch.setattr(pickle, "loads", no_pickle)
    monkeypatch.setattr(pickle, "Unpickler", no_pickle)
    monkeypatch.setattr(np, "load", checked_np_load)
    monkeypatch.setattr(OpenDir, "read", tracked)
    before = set(sys.modules)
    mon = Monitor.load(mdir)
    assert mon.loaded.feature_names
    assert not sentinel.exists()
    assert not {
        m for m in set(sys.modules) - before if "sitecustomize" in m or m == "m" or "evil" in m
    }
    assert str(mdir) not in sys.path
    assert not {"__init__.py", "evil.pth", "sitecustomize.py", "model.pkl"} & set(opened)
    # exactly the manifest and the listed files, nothing else
    assert set(opened) == set(m["files"]) | {MANIFEST}

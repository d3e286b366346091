"""A keyed signature (HMAC-SHA256 of manifest_hash) that ``require_signature`` checks: a re-hashed edit is refused."""

from __future__ import annotations

import json
import shutil

import pytest
from _monitor_helpers import save_tiny
from faults import rehash

from earlyeval.core.errors import ModelDirError, SettingError
from earlyeval.live.monitor import Monitor
from earlyeval.model.modeldir import load_model_dir, save_model_dir
from earlyeval.model.signature import SIGNATURE

KEY = "correct horse battery staple, 32b"


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    path, bundle, _, _ = save_tiny(tmp_path_factory.mktemp("sig") / "plain", n=40)
    out = save_model_dir(load_model_dir(path), tmp_path_factory.mktemp("sig") / "signed", key=KEY)
    return path, out


def test_signed_dir_loads_with_its_key_and_plain_loading_is_unchanged(signed, monkeypatch):
    plain, out = signed
    assert (out / SIGNATURE).is_file() and not (plain / SIGNATURE).exists()
    # it signs the list, outside it
    assert SIGNATURE not in json.loads((out / "manifest.json").read_text())["files"]
    Monitor.load(out, require_signature=True, key=KEY, budget=False)
    monkeypatch.setenv("EARLYEVAL_MODEL_KEY", KEY)
    Monitor.load(out, require_signature=True, budget=False)
    Monitor.load(plain, budget=False)  # the default checks the hashes only


@pytest.mark.parametrize("edit", ["thresholds", "leaf", "signature"])
def test_a_rehashed_edit_is_refused(signed, tmp_path, edit):
    _, out = signed
    d = tmp_path / "edited"
    shutil.copytree(out, d)
    if edit == "thresholds":
        th = json.loads((d / "thresholds.json").read_text())
        th["success"] = 0.51
        (d / "thresholds.json").write_text(json.dumps(th))
        m = json.loads((d / "manifest.json").read_text())
        m["thresholds"] = th
        (d / "manifest.json").write_text(json.dumps(m))
    elif edit == "leaf":
        text = (
            d / "booster_success.txt"
        ).read_text()  # the first leaf value of the first tree, still a number
        i = text.index("leaf_value=") + len("leaf_value=")
        j = min(k for k in (text.find(" ", i), text.find("\n", i)) if k > 0)
        (d / "booster_success.txt").write_text(text[:i] + "0.75" + text[j:])
    else:
        (d / SIGNATURE).unlink()
    rehash(d)
    # the hashes alone accept it: that is what a signature is for
    load_model_dir(d, probe_boosters=False)
    with pytest.raises(ModelDirError, match="signature.json") as e:
        load_model_dir(d, probe_boosters=False, require_signature=True, key=KEY)
    assert ("missing" if edit == "signature" else "does not match") in e.value.reason


def test_wrong_short_or_absent_key(signed, monkeypatch):
    _, out = signed
    with pytest.raises(ModelDirError, match="does not match this key"):
        load_model_dir(
            out, probe_boosters=False, require_signature=True, key="another key of 32 bytes......"
        )
    with pytest.raises(SettingError, match="fewer than 16"):
        load_model_dir(out, probe_boosters=False, require_signature=True, key="short")
    monkeypatch.delenv("EARLYEVAL_MODEL_KEY", raising=False)
    monkeypatch.delenv("EARLYEVAL_MODEL_KEY_FILE", raising=False)
    with pytest.raises(SettingError, match="EARLYEVAL_MODEL_KEY"):
        load_model_dir(out, probe_boosters=False, require_signature=True)

"""The pass state file (issue 43 item 1): bound to its model and settings, thresholds re-derived from its records,
records checked one by one, an optional keyed signature, bounded reads of regular files only, links resolved
once, strict JSON written."""

from __future__ import annotations

import json
import os
import threading

import _paths  # noqa: F401
import pytest
from _monitor_helpers import ALWAYS_FAIL, constant_model

from earlyeval.core.errors import PassStateError, SettingError
from earlyeval.live.benchpass import Pass
from earlyeval.live.monitor import Monitor
from earlyeval.model.policy import NEVER

KEY = "k" * 32
PROBS = [[0.4, 0.6]] * 3  # halted as failure at 0.6 from step 2 on (ALWAYS_FAIL's min_halt_step)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    base = tmp_path_factory.mktemp("pst")
    return (
        constant_model(base / "a", 0.2, ALWAYS_FAIL),
        constant_model(base / "b", 0.3, ALWAYS_FAIL),
    )


def _pass(model, path, **kw):
    kw.setdefault("audit_share", 1.0)
    kw.setdefault("alpha", 0.5)
    kw.setdefault("max_error", 0.8)
    return Pass(Monitor.load(model), path, **kw)


def _graded(p: Pass, n: int, outcome: int = 0) -> None:
    for i in range(n):
        p.finish(f"r{i}", steps=3, outcome=outcome, probs=PROBS)


def _edit(path, fn) -> None:
    st = json.loads(path.read_text())
    fn(st)
    path.write_text(json.dumps(st))


def test_the_state_names_its_model_and_settings_and_another_pass_refuses_it(models, tmp_path):
    a, b = models
    path = tmp_path / "pass.json"
    _graded(_pass(a, path), 2)
    st = json.loads(path.read_text())
    assert st["format"] == "earlyeval-pass-state" and st["version"] == 2
    assert st["pass"]["model_content_hash"] == Monitor.load(a).bundle.manifest["content_hash"]
    assert st["pass"]["seed"] == 0 and st["pass"]["audit_share"] == 1.0
    with pytest.raises(PassStateError, match="pass.model_content_hash") as e:
        _pass(b, path)
    assert e.value.file == str(path) and "another model or with other settings" in str(e.value)
    for kw, field in (({"seed": 3}, "pass.seed"), ({"max_error": 0.5}, "pass.max_error")):
        with pytest.raises(PassStateError, match=field):
            _pass(a, path, **kw)
    with pytest.raises(PassStateError, match="pass.halt_on"):
        Pass(Monitor.load(a, halt_on="failure"), path, audit_share=1.0, alpha=0.5, max_error=0.8)
    assert _pass(a, path).status == "resumed"  # the same settings resume it


def test_thresholds_written_in_the_file_are_never_read_back(models, tmp_path):
    a, _ = models
    path = tmp_path / "pass.json"
    p = _pass(a, path)
    _graded(p, 3)  # 3 right failure halts at 0.6: nothing certified bolder at alpha 0.5 / 3 runs
    derived = p.thresholds
    _edit(path, lambda st: st.__setitem__("thresholds", [0.51, 0.51]))
    q = _pass(a, path)
    assert q.thresholds == derived and q.monitor("r9").rule.failure == derived[1]


def test_a_bad_record_is_left_out_named_and_the_pass_is_never_bolder_meanwhile(models, tmp_path):
    a, _ = models
    path = tmp_path / "pass.json"
    p = _pass(a, path, alpha=0.9, max_error=0.9)
    _graded(p, 12)  # every failure halt right: the failure side certified bolder than label-free
    bold = p.thresholds
    assert bold[1] < 0.6
    good = json.loads(path.read_text())["finished"]["r0"]
    for bad in ({"outcome": 2}, {"outcome": True}, {"steps": "x"}, {"audited": False}):
        _edit(path, lambda st, bad=bad: st["finished"]["r0"].update(bad))
        q = _pass(a, path, alpha=0.9, max_error=0.9)
        field = next(iter(bad))
        assert any("'r0' left out" in w and f"finished.r0.{field}" in w for w in q.warnings), (
            q.warnings
        )
        assert "r0" not in q.state["finished"] and len(q.state["finished"]) == 11
        assert q.thresholds[1] >= 0.6  # never bolder than label-free while a record is bad
        q.finish("r11", steps=3, outcome=0, probs=PROBS)  # the bad record is kept as written
        assert json.loads(path.read_text())["finished"]["r0"][field] == bad[field]
        _edit(path, lambda st: st["finished"].update({"r0": good}))
    q = _pass(a, path, alpha=0.9, max_error=0.9)
    assert q.thresholds == bold and not q.warnings


def test_the_api_refuses_a_grade_outside_0_1_and_never_writes_nan(models, tmp_path):
    a, _ = models
    path = tmp_path / "pass.json"
    p = _pass(a, path)
    for bad in (2, 0.5, "1", float("nan")):
        with pytest.raises(ValueError, match="outcome must be 0 or 1"):
            p.finish("x", steps=3, outcome=bad)
    p.finish(
        "x",
        steps=3,
        outcome=True,
        cost=float("nan"),
        tokens=float("inf"),
        probs=[[0.5, float("nan")]],
    )
    text = path.read_text()
    rec = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} written"))["finished"]["x"]
    assert (
        rec["outcome"] == 1
        and rec["cost"] is None
        and rec["tokens"] is None
        and rec["probs"] == [None]
    )


def test_a_signed_state_is_refused_when_edited_unsigned_or_of_another_key(
    models, tmp_path, monkeypatch
):
    a, _ = models
    path = tmp_path / "pass.json"
    monkeypatch.setenv("EARLYEVAL_MODEL_KEY", KEY)
    _graded(_pass(a, path), 2)
    assert json.loads(path.read_text())["signature"]["algorithm"] == "HMAC-SHA256"
    assert _pass(a, path).status == "resumed"
    good = path.read_text()
    _edit(path, lambda st: st["finished"]["r0"].update({"outcome": 1}))
    with pytest.raises(PassStateError, match="'signature': does not match this key"):
        _pass(a, path)
    _edit(path, lambda st: st.pop("signature"))
    with pytest.raises(PassStateError, match="'signature': missing"):
        _pass(a, path)
    path.write_text(good)
    with pytest.raises(PassStateError, match="does not match this key"):
        _pass(a, path, key="z" * 32)
    monkeypatch.delenv("EARLYEVAL_MODEL_KEY")
    with pytest.raises(SettingError, match="require_signature"):
        _pass(a, path, require_signature=True)


@pytest.mark.parametrize("kind", ["fifo", "chardev", "folder", "big"])
def test_a_state_that_is_not_a_small_regular_file_is_refused_not_read(models, tmp_path, kind):
    a, _ = models
    path = tmp_path / "pass.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "chardev":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_bytes(b" " * 200)
    out: list = []

    def build():
        try:
            out.append(Pass(Monitor.load(a), path, audit_share=1.0) if kind != "big" else None)
            if kind == "big":
                from earlyeval.live.pass_state import StateFile

                p = Pass(Monitor.load(a), None, audit_share=1.0)
                StateFile(path, p.settings, None, max_bytes=100).read()
        except PassStateError as e:
            out.append(e)

    t = threading.Thread(target=build, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "blocked on the state file"
    assert isinstance(out[-1], PassStateError) and out[-1].field == "<file>"
    assert "not a regular file" in str(out[-1]) or "more than 100" in str(out[-1])


def test_a_link_to_the_state_is_resolved_once_and_every_worker_writes_the_real_file(
    models, tmp_path
):
    a, _ = models
    real = tmp_path / "real.json"
    link = tmp_path / "pass.json"
    link.symlink_to(real.name)
    by_link, by_real = _pass(a, link), _pass(a, real)
    assert by_link.path == by_real.path == real
    by_link.finish("r0", steps=3)
    by_real.finish("r1", steps=3)
    by_link.finish("r2", steps=3)
    assert link.is_symlink() and os.readlink(link) == real.name
    assert set(json.loads(real.read_text())["finished"]) == {"r0", "r1", "r2"}


def test_a_repeated_key_in_the_state_is_refused_naming_it(models, tmp_path):
    a, _ = models
    path = tmp_path / "pass.json"
    _graded(_pass(a, path), 1)
    text = path.read_text().replace('"version": 2', '"version": 2, "version": 2', 1)
    path.write_text(text)
    with pytest.raises(PassStateError, match="'version': the key 'version' is given twice"):
        _pass(a, path)


def test_an_in_memory_pass_derives_as_a_file_pass_does(models, tmp_path):
    a, _ = models
    mem, disk = (
        _pass(a, None, alpha=0.9, max_error=0.9),
        _pass(a, tmp_path / "p.json", alpha=0.9, max_error=0.9),
    )
    for p in (mem, disk):
        _graded(p, 12)
    assert mem.thresholds == disk.thresholds and mem.history == disk.history
    assert mem.thresholds[0] == NEVER or mem.thresholds[0] >= 0.5

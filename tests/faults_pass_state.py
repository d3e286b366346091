"""Fault cases of the class "pass state": a benchmark pass's state file edited, swapped, corrupted, linked or
replaced by something that is not a file.  Shared by tests/test_faults.py and tools/fault_summary.py.

Each case goes through the public ``Pass`` (``live.benchpass``), as an adapter's ``pass`` block or ``score --pass``
builds it, on the suite's tiny model.  A case returns ("ok" | "named" | "silent", detail) or ("absent", why);
an exception other than the refusal the case expects is a crash.  "ok": the pass went on and said what it did
(a bad record left out with a warning naming the run, thresholds never bolder than label-free meanwhile);
"named": refused with an error naming the file and the field; "silent": the pass took what the file said."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Callable

from faults import Env

KEY = "k" * 32
PROBS = [[0.3, 0.7]] * 4  # a failure halt from the tiny model's min_halt_step on


def _model(env: Env, name: str = "tiny") -> Path:
    return env.tiny()[0] if name == "tiny" else env.copy_model(name)


def _pass(env: Env, path: Path | None, **kw: Any):
    from earlyeval.live.benchpass import Pass
    from earlyeval.live.monitor import Monitor

    kw.setdefault("audit_share", 1.0)
    kw.setdefault("alpha", 0.9)
    kw.setdefault("max_error", 0.9)
    return Pass(Monitor.load(kw.pop("model", _model(env))), path, **kw)


def _state(env: Env, name: str, n: int = 12, **kw: Any) -> tuple[Path, Any]:
    """A state of ``n`` graded audit runs, every failure halt right (so the failure side moves bolder)."""
    d = env.base / "pass_state" / name
    d.mkdir(parents=True, exist_ok=True)
    path = d / "pass.json"
    path.unlink(missing_ok=True)
    p = _pass(env, path, **kw)
    for i in range(n):
        p.finish(f"r{i}", steps=4, outcome=0, probs=PROBS)
    return path, p


def _edit(path: Path, fn: Callable[[dict], None]) -> None:
    st = json.loads(path.read_text())
    fn(st)
    path.write_text(json.dumps(st))


def _refused(fn: Callable[[], Any], field: str, path: Path) -> tuple[str, str]:
    """ "named" when ``fn`` raises ``PassStateError`` naming ``path`` and ``field``; "silent" when it resumes."""
    from earlyeval.core.errors import PassStateError

    try:
        p = fn()
    except PassStateError as e:
        ok = e.file == str(path.resolve()) and field in e.field and "\n" not in str(e)
        return ("named" if ok else "silent", f"refused: {str(e)[:150]}")
    return ("silent", f"resumed ({p.status}), thresholds {p.thresholds}")


# ------------------------------------------------------------------ bound to its model and settings


def _other_pass_case(what: str):
    """A state resumed by a pass on another model or with another seed, share, alpha, max_error or halt_on."""

    def case(env: Env):
        path, _ = _state(env, f"other_{what.replace(' ', '_')}")
        kw: dict[str, Any] = {
            "model": {"model": _model(env, "pass_other_model")},
            "seed": {"seed": 7},
            "audit share": {"audit_share": 0.5},
            "alpha": {"alpha": 0.5},
            "max error": {"max_error": 0.5},
        }.get(what, {})
        if (
            what == "model"
        ):  # the same model, one file's bytes changed (a space): another content hash
            m = kw.pop("model")
            f = m / "family_behaviour.json"
            f.write_text(f.read_text() + " ")
            from faults import rehash

            rehash(m)
            kw["model"] = m
        if what == "halt_on":
            from earlyeval.live.benchpass import Pass
            from earlyeval.live.monitor import Monitor

            mon = Monitor.load(_model(env), halt_on="failure")
            fn: Callable[[], Any] = lambda: Pass(
                mon, path, audit_share=1.0, alpha=0.9, max_error=0.9
            )
        else:
            fn = lambda: _pass(env, path, **kw)  # noqa: E731
        field = {"model": "pass.model_content_hash", "audit share": "pass.audit_share"}.get(
            what, f"pass.{what.replace(' ', '_')}"
        )
        return _refused(fn, field, path)

    return case


def case_thresholds_edited(env: Env):
    """The stored thresholds edited to (0.51, 0.51): resumed, and the pair in force is the records' own."""
    path, p = _state(env, "edited")
    derived = p.thresholds
    _edit(path, lambda st: st.__setitem__("thresholds", [0.51, 0.51]))
    q = _pass(env, path)
    m = q.monitor("fresh-run")
    tf = getattr(m, "monitor", m).rule.failure
    ok = q.thresholds == derived and tf == derived[1] and q.status == "resumed"
    return (
        "ok" if ok else "silent",
        f"file says 0.51, pass uses {q.thresholds} (derived {derived})",
    )


def case_history_forged(env: Env):
    """Extra graded-looking history entries: the history is derived from the records, so they are ignored."""
    path, p = _state(env, "history")
    _edit(path, lambda st: st.__setitem__("thresholds", [0.55, 0.55]))
    q = _pass(env, path)
    ok = len(q.history) == 12 and q.history[-1]["thresholds"] == list(p.thresholds)
    return ("ok" if ok else "silent", f"history of {len(q.history)} entries, last {q.history[-1]}")


# ------------------------------------------------------------------ records checked one by one

BAD_RECORDS: dict[str, Any] = {
    "a grade of 2": {"outcome": 2},
    "a grade true": {"outcome": True},
    "a grade '1'": {"outcome": "1"},
    "a grade of 0.5": {"outcome": 0.5},
    "steps -1": {"steps": -1},
    "steps as text": {"steps": "four"},
    "audited flipped": {"audited": False},
    "an audited run halted": {"halted": True},
    "probabilities out of [0, 1]": {"probs": [[1.5, -0.5]]},
    "probabilities as text": {"probs": "[[0.3, 0.7]]"},
    "a bad profile": {"profile": {"steps": 2, "first_edit": 9, "tests": 0}},
    "an unknown field": {"bonus": 1},
    "a missing field": {"steps": None},
    "a record that is a list": None,
}


def _bad_record_case(what: str):
    """One record of a certified state made bad: resumed without it, a warning naming the run, the other records
    kept, and the pass never bolder than label-free while it is there; the record kept in the file as written."""

    def case(env: Env):
        path, p = _state(env, f"bad_{abs(hash(what)) % 10**6}")
        bold, base = p.thresholds, p.base
        change = BAD_RECORDS[what]

        def edit(st: dict) -> None:
            if change is None:
                st["finished"]["r0"] = [1, 2, 3]
            elif change == {"steps": None}:
                st["finished"]["r0"].pop("steps")
            else:
                st["finished"]["r0"].update(change)

        _edit(path, edit)
        q = _pass(env, path)
        named = [w for w in q.warnings if "'r0'" in w and str(path) in w]
        cautious = all(t >= b for t, b in zip(q.thresholds, base))
        q.finish("r99", steps=4)  # goes on, and writes
        kept = json.loads(path.read_text())["finished"]["r0"]
        ok = (
            named
            and cautious
            and len(q.state["finished"]) == 12
            and "r0" not in q.state["finished"]
        )
        ok = ok and (kept == [1, 2, 3] if change is None else True)
        return (
            "ok" if ok else "silent",
            f"{what}: warned {bool(named)}, thresholds {q.thresholds} (bold {bold}, label-free {base})",
        )

    return case


def case_nan_written(env: Env):
    """NaN and infinity handed to finish: the file is strict JSON (usage unknown is null)."""
    path = env.base / "pass_state" / "nan" / "pass.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    p = _pass(env, path)
    p.finish(
        "x", steps=3, tokens=float("nan"), cost=float("inf"), outcome=0, probs=[[0.3, float("nan")]]
    )

    def refuse(c: str) -> Any:
        raise ValueError(f"{c} in the file")

    try:
        rec = json.loads(path.read_text(), parse_constant=refuse)["finished"]["x"]
    except ValueError as e:
        return ("silent", str(e))
    ok = rec["tokens"] is None and rec["cost"] is None and rec["probs"] == [None]
    return ("ok" if ok else "silent", f"record written {rec}")


# ------------------------------------------------------------------ not a regular file, links, size, JSON


def _special_case(kind: str):
    """The state path a FIFO, a link to /dev/zero, /dev/null, a folder: refused at once, never read nor blocked on."""

    def case(env: Env):
        d = env.base / "pass_state" / f"special_{kind.replace('/', '_')}"
        d.mkdir(parents=True, exist_ok=True)
        path = d / "pass.json"
        if path.is_symlink() or path.is_file():
            path.unlink()
        if kind == "fifo":
            if not path.exists():
                os.mkfifo(path)
        elif kind == "folder":
            path.mkdir(exist_ok=True)
        else:
            path.symlink_to(kind)
        out: list[tuple[str, str]] = []

        def go() -> None:
            try:
                out.append(_refused(lambda: _pass(env, path), "<file>", path))
            except Exception as e:  # noqa: BLE001 - handed back: the case raises it (a crash)
                out.append(("raise", f"{type(e).__name__}: {e}"))

        t = threading.Thread(target=go, daemon=True)
        t.start()
        t.join(60)
        if t.is_alive():
            return ("silent", f"{kind}: blocked for 60 s on the state file")
        if out[0][0] == "raise":
            raise RuntimeError(out[0][1])
        return out[0]

    return case


def case_link_in_its_folder(env: Env):
    """The state a link to a file beside it: two passes, one given the link and one the file, write one file."""
    d = env.base / "pass_state" / "link"
    d.mkdir(parents=True, exist_ok=True)
    real, link = d / "real.json", d / "pass.json"
    for f in (real, link):
        if f.is_symlink() or f.exists():
            f.unlink()
    link.symlink_to(real.name)
    a, b = _pass(env, link), _pass(env, real)
    for i in range(6):
        (a if i % 2 else b).finish(f"r{i}", steps=3)
    fin = json.loads(real.read_text())["finished"]
    ok = link.is_symlink() and set(fin) == {f"r{i}" for i in range(6)}
    return (
        "ok" if ok else "silent",
        f"link kept {link.is_symlink()}, runs in the file {sorted(fin)}",
    )


def case_over_the_bound(env: Env):
    """A state larger than EARLYEVAL_MAX_INPUT_BYTES: refused naming it, not read whole."""
    from faults24 import _env

    path, _ = _state(env, "big", n=3)
    with _env("EARLYEVAL_MAX_INPUT_BYTES", "200"):
        return _refused(lambda: _pass(env, path), "<file>", path)


def _repeated_key_case(where: str):
    def case(env: Env):
        path, _ = _state(env, f"repeat_{where}", n=2)
        text = path.read_text()
        if where == "top":
            text = text.replace('"version": 2', '"version": 2, "version": 2', 1)
            field = "version"
        else:
            text = text.replace('"outcome": 0', '"outcome": 1, "outcome": 0', 1)
            field = "outcome"
        path.write_text(text)
        return _refused(lambda: _pass(env, path), field, path)

    return case


def case_truncated(env: Env):
    """A state cut in half (a crash of another tool): the pass starts cold and says so, never bolder."""
    path, p = _state(env, "truncated")
    path.write_text(path.read_text()[: len(path.read_text()) // 2])
    q = _pass(env, path)
    ok = "cold start" in q.status and q.thresholds == tuple(q.base) and q.warnings
    return ("ok" if ok else "silent", f"status {q.status[:90]}")


def _signed_case(how: str):
    """With the signing key set: a state edited, unsigned, or signed with another key is refused."""

    def case(env: Env):
        from faults24 import _env

        with _env("EARLYEVAL_MODEL_KEY", KEY):
            path, _ = _state(env, f"signed_{how}", n=3)
            if how == "edited":
                _edit(path, lambda st: st["finished"]["r0"].update({"outcome": 1}))
                return _refused(lambda: _pass(env, path), "signature", path)
            if how == "unsigned":
                _edit(path, lambda st: st.pop("signature"))
                return _refused(lambda: _pass(env, path), "signature", path)
            return _refused(lambda: _pass(env, path, key="z" * 32), "signature", path)

    return case


def _adapter_block_case(what: str):
    """An adapter's ``earlyeval: {pass: {state: ...}}`` block whose state is a FIFO, or was written for another
    model: the adapter's monitor is refused with the file and field named, never built on it."""

    def case(env: Env):
        from earlyeval.integrations.config import clear_cache, monitor_from_config

        d = env.base / "pass_state" / f"adapter_{what.replace(' ', '_')}"
        d.mkdir(parents=True, exist_ok=True)
        path = d / "pass.json"
        if what == "fifo" and not path.exists():
            os.mkfifo(path)
        elif what == "another model":
            from earlyeval.live.benchpass import Pass
            from earlyeval.live.monitor import Monitor

            path.unlink(
                missing_ok=True
            )  # the adapter's settings, on a copy of the model one byte apart
            other = _model(env, "pass_other_model2")
            (other / "family_behaviour.json").write_text(
                (other / "family_behaviour.json").read_text() + " "
            )
            from faults import rehash

            rehash(other)
            p = Pass(Monitor.load(other, halt_on="failure"), path, audit_share=1.0)
            p.finish("r0", steps=3)
        clear_cache()
        block = {"model": str(_model(env)), "pass": {"state": str(path), "audit_share": 1.0}}
        field = "<file>" if what == "fifo" else "pass.model_content_hash"
        return _refused(lambda: monitor_from_config(block, allow_pass=True), field, path)

    return case


CASES_PASS_STATE: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    *[
        ("pass state", f"resumed by a pass with another {w}", _other_pass_case(w))
        for w in ("model", "seed", "audit share", "alpha", "max error", "halt_on")
    ],
    ("pass state", "thresholds edited in the file", case_thresholds_edited),
    ("pass state", "thresholds and history forged", case_history_forged),
    *[("pass state", f"a record with {w}", _bad_record_case(w)) for w in BAD_RECORDS],
    ("pass state", "NaN and infinity handed to finish", case_nan_written),
    *[
        ("pass state", f"the state path is {k}", _special_case(k))
        for k in ("fifo", "/dev/zero", "/dev/null", "folder")
    ],
    ("pass state", "a link to the state in its own folder", case_link_in_its_folder),
    ("pass state", "a state over EARLYEVAL_MAX_INPUT_BYTES", case_over_the_bound),
    *[("pass state", f"a key given twice ({w})", _repeated_key_case(w)) for w in ("top", "record")],
    ("pass state", "a state cut in half", case_truncated),
    *[
        ("pass state", f"a signed state {h}", _signed_case(h))
        for h in ("edited", "unsigned", "of another key")
    ],
    *[
        ("pass state", f"an adapter block's pass state: {w}", _adapter_block_case(w))
        for w in ("fifo", "another model")
    ],
]

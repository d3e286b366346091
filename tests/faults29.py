"""Fault cases of issue 29, by class: writes outside what the user named, unbounded reads, run-file dates and
names, cluster addresses, label sources, models written but refused, OpenHands event logs, score from any folder.
Shared by tests/test_faults.py and tools/fault_summary.py.

The same framework as tests/faults24.py: every case goes through a public surface (the CLI in a child process,
``ingest_run``, ``export_runs``, ``save_model_dir`` / ``load_model_dir``), so that it also runs against an older
earlyeval and says what it did there.  A case returns ("ok" | "named" | "silent", detail), or ("absent", why) when
the machine cannot stage the fault; an exception or a child's traceback is a crash.  Each class has several
variants, not one case per finding of the audit: the next audit brings cases that neither list names.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import resource
import shutil
import socket
import stat
import subprocess
import sys
import threading
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Iterator

from faults import FIXTURES, HERE, Env
from faults24 import _env, _tau2_workspace, cli, one_line_error

SWE_TRAJ = FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj"
MINI_TRAJ = (
    FIXTURES / "export-atif" / "mini-swe-agent" / "trajs" / "toy__repo-1" / "toy__repo-1.traj.json"
)
OH_FIX = FIXTURES / "openhands-conversation"
KEY = "k" * 32


# ------------------------------------------------------------------ helpers


def _no_traceback(rc: int, err: str) -> str:
    last = (err.strip().splitlines() or [""])[-1][:160]
    if "Traceback" in err:
        raise RuntimeError(f"rc {rc}, raw traceback: {last}")
    return last


def child(
    args: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    drop: tuple[str, ...] = (),
    timeout: int = 120,
    preexec: Callable[[], None] | None = None,
) -> tuple[int, str, str]:
    """``earlyeval ARGS`` in a child process from ``cwd``, with ``drop`` removed from its environment (unlike
    faults24.cli, no workspace is imposed: the case says where the child runs)."""
    base = {k: v for k, v in os.environ.items() if k not in drop}
    r = subprocess.run(
        [sys.executable, "-m", "earlyeval.app.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        preexec_fn=preexec,
        env={**base, "EARLYEVAL_BOOSTER_PROBE": "0", **(env or {})},
    )
    return r.returncode, r.stdout, r.stderr


def _fresh(path: Path) -> Path:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
    return path


def score_inputs(env: Env) -> tuple[Path, Path, Path]:
    """(model dir, a folder of 8 ATIF runs, a workspace), built once, here and not in faults24 (whose older copies
    differ): the model in ``<ws>/models/synth`` beside its benchmark's task table ``<ws>/data/synth/tasks.parquet``."""
    with _BUILD:
        return _score_inputs(env)


def _score_inputs(env: Env) -> tuple[Path, Path, Path]:
    if "inputs29" not in env._cache:
        from earlyeval.tables.store import write_tasks
        from earlyeval.workflows.export import export_runs

        tiny, _, trajs, tasks = env.tiny()
        runs = env.base / "runs29"
        if not runs.exists():
            export_runs(trajs[:8], runs, fmt="atif")
        ws = env.base / "ws29"
        mdir = ws / "models" / "synth"
        if not mdir.exists():
            shutil.copytree(tiny, mdir)
            (ws / "data" / "synth").mkdir(parents=True, exist_ok=True)
            write_tasks(tasks.values(), ws / "data" / "synth" / "tasks.parquet")
        env._cache["inputs29"] = (mdir, runs, ws)
    return env._cache["inputs29"]


def _score_args(env: Env, out: Path) -> list[str]:
    mdir, runs, _ = score_inputs(env)
    return [
        "score",
        "--model",
        str(mdir),
        "--runs",
        str(runs),
        "--format",
        "atif",
        "--out",
        str(out),
    ]


def scored_out(env: Env, name: str) -> Path:
    """An output folder holding one plain scoring's score.json + per_run.csv, copied for each case."""
    first = env.base / "scored29"
    with _BUILD:
        if not (first / "score.json").is_file():
            rc, _, err = cli(_score_args(env, first), score_inputs(env)[2])
            if rc != 0:
                raise RuntimeError(f"the plain score failed (rc {rc}): {err[-300:]}")
    out = _fresh(env.base / name)
    shutil.copytree(first, out)
    return out


def _victim(env: Env, name: str) -> Path:
    """A file outside every output folder that no case may change."""
    v = env.base / "victims" / f"{name}.txt"
    v.parent.mkdir(exist_ok=True)
    v.write_text("precious, not an output\n")
    return v


def _kind(p: Path) -> str:
    try:
        m = os.lstat(p).st_mode
    except FileNotFoundError:
        return "gone"
    return (
        "link"
        if stat.S_ISLNK(m)
        else "fifo"
        if stat.S_ISFIFO(m)
        else "chardev"
        if stat.S_ISCHR(m)
        else "file"
        if stat.S_ISREG(m)
        else "dir"
        if stat.S_ISDIR(m)
        else "other"
    )


def _write_verdict(rc: int, err: str, intact: bool, what: str) -> tuple[str, str]:
    """Nothing outside the output changed: "ok" when the verb went on, "named" when it stopped with one line."""
    last = _no_traceback(rc, err)
    if not intact:
        return ("silent", f"rc {rc}, {what} CHANGED: {last}")
    if rc == 0:
        return ("ok", f"rc 0, {what} intact")
    return ("named" if one_line_error(rc, err) else "silent", f"rc {rc}, {what} intact: {last}")


# ------------------------------------------------------------------ writes outside the output


def _lock_case(kind: str):
    """``<out>/.earlyeval.lock`` planted as a symlink to a file outside (it must not be truncated), a symlink to a
    folder, or a FIFO (it must not block, nor be replaced by a regular file)."""

    def case(env: Env):
        _, _, ws = score_inputs(env)
        out = scored_out(env, f"w_lock_{kind}")
        lock = out / ".earlyeval.lock"
        lock.unlink(missing_ok=True)  # the first scoring's
        victim = _victim(env, f"lock_{kind}")
        if kind == "file link":
            lock.symlink_to(victim)
        elif kind == "folder link":
            victim = env.base / "victims" / "lock_dir"
            _fresh(victim).mkdir()
            lock.symlink_to(victim, target_is_directory=True)
        else:
            os.mkfifo(lock)
        before = (
            _kind(victim),
            (victim.read_bytes() if victim.is_file() else sorted(os.listdir(victim))),
        )
        try:
            rc, _, err = cli(_score_args(env, out) + ["--force"], ws, timeout=60)
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"score blocked on a {kind} lock (no answer in 60 s)") from e
        if kind == "fifo":
            return _write_verdict(rc, err, _kind(lock) == "fifo", "the FIFO at the lock")
        after = (
            _kind(victim),
            (victim.read_bytes() if victim.is_file() else sorted(os.listdir(victim))),
        )
        return _write_verdict(rc, err, after == before, f"the lock's target ({victim.name})")

    return case


def _special_at(kind: str, p: Path) -> str | None:
    if kind == "fifo":
        os.mkfifo(p)
    else:
        try:
            os.mknod(p, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
        except OSError as e:
            return f"mknod needs privilege here ({e.strerror})"
    return None


def _csv_special_case(kind: str):
    """``--csv`` at a FIFO or a character device: refused with one line, the node left as it was."""

    def case(env: Env):
        _, _, ws = score_inputs(env)
        node = _fresh(env.base / f"w_csv_{kind}.csv")
        why = _special_at(kind, node)
        if why:
            return ("absent", why)
        out = _fresh(env.base / f"w_csv_{kind}_out")
        try:
            rc, _, err = cli(_score_args(env, out) + ["--csv", str(node)], ws, timeout=60)
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(
                f"score blocked writing --csv to a {kind} (no answer in 60 s)"
            ) from e
        return _write_verdict(rc, err, _kind(node) == kind, f"the {kind} at --csv")

    return case


def _output_link_case(name: str):
    """An output file of a scoring (``per_run.csv``, ``score.json``, or ``--csv`` itself) planted as a symlink
    to a file outside the output folder: the file outside is never written."""

    def case(env: Env):
        _, _, ws = score_inputs(env)
        out = scored_out(env, f"w_link_{name.replace('.', '_')}")
        victim = _victim(env, f"link_{name}")
        args = _score_args(env, out) + ["--force"]
        if name == "--csv":
            link = out / "mine.csv"
            args += ["--csv", str(link)]
        else:
            link = out / name
            link.unlink()
        link.symlink_to(victim)
        rc, _, err = cli(args, ws, timeout=120)
        return _write_verdict(
            rc,
            err,
            victim.read_text() == "precious, not an output\n",
            f"the link's target via {name}",
        )

    return case


def _export_link_case(what: str):
    """``export_runs`` into a folder whose trial sub-folder (or a file in it) is a symlink leading outside."""

    def case(env: Env):
        from earlyeval.workflows.export import export_runs, trial_name

        traj = env.tiny()[2][0]
        out = _fresh(env.base / f"w_export_{what}")
        out.mkdir()
        elsewhere = _fresh(env.base / "victims" / f"export_{what}")
        elsewhere.mkdir(parents=True)
        if what == "trial folder":
            (out / trial_name(traj)).symlink_to(elsewhere, target_is_directory=True)
        else:
            export_runs([traj], out)  # a first export, then its trajectory file swapped for a link
            files = sorted(p for p in (out / trial_name(traj)).rglob("*") if p.is_file())
            (elsewhere / "victim.json").write_text("precious\n")
            files[0].unlink()
            files[0].symlink_to(elsewhere / "victim.json")
        before = sorted((p.name, p.read_bytes()) for p in elsewhere.iterdir())
        try:
            export_runs([traj], out)
        except Exception as e:  # noqa: BLE001 - a refusal must name the folder, one line
            msg = str(e)
            intact = sorted((p.name, p.read_bytes()) for p in elsewhere.iterdir()) == before
            ok = intact and type(e).__name__ == "WriteError" and "\n" not in msg and str(out) in msg
            return (
                "named" if ok else "silent",
                f"{type(e).__name__}: {msg[:140]}; outside {'intact' if intact else 'CHANGED'}",
            )
        intact = sorted((p.name, p.read_bytes()) for p in elsewhere.iterdir()) == before
        return (
            "ok" if intact else "silent",
            f"exported; the folder outside {'intact' if intact else 'WRITTEN'}",
        )

    return case


def case_ingest_lock_link(env: Env):
    """The writer's lock of another verb: ``ingest``'s ``data/<bench>/.earlyeval.lock`` planted as a symlink."""
    ws = _tau2_workspace(env, "w_ingest_lock")
    data = {"EARLYEVAL_DATA": str(ws / "shared")}
    rc, _, err = cli(["ingest", "--bench", "fz"], ws, env=data)
    if rc != 0:
        raise RuntimeError(f"plain ingest failed: {err[-200:]}")
    victim = _victim(env, "ingest_lock")
    lock = ws / "data" / "fz" / ".earlyeval.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(victim)
    rc, _, err = cli(["ingest", "--bench", "fz"], ws, env=data)
    return _write_verdict(
        rc, err, victim.read_text() == "precious, not an output\n", "the lock's target"
    )


# ------------------------------------------------------------------ unbounded reads


def _signed_model(env: Env) -> Path:
    """A copy of the tiny model, signed with KEY (saved in a child holding $EARLYEVAL_MODEL_KEY)."""
    d = env.base / "signed29"
    with _BUILD:
        return _signed(env, d)


def _signed(env: Env, d: Path) -> Path:
    if not (d / "manifest.json").is_file():
        _fresh(d)
        code = (
            "import sys\ntry:\n    from earlyeval.model.modeldir import load_model_dir, save_model_dir\n"
            "except ImportError:  # before the modeling/ split\n"
            "    from earlyeval.modeling.modeldir import load_model_dir, save_model_dir\n"
            "save_model_dir(load_model_dir(sys.argv[1], probe_boosters=False), sys.argv[2])\n"
        )
        subprocess.run(
            [sys.executable, "-c", code, str(env.tiny()[0]), str(d)],
            check=True,
            timeout=300,
            capture_output=True,
            env={**os.environ, "EARLYEVAL_MODEL_KEY": KEY, "EARLYEVAL_BOOSTER_PROBE": "0"},
        )
    return d


def _key_file_case(kind: str):
    """``score --require-signature`` with ``EARLYEVAL_MODEL_KEY_FILE`` at a file without end (/dev/zero,
    /dev/urandom) or far too large (a sparse 256 MB file): one line naming the variable, in bounded memory
    (the child runs under a 4 GB address-space limit: an unbounded read ends in MemoryError, counted a crash)."""

    def case(env: Env):
        mdir = _signed_model(env)
        _, runs, ws = score_inputs(env)
        path = kind
        if kind == "sparse":
            p = env.base / "huge.key"
            with open(p, "wb") as f:
                f.write(KEY.encode())
                f.truncate(256 << 20)
            path = str(p)
        lim = 4 << 30
        try:
            rc, _, err = cli(
                [
                    "score",
                    "--model",
                    str(mdir),
                    "--runs",
                    str(runs),
                    "--format",
                    "atif",
                    "--require-signature",
                    "--out",
                    str(env.base / f"r_key_{Path(path).name}"),
                ],
                ws,
                env={"EARLYEVAL_MODEL_KEY_FILE": path},
                preexec=lambda: resource.setrlimit(resource.RLIMIT_AS, (lim, lim)),
                timeout=120,
            )
        except subprocess.TimeoutExpired as e:
            raise RuntimeError(f"the key file {path} was read for 120 s") from e
        last = _no_traceback(rc, err)
        return (
            "named" if one_line_error(rc, err, "EARLYEVAL_MODEL_KEY_FILE") else "silent",
            f"{path}: rc {rc}: {last}",
        )

    return case


def _inspect_log(env: Env) -> Path | None:
    """One real inspect ``.eval`` log (inspect_ai with mockllm, in a child process), written once."""
    with _BUILD:
        return _write_inspect_log(env)


def _write_inspect_log(env: Env) -> Path | None:
    if "inspect_log" not in env._cache:
        d = env.base / "inspect_log"
        code = (
            "import sys\nsys.path.insert(0, sys.argv[2])\nfrom pathlib import Path\nimport pytest\n"
            "from _inspect_helpers import FAILING, offline_token_count, react_task, run_eval\n"
            "mp = pytest.MonkeyPatch()\noffline_token_count(mp)\n"
            "log, _ = run_eval(react_task('demo-1'), FAILING, Path(sys.argv[1]))\nprint(log.location)\n"
        )
        try:
            r = subprocess.run(
                [sys.executable, "-c", code, str(d), str(HERE)],
                capture_output=True,
                text=True,
                timeout=300,
                cwd=env.base,
                env={**os.environ, "INSPECT_LOG_DIR": str(d)},
            )
            path = Path(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else None
        except (subprocess.TimeoutExpired, IndexError):
            path = None
        env._cache["inspect_log"] = path
    return env._cache["inspect_log"]


def _rezip(src: Path, dst: Path, edit: Callable[[str, bytes], bytes]) -> None:
    """A copy of an archive with each member edited, written deflated (inspect writes zstd: read with its codec)."""
    with contextlib.suppress(ImportError):
        import zipfile_zstd  # noqa: F401 - registers zstd with zipfile (Python < 3.14)
    with zipfile.ZipFile(src) as a, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as b:
        for info in a.infolist():
            b.writestr(info.filename, edit(info.filename, a.read(info)))


def _ingest_one(
    folder: Path, fmt: str, glob: str, bench: str = "inspect"
) -> tuple[list[Any], list[dict[str, str]]]:
    from earlyeval.config.catalog import LabelSpec, RunSpec
    from earlyeval.ingest import ingest_run

    spec = RunSpec(
        name="r",
        folder=str(folder),
        agent="a",
        scaffold="a",
        model="",
        format=fmt,
        glob=glob,
        labels=[LabelSpec("inline", "")],
    )
    trajs, rep = ingest_run(spec, bench, Path("/"))
    return trajs, rep.skipped


def _inspect_dir(env: Env, name: str) -> tuple[Path | None, Path]:
    """(a real inspect log, a fresh empty folder ``name`` for the case's files); the log is None when inspect_ai
    could not write one here."""
    log = _inspect_log(env)
    d = _fresh(env.base / name)
    if log is not None:
        d.mkdir()
    return log, d


def _zip_bomb_case(member: str):
    """An inspect ``.eval`` whose ``member`` (a sample, the header, the summaries) inflates past the stated input
    limit (2 MB of a few KB stored, limit 1 MB): the file is refused naming the member; the good log beside it is read."""

    def case(env: Env):
        log, d = _inspect_dir(env, f"r_bomb_{member.strip('/').replace('/', '_')}")
        if log is None:
            return ("absent", "inspect_ai could not write an .eval log here")
        shutil.copy(log, d / "good.eval")
        hit_members = []

        def pad(name: str, data: bytes) -> bytes:
            if name.startswith(member) and not hit_members:
                hit_members.append(name)
                return data.rstrip() + b" " * (2 << 20)  # still the same JSON once parsed
            return data

        _rezip(log, d / "bomb.eval", pad)
        if not hit_members:
            return ("absent", f"no member {member}* in this inspect log")
        with _env("EARLYEVAL_MAX_INPUT_BYTES", str(1 << 20)):
            trajs, skipped = _ingest_one(d, "inspect-eval", "*.eval")
        hit = [
            s
            for s in skipped
            if s["file"].endswith("bomb.eval") and "EARLYEVAL_MAX_INPUT_BYTES" in s["reason"]
        ]
        read = [t for t in trajs if "bomb.eval" in str(t.meta.get("source_file", ""))]
        ok = hit and not read and len(trajs) >= 1
        return (
            "named" if ok else "silent",
            f"{hit_members[0]} 2 MB inflated: skip {hit[:1]}, {len(read)} runs read from it",
        )

    return case


def case_label_file_over_limit(env: Env):
    """``score --labels sb-cli:big.json``: a label file past the input limit is one line naming it, not read."""
    _, runs, ws = score_inputs(env)
    d = _fresh(env.base / "r_labels_big")
    shutil.copytree(runs, d)
    (d / "labels.json").write_text(json.dumps({"resolved_ids": [], "pad": " " * (2 << 20)}))
    mdir = score_inputs(env)[0]
    rc, _, err = cli(
        [
            "score",
            "--model",
            str(mdir),
            "--runs",
            str(d),
            "--format",
            "atif",
            "--labels",
            "sb-cli:labels.json",
            "--out",
            str(env.base / "r_labels_big_out"),
        ],
        ws,
        env={"EARLYEVAL_MAX_INPUT_BYTES": str(1 << 20)},
    )
    last = _no_traceback(rc, err)
    if rc != 0:
        return ("named" if one_line_error(rc, err, "labels.json") else "silent", f"rc {rc}: {last}")
    rep = json.loads((env.base / "r_labels_big_out" / "score.json").read_text())
    hit = [
        s
        for s in rep.get("skipped", [])
        if s["file"].endswith("labels.json") and "EARLYEVAL_MAX_INPUT_BYTES" in s["reason"]
    ]
    return ("named" if hit else "silent", f"rc 0, skip {hit[:1]}")


# ------------------------------------------------------------------ run-file dates and names


def _oh_copy(env: Env, name: str) -> tuple[Path, Path]:
    """A batch folder holding the SDK-written conversation twice: ``good`` and ``name`` (the one to damage)."""
    root = _fresh(env.base / f"oh_{name}")
    root.mkdir()
    task = "django__django-11099"
    shutil.copytree(OH_FIX / task, root / "good")
    shutil.copytree(OH_FIX / task, root / name)
    [conv] = [p.parent for p in (root / name).glob("*/base_state.json")]
    return root, conv


def _oh_date_case(stamp: str):
    """An OpenHands V1 conversation whose event timestamps carry an impossible date (``9999-99-99``, 30 February,
    a far future year): the run is a skip naming the file and ``meta.date``; the good conversation is read."""

    def case(env: Env):
        root, conv = _oh_copy(env, f"dated{stamp}")
        for ev in (conv / "events").glob("event-*.json"):
            doc = json.loads(ev.read_text())
            if isinstance(doc.get("timestamp"), str):
                doc["timestamp"] = stamp + doc["timestamp"][10:]
            ev.write_text(json.dumps(doc))
        trajs, skipped = _ingest_one(root, "openhands-conversation", _oh_glob(), "swebench")
        tag = f"/dated{stamp}/"
        dated = [t.meta.get("date") for t in trajs if tag in str(t.meta.get("source_file", ""))]
        hit = [s for s in skipped if tag in s["file"] and "date" in s.get("field", "")]
        ok = hit and not dated and len(trajs) == 1
        return (
            "named" if ok else "silent",
            f"timestamp {stamp}: skip {[(s['field'], s['reason'][:60]) for s in hit]}, "
            f"stored dates {dated}",
        )

    return case


def _oh_glob() -> str:
    from earlyeval.ingest import openhands_conversation as oc

    return oc.DEFAULT_GLOB


def _inspect_date_case(stamp: str):
    """An inspect sample whose ``started_at`` is not a real date (or a far future one): a skip naming it, never
    stored as the run's date."""

    def case(env: Env):
        log, d = _inspect_dir(env, f"d_inspect_{stamp[:4]}")
        if log is None:
            return ("absent", "inspect_ai could not write an .eval log here")

        def redate(name: str, data: bytes) -> bytes:
            return (
                _restamp(data.decode(), "started_at", stamp).encode()
                if name.startswith("samples/")
                else data
            )

        _rezip(log, d / "dated.eval", redate)
        trajs, skipped = _ingest_one(d, "inspect-eval", "*.eval")
        dates = [t.meta.get("date") for t in trajs]
        hit = [
            s
            for s in skipped
            if any(w in s.get("field", "") + s.get("reason", "") for w in ("date", "started_at"))
        ]
        ok = hit and not trajs and all("\n" not in s["reason"] for s in hit)  # a skip is one line
        return (
            "named" if ok else "silent",
            f"started_at {stamp}: skip {[s['reason'][:110] for s in hit]}, stored dates {dates}",
        )

    return case


def _restamp(text: str, key: str, stamp: str) -> str:
    import re

    return re.sub(rf'("{key}"\s*:\s*")\d{{4}}-\d{{2}}-\d{{2}}', lambda m: m.group(1) + stamp, text)


def _literal_runs_case(name: str, decoy: str):
    """``--runs DIR/NAME`` where NAME holds glob characters and a file matching it as a glob sits beside it: the
    named file is the one scored (its run's task id is its own), never the decoy."""

    def case(env: Env):
        mdir, _, ws = score_inputs(env)
        d = _fresh(env.base / f"n_literal_{abs(hash(name)) % 10**6}")
        d.mkdir()
        shutil.copy(SWE_TRAJ, d / name)
        shutil.copy(SWE_TRAJ, d / decoy)
        out = env.base / f"n_literal_out_{abs(hash(name)) % 10**6}"
        rc, _, err = cli(
            [
                "score",
                "--model",
                str(mdir),
                "--runs",
                str(d / name),
                "--format",
                "swe-agent-traj",
                "--out",
                str(out),
                "--force",
                "--cross-bench",
            ],
            ws,
        )
        last = _no_traceback(rc, err)
        if rc != 0:
            return ("named" if one_line_error(rc, err) else "silent", f"rc {rc}: {last}")
        rep = json.loads((out / "score.json").read_text())
        srcs = sorted({str(r.get("task_id")) for r in rep["per_run"]})
        want = [Path(name).name.split(".")[0]]
        return (
            "ok" if srcs == want else "silent",
            f"--runs {name!r} scored task ids {srcs} (decoy {decoy!r})",
        )

    return case


ANSI = "\x1b[2J\x1b[31mevil\u202e"


def _ansi_case(where: str):
    """A path named with ANSI/bidi control characters in ``--model``, ``--runs`` or ``--out``: the error reaches the
    terminal escaped (``\\x1b``), the name still there."""

    def case(env: Env):
        mdir, runs, ws = score_inputs(env)
        bad = env.base / f"{where.strip('-')}{ANSI}"
        args = {
            "--model": ["--model", str(bad), "--runs", str(runs)],
            "--runs": ["--model", str(mdir), "--runs", str(bad)],
        }
        if where == "--out":
            bad.write_text("a file, not a folder\n")
            a = ["--model", str(mdir), "--runs", str(runs), "--format", "atif", "--out", str(bad)]
        else:
            _fresh(bad) if bad.exists() else None
            a = args[where] + [
                "--format",
                "atif",
                "--out",
                str(env.base / f"n_ansi_out_{where.strip('-')}"),
            ]
        rc, out, err = cli(["score", *a], ws)
        _fresh(bad) if bad.exists() else None
        last = _no_traceback(rc, err)
        raw = any(c in out + err for c in ("\x1b", "\u202e"))
        escaped = "\\x1b[2J" in err
        return (
            "named" if rc == 2 and not raw and escaped else "silent",
            f"{where}: rc {rc}, raw control chars {raw}: {last[:100]!r}",
        )

    return case


def _sub_folder_case(kind: str):
    """A runs folder whose sub-folder is a symlink (not followed), unlistable (EACCES) or a loop of links: the batch
    reads the rest and a skip entry names the sub-folder, never passed over without a word."""

    def case(env: Env):
        root = _fresh(env.base / f"n_sub_{kind.replace(' ', '_')}")
        (root / "run" / "kept").mkdir(parents=True)
        shutil.copy(SWE_TRAJ, root / "run" / "kept" / "a.traj")
        odd = root / "run" / "odd"
        if kind == "symlinked":
            (root / "other").mkdir()
            shutil.copy(SWE_TRAJ, root / "other" / "b.traj")
            odd.symlink_to(root / "other", target_is_directory=True)
        elif kind == "link loop":
            odd = root / "run" / "odd.traj"  # a loop of links, named like a run file
            odd.symlink_to(odd)
        else:
            odd.mkdir()
            shutil.copy(SWE_TRAJ, odd / "b.traj")
            odd.chmod(0)
            if os.access(odd, os.R_OK):
                odd.chmod(0o755)
                return ("absent", "file modes do not stop this user (root) from listing a folder")
        try:
            trajs, skipped = _ingest_one(root / "run", "swe-agent-traj", "**/*.traj*", "swebench")
        finally:
            if kind == "unlistable":
                odd.chmod(0o755)
        hit = [s for s in skipped if Path(s["file"]).name.startswith("odd")]
        return (
            "named" if hit and len(trajs) == 1 else "silent",
            f"{kind} sub-folder: {len(trajs)} runs, skip {hit[:1]}",
        )

    return case


# ------------------------------------------------------------------ cluster addresses


@contextlib.contextmanager
def _listener(reply: bytes | None) -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that is not a dask scheduler: it sends ``reply`` on every connection (then
    closes), or closes at once (None)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            with c:
                with contextlib.suppress(OSError):
                    if reply:
                        c.sendall(reply)

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        t.join(5)
        srv.close()


LISTENERS = {
    "an HTTP server": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" * 20,
    "a huge frame length": b"\xff" * 64,
    "a closing socket": None,
}


def _scheduler_case(verb: str, what: str, scheme: str = "tcp"):
    """``VERB --scheduler SCHEME://127.0.0.1:PORT`` where no dask scheduler listens: rc 2, one line naming
    --scheduler, no traceback, no allocation of what the bytes there say."""

    def case(env: Env):
        try:
            import distributed  # noqa: F401
        except ImportError:
            return ("absent", "the dask extra is not installed")
        ws = _tau2_workspace(env, f"c_ws_{verb}_{scheme}_{what.split()[-1]}")
        data = {
            "EARLYEVAL_DATA": str(ws / "shared"),
            "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s",
        }
        with _listener(LISTENERS[what]) as port:
            addr = f"{scheme}://127.0.0.1:{port}"
            if verb == "score":
                mdir, runs, _ = score_inputs(env)
                args = [
                    "score",
                    "--model",
                    str(mdir),
                    "--runs",
                    str(runs),
                    "--format",
                    "atif",
                    "--out",
                    str(env.base / "c_out"),
                ]
            else:
                args = [verb, "--bench", "fz"]
            try:
                rc, _, err = cli(
                    args + ["--scheduler", addr],
                    ws,
                    env=data,
                    timeout=120,
                    preexec=lambda: resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30)),
                )
            except subprocess.TimeoutExpired as e:
                raise RuntimeError(f"{verb} --scheduler {addr}: no answer in 120 s") from e
        last = _no_traceback(rc, err)
        return (
            "named" if one_line_error(rc, err, "--scheduler") else "silent",
            f"{what} at {scheme}://: rc {rc}: {last}",
        )

    return case


# ------------------------------------------------------------------ label sources


def _labels_case(value: str):
    """``score --labels VALUE`` naming files outside --runs, or no glob at all: one line naming --labels, rc 2."""

    def case(env: Env):
        mdir, runs, ws = score_inputs(env)
        rc, _, err = cli(
            [
                "score",
                "--model",
                str(mdir),
                "--runs",
                str(runs),
                "--format",
                "atif",
                "--labels",
                value,
                "--out",
                str(env.base / f"l_out_{abs(hash(value)) % 10**6}"),
            ],
            ws,
        )
        last = _no_traceback(rc, err)
        return (
            "named" if one_line_error(rc, err, "--labels") else "silent",
            f"--labels {value!r}: rc {rc}: {last}",
        )

    return case


# ------------------------------------------------------------------ models written but refused

BAD_THRESHOLDS = {
    "success 0.5": {"success": 0.5},
    "failure 1.5": {"failure": 1.5},
    "success NaN": {"success": float("nan")},
    "min_halt_step -1": {"min_halt_step": -1},
}


def _modeldir() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """(load_model_dir, save_model_dir): earlyeval.model.modeldir, or earlyeval.modeling.modeldir before that split."""
    try:
        from earlyeval.model.modeldir import load_model_dir, save_model_dir
    except ImportError:
        from earlyeval.modeling.modeldir import load_model_dir, save_model_dir  # type: ignore[no-redef]
    return load_model_dir, save_model_dir


def _written_refused_case(name: str):
    """``save_model_dir`` of a fitted model whose thresholds the loader refuses: never written (a ModelDirError
    naming the field, and the old directory whole), or, if written, loaded back.  Written and refused is silent."""

    def case(env: Env):
        import dataclasses

        load_model_dir, save_model_dir = _modeldir()
        bundle = env.tiny()[1]
        bad = dataclasses.replace(bundle, thresholds={**bundle.thresholds, **BAD_THRESHOLDS[name]})
        dst = _fresh(env.base / f"m_written_{name.replace(' ', '_')}")
        try:
            save_model_dir(bad, dst)
        except Exception as e:  # noqa: BLE001 - the refusal is what this checks
            field = next(iter(BAD_THRESHOLDS[name]))
            ok = type(e).__name__ == "ModelDirError" and field in str(e) and not dst.exists()
            return (
                "named" if ok else "silent",
                f"{type(e).__name__}: {str(e)[:120]}; written {dst.exists()}",
            )
        try:
            load_model_dir(dst, probe_boosters=False)
        except Exception as e:  # noqa: BLE001
            return (
                "silent",
                f"written, then its loader refuses it: {type(e).__name__}: {str(e)[:110]}",
            )
        return ("ok", f"{name}: written and loads")

    return case


def _small_catalog_case(verb: str):
    """``train`` / ``evaluate`` on a catalog of two runs: one line naming the catalog (rc 2), or for train a model
    that ``score`` then loads; never scikit-learn's message, never a model its loader refuses."""

    def case(env: Env):
        ws = _tau2_workspace(env, f"m_small_{verb}")
        data = {"EARLYEVAL_DATA": str(ws / "shared")}
        rc, _, err = cli(["ingest", "--bench", "fz"], ws, env=data)
        if rc != 0:
            raise RuntimeError(f"plain ingest failed: {err[-200:]}")
        extra = ["--no-ablations"] if verb == "evaluate" else ["--no-budget"]
        rc, _, err = cli([verb, "--bench", "fz", *extra], ws, env=data, timeout=300)
        last = _no_traceback(rc, err)
        if rc != 0:
            return (
                "named" if one_line_error(rc, err, "fz.toml", "too little data") else "silent",
                f"{verb}: rc {rc}: {last}",
            )
        if verb == "evaluate":
            return ("ok", f"evaluate on 2 runs: rc 0: {last}")
        rc2, _, err2 = cli(
            [
                "score",
                "--model",
                str(ws / "models" / "fz"),
                "--runs",
                str(ws / "shared" / "tau2runs"),
                "--format",
                "tau2",
                "--out",
                str(ws / "o"),
            ],
            ws,
            env=data,
        )
        last2 = _no_traceback(rc2, err2)
        refused = (
            "model" in last2.lower()
            and rc2 == 2
            and ("range" in last2 or "ModelDir" in err2 or "thresholds" in last2)
        )
        return (
            "silent" if refused else "ok",
            f"train rc 0; score -m on it: rc {rc2}: {last2[:100]}",
        )

    return case


# ------------------------------------------------------------------ OpenHands V1 event logs


def _damage(conv: Path, how: str) -> None:
    ev = sorted((conv / "events").glob("event-*.json"))
    if how == "missing":
        ev[5].unlink()
    elif how == "misnamed":
        ev[6].rename(ev[6].with_name("evt" + ev[6].name[5:]))
    elif how == "gzipped":
        ev[4].with_name(ev[4].name + ".gz").write_bytes(gzip.compress(ev[4].read_bytes()))
        ev[4].unlink()
    elif how == "duplicated":
        ev[3].with_name(ev[3].name[:12] + "ffffffff-0000-0000-0000-000000000000.json").write_bytes(
            ev[3].read_bytes()
        )
    elif how == "late start":
        ev[0].unlink()
    elif how == "last missing":
        ev[-1].unlink()


OH_DAMAGE = ("missing", "misnamed", "gzipped", "duplicated", "late start", "last missing")


def _oh_damage_case(how: str):
    """A conversation with a damaged event log (an event file missing, misnamed, gzipped, duplicated, the first or
    the last one gone) beside a good one: a skip naming the events, the good one read whole.  Reading around the
    gap shifts the steps and drops one without a word (silent); a log whose end is gone reads as a shorter run
    only if nothing says otherwise, so "last missing" is ok when read whole up to it, or named."""

    def case(env: Env):
        root, conv = _oh_copy(env, how.replace(" ", "_"))
        n_good = len(
            _ingest_one(root / "good", "openhands-conversation", _oh_glob(), "swebench")[0][0].steps
        )
        _damage(conv, how)
        trajs, skipped = _ingest_one(root, "openhands-conversation", _oh_glob(), "swebench")
        tag = f"/{how.replace(' ', '_')}/"
        hit = [s for s in skipped if tag in s["file"]]
        read = [t for t in trajs if tag in str(t.meta.get("source_file", ""))]
        good = [t for t in trajs if "/good/" in str(t.meta.get("source_file", ""))]
        if not good or len(good[0].steps) != n_good:
            return ("silent", f"{how}: the good conversation was not read whole")
        if hit and not read:
            return ("named", f"{how}: skip {hit[0].get('field')}: {hit[0]['reason'][:90]}")
        if how == "last missing" and read and not hit:
            return ("ok", f"last event gone: read as {len(read[0].steps)} steps (whole {n_good})")
        return (
            "silent",
            f"{how}: read as {[len(t.steps) for t in read]} steps (whole {n_good}), no skip",
        )

    return case


# ------------------------------------------------------------------ score from any folder


def _halts(out: Path) -> tuple[int, list[Any]]:
    rep = json.loads((out / "score.json").read_text())
    return rep.get("n_halted", -1), sorted((r["run_id"], r.get("halt_t")) for r in rep["per_run"])


def _cwd_case(where: str):
    """The same ``score`` (a model in a workspace beside its task table, no $EARLYEVAL_HOME) run from the
    workspace and from another folder (a sibling, /, the runs folder): the same halts, and more than none."""

    def case(env: Env):
        mdir, runs, ws = score_inputs(env)
        drop = ("EARLYEVAL_HOME",)
        ref = env.base / "s_from_ws"
        with _BUILD:
            if "s_ref" not in env._cache:  # the reference: run from the workspace
                rc, _, err = child(
                    [
                        "score",
                        "--model",
                        str(mdir),
                        "--runs",
                        str(runs),
                        "--format",
                        "atif",
                        "--out",
                        str(ref),
                        "--force",
                    ],
                    ws,
                    drop=drop,
                )
                _no_traceback(rc, err)
                env._cache["s_ref"] = _halts(ref) if rc == 0 else (-1, [])
        cwd = {"sibling": env.base / "s_elsewhere", "/": Path("/"), "runs": runs}[where]
        cwd.mkdir(exist_ok=True)
        out = env.base / f"s_from_{where.strip('/') or 'root'}"
        rc, _, err = child(
            [
                "score",
                "--model",
                str(mdir),
                "--runs",
                str(runs),
                "--format",
                "atif",
                "--out",
                str(out),
                "--force",
            ],
            cwd,
            drop=drop,
        )
        last = _no_traceback(rc, err)
        (n_ref, per_ref) = env._cache["s_ref"]
        if rc != 0:
            return (
                "named" if one_line_error(rc, err) else "silent",
                f"from {where}: rc {rc}: {last}",
            )
        n, per = _halts(out)
        ok = n == n_ref and per == per_ref and n_ref > 0
        return ("ok" if ok else "silent", f"from {where}: {n} halts, from the workspace {n_ref}")

    return case


def case_loose_model_without_table(env: Env):
    """A model needing its task table (gold, prior) copied outside any workspace, no table to be found: refused
    with one line (rc 2), not scored as 0 halts."""
    mdir, runs, ws = score_inputs(env)
    loose = env.base / "s_loose" / "m"
    if not loose.exists():
        shutil.copytree(mdir, loose)
    out = env.base / "s_loose_out"
    rc, _, err = child(
        [
            "score",
            "--model",
            str(loose),
            "--runs",
            str(runs),
            "--format",
            "atif",
            "--out",
            str(out),
            "--force",
        ],
        env.base / "s_loose",
        drop=("EARLYEVAL_HOME",),
    )
    last = _no_traceback(rc, err)
    if rc == 0:
        return ("silent", f"scored without a task table: {_halts(out)[0]} halts")
    return ("named" if one_line_error(rc, err) else "silent", f"rc {rc}: {last}")


def _mixed_case(n_mini: int, stray: bool):
    """``--format auto`` on a folder of N mini-swe-agent files and one SWE-agent file (and a file no format reads):
    every run scored with its own format, or refused listing the formats; the stray file named; nothing dropped."""

    def case(env: Env):
        mdir, _, ws = score_inputs(env)
        d = _fresh(env.base / f"s_mixed_{n_mini}_{int(stray)}")
        d.mkdir()
        mini = MINI_TRAJ.read_text()
        for i in range(1, n_mini + 1):
            (d / f"toy__repo-{i}.traj.json").write_text(
                mini.replace("toy__repo-1", f"toy__repo-{i}")
            )
        shutil.copy(SWE_TRAJ, d / "astropy__astropy-1.traj")
        if stray:
            (d / "notes.traj.json").write_text('{"hello": 1}')
        out = env.base / f"s_mixed_out_{n_mini}_{int(stray)}"
        rc, _, err = cli(
            ["score", "--model", str(mdir), "--runs", str(d), "--out", str(out), "--force"], ws
        )
        last = _no_traceback(rc, err)
        if rc != 0:
            ok = one_line_error(rc, err, "swe-agent-traj", "mini-swe-agent")
            return ("named" if ok else "silent", f"rc {rc}: {last}")
        rep = json.loads((out / "score.json").read_text())
        tasks = sorted(r["task_id"] for r in rep["per_run"])
        named = [s for s in rep.get("skipped", []) if s["file"].endswith("notes.traj.json")]
        ok = (
            len(tasks) == n_mini + 1
            and "astropy__astropy-1" in tasks
            and (bool(named) or not stray)
        )
        return (
            "ok" if ok else "silent",
            f"{len(tasks)} of {n_mini + 1} runs scored, stray named {bool(named)} "
            f"(format {rep.get('format')})",
        )

    return case


# ------------------------------------------------------------------ the registry: (class, name, case)

_RAW: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    *[
        ("writes outside the output", f"score: <out>/.earlyeval.lock is a {k}", _lock_case(k))
        for k in ("file link", "folder link", "fifo")
    ],
    (
        "writes outside the output",
        "ingest: data/<bench>/.earlyeval.lock is a file link",
        case_ingest_lock_link,
    ),
    *[
        ("writes outside the output", f"score --csv at a {k}", _csv_special_case(k))
        for k in ("fifo", "chardev")
    ],
    *[
        ("writes outside the output", f"score: {n} a symlink leaving --out", _output_link_case(n))
        for n in ("per_run.csv", "score.json", "--csv")
    ],
    *[
        (
            "writes outside the output",
            f"export_runs: the {w} a symlink leaving --out",
            _export_link_case(w),
        )
        for w in ("trial folder", "trajectory file")
    ],
    *[
        ("unbounded reads", f"EARLYEVAL_MODEL_KEY_FILE={k}", _key_file_case(k))
        for k in ("/dev/zero", "/dev/urandom", "sparse")
    ],
    *[
        ("unbounded reads", f"inspect .eval: {m}* member inflates to 2 MB", _zip_bomb_case(m))
        for m in ("samples/", "header.json", "summaries")
    ],
    ("unbounded reads", "score --labels: a label file over the limit", case_label_file_over_limit),
    *[
        ("run-file dates and names", f"OpenHands V1 timestamps {s}", _oh_date_case(s))
        for s in ("9999-99-99", "2026-02-30", "3001-01-01")
    ],
    *[
        ("run-file dates and names", f"inspect started_at {s}", _inspect_date_case(s))
        for s in ("9999-99-99", "3001-01-01")
    ],
    *[
        (
            "run-file dates and names",
            f"score --runs {n!r} beside {dec!r}",
            _literal_runs_case(n, dec),
        )
        for n, dec in (("[a].traj", "a.traj"), ("a?.traj", "ab.traj"), ("*.traj", "b.traj"))
    ],
    *[
        ("run-file dates and names", f"ANSI codes in the {w} path", _ansi_case(w))
        for w in ("--model", "--runs", "--out")
    ],
    *[
        ("run-file dates and names", f"a {k} sub-folder in the runs folder", _sub_folder_case(k))
        for k in ("symlinked", "link loop", "unlistable")
    ],
    *[
        ("cluster addresses", f"{v} --scheduler at {w} ({s}://)", _scheduler_case(v, w, s))
        for v, w, s in (
            ("ingest", "an HTTP server", "tcp"),
            ("ingest", "a huge frame length", "tcp"),
            ("ingest", "a closing socket", "tcp"),
            ("ingest", "an HTTP server", "tls"),
            ("score", "an HTTP server", "tcp"),
        )
    ],
    *[
        ("label sources", f"score --labels {v!r}", _labels_case(v))
        for v in (
            "sb-cli:/etc/*",
            "sb-cli:../*.json",
            "sb-cli:/etc/passwd",
            "sb-cli:x/../../*",
            "sb-cli",
        )
    ],
    *[
        (
            "model written but refused",
            f"save_model_dir with thresholds {n}",
            _written_refused_case(n),
        )
        for n in BAD_THRESHOLDS
    ],
    *[
        ("model written but refused", f"{v} on a catalog of 2 runs", _small_catalog_case(v))
        for v in ("train", "evaluate")
    ],
    *[("OpenHands event logs", f"an event file {h}", _oh_damage_case(h)) for h in OH_DAMAGE],
    *[
        ("score from any folder", f"score run from {w}", _cwd_case(w))
        for w in ("sibling", "/", "runs")
    ],
    (
        "score from any folder",
        "a model needing tasks, no table anywhere",
        case_loose_model_without_table,
    ),
    *[
        (
            "score from any folder",
            f"--format auto: {n} mini-swe-agent + 1 SWE-agent{' + a stray file' if s else ''}",
            _mixed_case(n, s),
        )
        for n, s in ((2, False), (11, False), (2, True))
    ],
]


# ------------------------------------------------------------------ a class's cases run side by side

# cases that change this process's environment (os.environ) while they run: never beside another case
SERIAL = {name for cls, name, _ in _RAW if name.startswith("inspect .eval:")}
# the builders of what cases share (inputs, signed model, inspect log, references)
_BUILD = threading.RLock()
WORKERS = 3


def _capture(fn: Callable[[Env], tuple[str, str]], env: Env) -> tuple[str, Any]:
    try:
        return "done", fn(env)
    except Exception as e:  # noqa: BLE001 - handed to the case, which raises it: run_case counts the crash
        return "raised", e


def _batched(
    cls: str, name: str, fn: Callable[[Env], tuple[str, str]]
) -> Callable[[Env], tuple[str, str]]:
    """The case ``name``: the first case of its class to run runs every (non-serial) case of the class in
    WORKERS threads (most are child processes), and each case then answers from what it did there.  The
    outcome is the case's own, only the wall time is shared."""

    def case(env: Env) -> tuple[str, str]:
        if name in SERIAL:
            return fn(env)
        key = f"batch29:{cls}"
        if (
            key not in env._cache
        ):  # the suite runs its cases one at a time: no lock is held while the threads run
            env.tiny(), score_inputs(env)  # built once, before the threads
            todo = [(n, f) for c, n, f in _RAW if c == cls and n not in SERIAL]
            with ThreadPoolExecutor(WORKERS) as ex:
                futs = {n: ex.submit(_capture, f, env) for n, f in todo}
            env._cache[key] = {n: fut.result() for n, fut in futs.items()}
        how, res = env._cache[key].pop(name, ("run", None))
        if how == "raised":
            raise res
        # asked again (another run of the suite): run it alone
        return res if how == "done" else fn(env)

    return case


CASES29: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    (c, n, _batched(c, n, f)) for c, n, f in _RAW
]

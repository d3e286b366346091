"""Fault cases of issue 24, by class: settings, catalogs, run files, gold context, machine faults, one writer per
folder, model-dir integrity, monitor inputs.  Shared by tests/test_faults.py and tools/fault_summary.py.

Every case goes through a public surface (the CLI in a child process, ``load_catalog``, ``ingest_run``,
``Monitor``), so that the same case also runs against an older earlyeval and says what it did there.  A case
returns ("ok" | "named" | "silent", detail) like those of tests/faults.py, or ("absent", why) when the
machine cannot stage the fault (no mount namespace for a tiny tmpfs, root ignoring file modes).
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from faults import FIXTURES, HERE, Env, rehash

TINY_TAU2 = FIXTURES / "tau2" / "solo_no_user.json"


# ------------------------------------------------------------------ helpers


def cli(
    args: list[str],
    ws: Path,
    env: dict[str, str] | None = None,
    preexec: Callable[[], None] | None = None,
    wrap: list[str] | None = None,
    timeout: int = 300,
) -> tuple[int, str, str]:
    """``earlyeval ARGS`` in a child process with workspace ``ws``: (rc, stdout, stderr)."""
    cmd = [*(wrap or []), sys.executable, "-m", "earlyeval.app.cli", *args]
    r = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        cwd=ws,
        timeout=timeout,
        preexec_fn=preexec,
        env={
            **os.environ,
            "EARLYEVAL_HOME": str(ws),
            "EARLYEVAL_BOOSTER_PROBE": "0",
            **(env or {}),
        },
    )
    return r.returncode, r.stdout, r.stderr


def one_line_error(rc: int, err: str, *needles: str) -> bool:
    """rc 2 and a last stderr line ``error: ...`` holding every needle, with no traceback."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    return (
        rc == 2
        and bool(lines)
        and lines[-1].startswith("error:")
        and "Traceback" not in err
        and all(n in lines[-1] for n in needles)
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(folder.iterdir())
        if p.is_file() and not p.name.startswith(".")
    }


def score_inputs(env: Env) -> tuple[Path, Path, Path]:
    """(model dir, a folder of 24 ATIF runs, a workspace) for the score cases, built once."""
    if "score_inputs" not in env._cache:
        from earlyeval.tables.store import write_tasks
        from earlyeval.workflows.export import export_runs

        tiny, _, trajs, tasks = env.tiny()
        runs = env.base / "score_runs"
        if not runs.exists():
            export_runs(trajs[:24], runs, fmt="atif")
        ws = env.base / "ws24"
        ws.mkdir(exist_ok=True)
        # the model in a workspace beside its benchmark's task table: where `score` finds it from any folder
        mdir = ws / "models" / "synth"
        if not mdir.exists():
            shutil.copytree(tiny, mdir)
            (ws / "data" / "synth").mkdir(parents=True, exist_ok=True)
            write_tasks(tasks.values(), ws / "data" / "synth" / "tasks.parquet")
        env._cache["score_inputs"] = (mdir, runs, ws)
    return env._cache["score_inputs"]


def scored_out(env: Env, name: str) -> Path:
    """An output folder holding a complete score.json + per_run.csv (the "old outputs" a fault must leave whole):
    one plain `earlyeval score`, copied for each case."""
    mdir, runs, ws = score_inputs(env)
    first = env.base / "scored_first"
    if not (first / "score.json").is_file():
        rc, _, err = cli(
            [
                "score",
                "--model",
                str(mdir),
                "--runs",
                str(runs),
                "--format",
                "atif",
                "--out",
                str(first),
            ],
            ws,
        )
        if rc != 0:
            raise RuntimeError(f"the plain score failed (rc {rc}): {err[-300:]}")
    out = env.base / name
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(first, out)
    return out


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


def _verdict(
    rc: int, err: str, before: dict[str, bytes], after: dict[str, bytes], *needles: str
) -> tuple[str, str]:
    last = (err.strip().splitlines() or [""])[-1][:160]
    if "Traceback" in err:
        raise RuntimeError(f"rc {rc}, raw traceback: {last}")
    same = before == after
    ok = one_line_error(rc, err, "while writing", "nothing was replaced", *needles) and same
    return (
        "named" if ok else "silent",
        f"rc {rc}, old outputs {'byte-identical' if same else 'CHANGED'}: {last}",
    )


# ------------------------------------------------------------------ machine faults


def _can_unshare() -> bool:
    try:
        return (
            subprocess.run(
                ["unshare", "-r", "-m", "true"], capture_output=True, timeout=30
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _tmpfs_case(kind: str):
    """ENOSPC or EROFS for real: the output folder is a tiny tmpfs in a private mount namespace (unshare -r -m,
    no privilege on the host), holding the old outputs; for EROFS it is then remounted read-only."""

    def case(env: Env):
        if not _can_unshare():
            return ("absent", "no unprivileged mount namespace here (unshare -r -m)")
        src = scored_out(env, f"tmpfs_src_{kind}")
        before = snapshot(src)
        size = sum(len(b) for b in before.values())
        mnt = env.base / f"tmpfs_{kind}"
        mnt.mkdir(exist_ok=True)
        opts = f"size={int(size * 1.5) // 1024 + 4}k" if kind == "ENOSPC" else "size=8m"
        args = " ".join(f"'{a}'" for a in _score_args(env, mnt))
        ro = f"mount -o remount,ro '{mnt}' && " if kind == "EROFS" else ""
        script = (
            f"mount -t tmpfs -o {opts} tmpfs '{mnt}' && cp '{src}'/score.json '{src}'/per_run.csv '{mnt}'/ && {ro}"
            f"'{sys.executable}' -m earlyeval.app.cli {args}; rc=$?; "
            f"mkdir -p '{mnt}.after' && cp '{mnt}'/score.json '{mnt}'/per_run.csv '{mnt}.after'/; exit $rc"
        )
        _, _, ws = score_inputs(env)
        shutil.rmtree(f"{mnt}.after", ignore_errors=True)
        r = subprocess.run(
            ["unshare", "-r", "-m", "sh", "-c", script],
            capture_output=True,
            text=True,
            cwd=ws,
            timeout=300,
            env={**os.environ, "EARLYEVAL_HOME": str(ws), "EARLYEVAL_BOOSTER_PROBE": "0"},
        )
        after = snapshot(Path(f"{mnt}.after")) if Path(f"{mnt}.after").is_dir() else {}
        what = {"ENOSPC": "disk full", "EROFS": "read-only file system"}[kind]
        return _verdict(r.returncode, r.stderr, before, after, what)

    return case


def case_efbig_score(env: Env):
    """EFBIG for real: RLIMIT_FSIZE below the size of score.json in the scoring child."""
    out = scored_out(env, "efbig_out")
    before = snapshot(out)
    limit = min(len(b) for b in before.values()) // 2
    _, _, ws = score_inputs(env)
    rc, _, err = cli(
        _score_args(env, out),
        ws,
        preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
    )
    return _verdict(rc, err, before, snapshot(out), "file too large")


def case_eisdir_score(env: Env):
    """score.json is a folder: EISDIR, and per_run.csv beside it stays the old one."""
    out = scored_out(env, "eisdir_out")
    (out / "score.json").unlink()
    (out / "score.json").mkdir()
    before = snapshot(out)
    _, _, ws = score_inputs(env)
    rc, _, err = cli(_score_args(env, out), ws)
    return _verdict(rc, err, before, snapshot(out), "folder is in the way")


def case_out_is_a_file(env: Env):
    target = env.base / "out_is_file.txt"
    target.write_text("not a folder\n")
    _, _, ws = score_inputs(env)
    rc, _, err = cli(_score_args(env, target), ws)
    last = (err.strip().splitlines() or [""])[-1]
    if "Traceback" in err:
        raise RuntimeError(f"rc {rc}, raw traceback: {last[:120]}")
    ok = (
        one_line_error(rc, err, str(target), "nothing was replaced")
        and target.read_text() == "not a folder\n"
    )
    return ("named" if ok else "silent", f"rc {rc}: {last[:140]}")


def _tau2_workspace(env: Env, name: str, extra_run: str = "", settings: str = "") -> Path:
    """A workspace whose own catalog ``data/fz.toml`` points at a copy of two tau2 fixture files."""
    ws = env.base / name
    if ws.exists():
        shutil.rmtree(ws)
    (ws / "data").mkdir(parents=True)
    runs = ws / "shared" / "tau2runs"
    runs.mkdir(parents=True)
    shutil.copy(TINY_TAU2, runs / "a.json")
    shutil.copy(FIXTURES / "tau2" / "shop_2025.json", runs / "b.json")
    (ws / "data" / "fz.toml").write_text(
        f'bench = "fz"\nfamilies = ["behaviour"]\n{settings}\n[[runs]]\nfolder = "tau2runs"\nagent = "a"\nformat = "tau2"\n'
        f'glob = "*.json"\nlabels = [{{ format = "inline" }}]\n{extra_run}\n'
    )
    return ws


def case_efbig_ingest(env: Env):
    """EFBIG while pyarrow writes trajectories.parquet (ingest): one line, the old parquet whole."""
    ws = _tau2_workspace(env, "ws_ingest_efbig")
    data = {"EARLYEVAL_DATA": str(ws / "shared")}
    rc, _, err = cli(["ingest", "--bench", "fz"], ws, env=data)
    if rc != 0:
        raise RuntimeError(f"plain ingest failed: {err[-200:]}")
    out = ws / "data" / "fz"
    before = snapshot(out)
    limit = 2048
    rc, _, err = cli(
        ["ingest", "--bench", "fz"],
        ws,
        env=data,
        preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)),
    )
    after = snapshot(out)
    # the marker is removed first, by design
    (
        before.pop("ingest.done", None),
        after.pop("ingest.done", None),
    )
    return _verdict(rc, err, before, after, "file too large")


def case_efbig_model_save(env: Env):
    """EFBIG while a model directory is written: WriteError naming it, the old directory whole."""
    src = env.tiny()[0]
    dst = env.base / "efbig_model"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    before = snapshot(dst)
    code = (
        "import sys\nfrom earlyeval.model.modeldir import load_model_dir, save_model_dir\n"
        "b = load_model_dir(sys.argv[1], probe_boosters=False)\n"
        "try:\n    save_model_dir(b, sys.argv[2])\nexcept OSError as e:\n    print(type(e).__name__ + ': ' + str(e))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, str(src), str(dst)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)),
    )
    msg = (r.stdout.strip().splitlines() or [""])[-1]
    same = snapshot(dst) == before
    ok = (
        msg.startswith("WriteError") and "file too large" in msg and "while writing" in msg and same
    )
    return (
        "named" if ok else "silent",
        f"{msg[:120]}; old model dir {'whole' if same else 'CHANGED'}",
    )


# ------------------------------------------------------------------ one writer per output folder


def concurrent_trial(env: Env, k: int) -> tuple[bool, str]:
    """Three `earlyeval score` runs on one --out, each over another set of runs; afterwards score.json and
    per_run.csv must be one writer's pair (the same run ids); --force, since each replaces another scoring."""
    mdir, runs, ws = score_inputs(env)
    sets = []
    for n in (6, 12, 24):
        d = env.base / f"conc_runs_{n}"
        if not d.exists():
            d.mkdir()
            for trial in sorted(runs.iterdir())[:n]:
                shutil.copytree(trial, d / trial.name)
        sets.append(d)
    out = env.base / f"conc_out_{k}"
    shutil.rmtree(out, ignore_errors=True)
    base_env = {**os.environ, "EARLYEVAL_HOME": str(ws), "EARLYEVAL_BOOSTER_PROBE": "0"}
    ps = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "earlyeval.app.cli",
                "score",
                "--model",
                str(mdir),
                "--runs",
                str(d),
                "--format",
                "atif",
                "--out",
                str(out),
                "--force",
            ],
            cwd=ws,
            env=base_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for d in sets
    ]
    errs = [p.communicate(timeout=600)[1] for p in ps]
    rcs = [p.returncode for p in ps]
    if any(rcs):
        return False, f"rc {rcs}: {[e.strip().splitlines()[-1:] for e in errs]}"
    rep = json.loads((out / "score.json").read_text())
    ids_json = sorted(r["run_id"] for r in rep["per_run"])
    ids_csv = sorted(
        line.split(",")[0] for line in (out / "per_run.csv").read_text().splitlines()[1:]
    )
    return ids_json == ids_csv, f"score.json {len(ids_json)} runs, per_run.csv {len(ids_csv)} runs"


def case_concurrent_scores(env: Env):
    res = [concurrent_trial(env, 0)]
    mixed = sum(not ok for ok, _ in res)
    return (
        "ok" if mixed == 0 else "silent",
        f"{mixed} mixed sets in 1 trial of 3 writers ({res[-1][1]})",
    )


# ------------------------------------------------------------------ one run, one file; what the batch does not read

# a format, its fixture folder and one of its run files (a plain one, read by the format)
TWIN_FORMATS = [
    ("swe-agent-traj", "swe-agent-traj", "astropy__astropy-1.traj"),
    ("coder-traj", "coder-traj", "trajs/astropy__astropy-1.traj"),
    ("moatless-transitions", "moatless-transitions", "trajs/astropy__astropy-1.json"),
    ("moatless-steps", "moatless-steps", None),
    ("tau2", "tau2", "solo_no_user.json"),
    ("toolathlon", "toolathlon", "trajs/fake-model_sales-report.json"),
    ("openhands-events", "openhands-events", None),
    ("mini-swe-agent-v1", "export-atif/mini-swe-agent", None),
]


def _generic_ingest(fmt: str, folder: Path) -> tuple[list[Any], list[dict[str, str]]]:
    """What `earlyeval score --format FMT --runs FOLDER` reads (no catalog entry): its run specs, ingested."""
    from earlyeval.workflows.score import read_runs, run_specs

    trajs, skipped, _ = read_runs(run_specs(folder, fmt))
    return trajs, skipped


def _twin_case(fmt: str, fixture: str, rel: str | None):
    def case(env: Env):
        d = env.base / f"twin_{fmt}"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(FIXTURES / fixture, d)
        plain_trajs, _ = _generic_ingest(fmt, d)
        srcs = sorted(
            {
                t.meta.get("source_file", "")
                for t in plain_trajs
                if not str(t.meta.get("source_file", "")).endswith(".gz")
            }
        )
        if rel is None:
            if not srcs:
                return ("absent", f"no plain run file read in the {fixture} fixture")
            f = Path(srcs[0])
        else:
            f = d / rel
        with open(f, "rb") as a, gzip.open(f"{f}.gz", "wb") as b:
            b.write(a.read())
        trajs, skipped = _generic_ingest(fmt, d)
        from_f = [t for t in trajs if str(t.meta.get("source_file", "")).startswith(str(f))]
        n_plain = sum(str(t.meta.get("source_file", "")) == str(f) for t in plain_trajs)
        named = [s for s in skipped if s["file"] == f"{f}.gz" and f.name in s["reason"]]
        ok = len(from_f) == n_plain and len(trajs) == len(plain_trajs) and bool(named)
        return (
            "named" if ok else "silent",
            f"{f.name} + .gz: {len(from_f)} runs from them (alone {n_plain}), total {len(trajs)} vs {len(plain_trajs)}, "
            f"skip named: {bool(named)}",
        )

    return case


SPECIAL = ("fifo", "socket", "devzero", "dangling", "chardev")


def _make_special(kind: str, bad: Path) -> str | None:
    """Put a ``kind`` entry at ``bad``; why not, when the machine cannot make one."""
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        try:
            s.bind(str(bad))
        except OSError as e:
            return f"cannot bind a unix socket here ({e})"
        finally:
            s.close()
    elif kind == "devzero":
        os.symlink("/dev/zero", bad)
    elif kind == "dangling":
        os.symlink(bad.parent / "gone.json", bad)
    elif kind == "chardev":
        try:
            os.mknod(bad, 0o600 | __import__("stat").S_IFCHR, os.makedev(1, 5))
        except OSError as e:
            return f"mknod needs privilege here ({e.strerror})"
    return None


def _special_results(env: Env) -> dict[str, Any]:
    """One folder per kind beside a good run file, all read by one child process (a FIFO opened for reading
    would block it: the timeout turns that into a crash of every case)."""
    if "special" not in env._cache:
        absent, dirs = {}, {}
        for kind in SPECIAL:
            d = env.base / f"special_{kind}"
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            shutil.copy(TINY_TAU2, d / "good.json")
            why = _make_special(kind, d / "bad.json")
            if why:
                absent[kind] = why
            else:
                dirs[kind] = str(d)
        code = (
            "import json, sys\nfrom pathlib import Path\nfrom earlyeval.workflows.score import read_runs, run_specs\n"
            "out = {}\nfor k, d in json.loads(sys.argv[1]).items():\n"
            "    t, s, _ = read_runs(run_specs(Path(d), 'tau2'))\n    out[k] = {'runs': len(t), 'skipped': s}\n"
            "print(json.dumps(out))\n"
        )
        try:
            r = subprocess.run(
                [sys.executable, "-c", code, json.dumps(dirs)],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=HERE,
            )
            res = (
                json.loads(r.stdout.strip().splitlines()[-1])
                if r.returncode == 0
                else RuntimeError(f"rc {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
            )
        except subprocess.TimeoutExpired:
            res = RuntimeError("the batch blocked (no answer in 120 s): a FIFO was opened?")
        env._cache["special"] = (res, absent)
    return env._cache["special"]


def _special_file_case(kind: str):
    """A FIFO, a socket, a symlink to /dev/zero, a dangling link or a character device in a runs folder: a skip
    entry each, never opened, and the rest of the batch read."""

    def case(env: Env):
        res, absent = _special_results(env)
        if kind in absent:
            return ("absent", absent[kind])
        if isinstance(res, Exception):
            raise res
        out = res[kind]
        hit = [s for s in out["skipped"] if s["file"].endswith("bad.json")]
        return (
            "named" if hit and out["runs"] >= 1 else "silent",
            f"{kind}: {out['runs']} runs, skip {hit[:1]}",
        )

    return case


# ------------------------------------------------------------------ catalogs

RUN = 'folder = "tau2runs"\nagent = "a"\nformat = "tau2"\nglob = "*.json"\n'


def _catalog_text(
    run_lines: str = "", top: str = "", settings: str = "", runs: str | None = None
) -> str:
    """A small catalog: top-level keys (``top``, or ``runs`` given as a top-level assignment) before the tables."""
    if runs is not None and not runs.lstrip().startswith("["):
        top, runs = f"{top}\n{runs}", ""
    body = runs if runs is not None else f"[[runs]]\n{RUN}{run_lines}\n"
    return f'bench = "fz"\nfamilies = ["behaviour"]\n{top}\n[settings]\nmin_steps = 2\n{settings}\n{body}'


BAD_CATALOGS: list[tuple[str, str, str]] = [  # (name, catalog text, the key the error must name)
    ('small = "false"', _catalog_text('small = "false"\n'), "small"),
    (
        "public_submissions a string",
        _catalog_text('public_submissions = "20240402_sweagent"\n'),
        "public_submissions",
    ),
    ('date = "9999-99-99"', _catalog_text('date = "9999-99-99"\n'), "date"),
    ('price = "cheap"', _catalog_text('price = "cheap"\n'), "price"),
    ('runs = "x"', _catalog_text(runs='runs = "x"\n'), "runs"),
    ("labels = [1]", _catalog_text("labels = [1]\n"), "labels"),
    (
        "folder = 5",
        _catalog_text(runs='[[runs]]\nfolder = 5\nagent = "a"\nformat = "tau2"\n'),
        "folder",
    ),
    ("5000-deep array", _catalog_text(top="x = " + "[" * 5000 + "]" * 5000), "toml"),
    (
        "absolute glob",
        _catalog_text(
            runs='[[runs]]\nfolder = "tau2runs"\nagent = "a"\nformat = "tau2"\nglob = "/etc/*"\n'
        ),
        "glob",
    ),
    (
        "parent-escaping glob",
        _catalog_text(
            runs='[[runs]]\nfolder = "tau2runs"\nagent = "a"\nformat = "tau2"\nglob = "../../*"\n'
        ),
        "glob",
    ),
    ("confidence = 1.0", _catalog_text(settings="confidence = 1.0\n"), "confidence"),
    ("target_accuracy = 0", _catalog_text(settings="target_accuracy = 0\n"), "target_accuracy"),
    (
        "min_steps = -3",
        _catalog_text(runs=f"[[runs]]\n{RUN}", settings="").replace(
            "min_steps = 2", "min_steps = -3"
        ),
        "min_steps",
    ),
    (
        "usd_per_step = -1",
        _catalog_text('price = { source = "x", usd_per_step = -1.0 }\n'),
        "usd_per_step",
    ),
    ("a typo: smal = true", _catalog_text("smal = true\n"), "smal"),
]


def _bad_catalog_case(text: str, key: str):
    """``load_catalog`` of the bad catalog: a CatalogError naming the file and the key (what every verb prints
    as one line, rc 2: ``case_bad_catalog_cli``).  Loading it must not succeed, whatever it would mean."""

    def case(env: Env):
        from earlyeval.config.catalog import load_catalog
        from earlyeval.core.errors import CatalogError

        p = env.base / "catalogs24" / f"c{abs(hash(text)) % 10**8}" / "fz.toml"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        try:
            load_catalog(p)
        except CatalogError as e:
            msg = " ".join(str(e).split())
            return ("named" if str(p) in msg and key in msg else "silent", msg[-150:])
        return ("silent", "loaded")

    return case


def _bad_catalog_cli(verb: str, text: str, key: str):
    """The CLI verb with a bad workspace catalog: rc 2, one line naming the file and the key."""

    def case(env: Env):
        ws = _tau2_workspace(env, f"ws_cat_{verb}")
        (ws / "data" / "fz.toml").write_text(text)
        rc, _, err = cli([verb, "--bench", "fz"], ws, env={"EARLYEVAL_DATA": str(ws / "shared")})
        last = (err.strip().splitlines() or [""])[-1][:200]
        if "Traceback" in err:
            raise RuntimeError(f"rc {rc}: {last}")
        return (
            "named" if one_line_error(rc, err, "fz.toml", key) else "silent",
            f"{verb}: rc {rc}: {last}",
        )

    return case


def case_bad_workspace_catalog_does_not_break_score(env: Env):
    """A malformed <workspace>/data/*.toml: `score` on runs it does not describe warns (naming it) and goes on."""
    mdir, runs, _ = score_inputs(env)
    ws = env.base / "ws_badcat"
    (ws / "data").mkdir(parents=True, exist_ok=True)
    (ws / "data" / "broken.toml").write_text('bench = "broken"\nruns = "x"\n')
    rc, _, err = cli(
        [
            "score",
            "--model",
            str(mdir),
            "--runs",
            str(runs),
            "--format",
            "atif",
            "--out",
            str(ws / "out"),
        ],
        ws,
    )
    if "Traceback" in err:
        raise RuntimeError(f"rc {rc}: {err.strip().splitlines()[-1][:150]}")
    ok = rc == 0 and "broken.toml" in err and (ws / "out" / "score.json").is_file()
    return ("named" if ok else "silent", f"rc {rc}; warned: {'broken.toml' in err}")


def case_dotted_format_is_not_imported(env: Env):
    """format = "fz_probe:Probe": a module that would leave a marker when imported; nothing is imported or called."""
    probe_dir = env.base / "probe_pkg"
    probe_dir.mkdir(exist_ok=True)
    marker = env.base / "probe_imported"
    marker.unlink(missing_ok=True)
    (probe_dir / "fz_probe.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\nclass Probe:\n    def __init__(self):\n"
        f"        open({str(marker)!r}, 'a').write(' called')\n    def parse(self, path, spec, bench):\n        return iter(())\n"
    )
    ws = _tau2_workspace(env, "ws_dotted")
    (ws / "data" / "fz.toml").write_text(
        _catalog_text().replace('format = "tau2"', 'format = "fz_probe:Probe"')
    )
    rc, _, err = cli(
        ["ingest", "--bench", "fz"],
        ws,
        env={
            "EARLYEVAL_DATA": str(ws / "shared"),
            "PYTHONPATH": os.pathsep.join([str(probe_dir), os.environ.get("PYTHONPATH", "")]),
        },
    )
    imported = marker.read_text() if marker.exists() else ""
    if "Traceback" in err and not imported:
        raise RuntimeError(f"rc {rc}: {err.strip().splitlines()[-1][:150]}")
    ok = not imported and one_line_error(rc, err, "fz_probe:Probe")
    return ("named" if ok else "silent", f"rc {rc}; probe module {imported or 'not imported'}")


# ------------------------------------------------------------------ settings and inputs at the boundary


def _env_var_cli(name: str, value: str):
    """`earlyeval score` with a malformed variable: rc 2, one line naming it (not a traceback at import)."""

    def case(env: Env):
        mdir, runs, ws = score_inputs(env)
        args = [
            "score",
            "--model",
            str(mdir),
            "--runs",
            str(runs),
            "--format",
            "atif",
            "--out",
            str(env.base / f"envout_{name}"),
        ]
        rc, _, err = cli(args, ws, env={name: value})
        last = (err.strip().splitlines() or [""])[-1][:160]
        if "Traceback" in err:
            raise RuntimeError(f"rc {rc}: {last}")
        return (
            "named" if one_line_error(rc, err, name) else "silent",
            f"{name}={value!r}: rc {rc}: {last}",
        )

    return case


def _env_var_case(name: str, value: str):
    """In-process: the reader of the variable refuses a malformed value by name (never reads it as another)."""

    def case(env: Env):
        from earlyeval.config.catalog import LabelSpec, RunSpec
        from earlyeval.ingest import ingest_run
        from earlyeval.model.modeldir import load_model_dir

        with _env(name, value):
            try:
                if name == "EARLYEVAL_MAX_INPUT_BYTES":
                    d = env.base / "env_runs"
                    (d / "runs").mkdir(parents=True, exist_ok=True)
                    shutil.copy(TINY_TAU2, d / "runs" / "a.json")
                    spec = RunSpec(
                        name="r",
                        folder="runs",
                        agent="a",
                        scaffold="a",
                        model="m",
                        format="tau2",
                        glob="*.json",
                        labels=[LabelSpec("inline", "")],
                    )
                    trajs, rep = ingest_run(spec, "tau2", d)
                    return (
                        "silent",
                        f"{name}={value!r}: {len(trajs)} runs read, {len(rep.skipped)} skipped, no error",
                    )
                load_model_dir(
                    env.tiny()[0],
                    probe_boosters=None if name == "EARLYEVAL_BOOSTER_PROBE" else False,
                )
            except Exception as e:
                if name in str(e) and isinstance(e, ValueError):
                    return ("named", f"{type(e).__name__}: {str(e)[:100]}")
                raise
        return ("silent", f"{name}={value!r} accepted")

    return case


def case_as_of_not_a_date(env: Env):
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
            "--as-of",
            "2024-13-45",
            "--out",
            str(env.base / "asof_out"),
        ],
        ws,
    )
    ok = (
        rc == 2
        and "--as-of" in err
        and "Traceback" not in err
        and not (env.base / "asof_out").exists()
    )
    return ("named" if ok else "silent", f"--as-of 2024-13-45: rc {rc}")


def case_monitor_as_of_not_a_date(env: Env):
    from earlyeval import Monitor

    _, _, trajs, tasks = env.tiny()
    mon = Monitor.load(env.tiny()[0], budget=False)
    t = trajs[0]
    mon.start(task=tasks[t.task_id], run_id=t.run_id, as_of="2024-13-45")
    ds = [mon.observe(s) for s in t.steps[:-1]]
    ok = (
        all(not d.halt for d in ds)
        and all(d.p_success is None for d in ds)
        and "as_of" in ds[0].reason
    )
    return ("named" if ok else "silent", f"Monitor.start(as_of='2024-13-45'): {ds[0].reason[:100]}")


def _warm_start_case(value: Any):
    def case(env: Env):
        from earlyeval import Monitor
        from earlyeval.fitting.warm import warm_start

        _, _, trajs, tasks = env.tiny()
        mon = Monitor.load(env.tiny()[0], budget=False)
        runs = [
            dataclasses.replace(t, outcome=value if i == 0 else t.outcome)
            for i, t in enumerate(trajs[:6])
        ]
        try:
            mon.use_warm_start(warm_start(mon, runs, tasks))
        except ValueError as e:
            return (
                "named" if repr(value) in str(e) or "0/1" in str(e) else "silent",
                f"outcome {value!r}: {str(e)[:100]}",
            )
        return ("silent", f"warm start accepted an outcome of {value!r}")

    return case


def case_nan_bound_never_selects(env: Env):
    """confidence = 1.0 makes the Wilson bound NaN: the selection refuses instead of reading it as 1.0."""
    from earlyeval import Monitor
    from earlyeval.fitting.thresholds import WarmStartRule, select_thresholds
    from earlyeval.fitting.warm import halting_policy, runset_of
    from earlyeval.live.replay import replay

    _, _, trajs, tasks = env.tiny()
    mon = Monitor.load(env.tiny()[0], budget=False, explain="never")
    recs = [replay(mon, t, tasks.get(t.task_id)) for t in trajs[:40]]
    rs = runset_of(trajs[:40], recs, halting_policy(mon.bundle))
    rule = WarmStartRule(taus=tuple(x / 100 for x in range(50, 100, 5)) + (10.0,), confidence=1.0)
    try:
        th = select_thresholds({"a": rs}, rule)
    except ValueError as e:
        return ("named", f"refused: {str(e)[:110]}")
    return (
        "silent",
        f"selected {th['success']}/{th['failure']} with a NaN bound (min accuracy {th['selection_min_accuracy']})",
    )


# ------------------------------------------------------------------ gold context


def _gold_rows(mon: Any, run: Any, task: Any) -> list[list[float]]:
    mon.start(task=task, run_id=run.run_id)
    cols = [i for i, n in enumerate(mon.loaded.feature_names) if n.startswith("gold_")]
    rows = []
    for s in run.steps[:-1]:
        mon.observe(s)
        rows.append([float(mon.run.last_features[i]) for i in cols])
    return rows


def case_gold_same_id_other_patch(env: Env):
    from earlyeval import Monitor

    mdir, _, trajs, tasks = env.tiny()
    base = Monitor.load(mdir, budget=False)
    changed = 0
    pairs = [
        (t, tasks[f"repo__repo-{(int(t.task_id.rsplit('-', 1)[1]) + 5) % 12}"]) for t in trajs[:12]
    ]
    for run, other in pairs:
        real = tasks[run.task_id]
        variant = dataclasses.replace(
            real,
            gold_patch=other.gold_patch,
            test_patch=other.test_patch,
            fail_to_pass=other.fail_to_pass,
        )
        ref = _gold_rows(Monitor.load(mdir, budget=False), run, real)
        _gold_rows(base.spawn(), run, variant)
        got = _gold_rows(base.spawn(), run, real)
        changed += json.dumps(got) != json.dumps(ref)
    return (
        "ok" if changed == 0 else "silent",
        f"{changed} of 12 runs featurized with an earlier run's patch",
    )


def case_gold_bytes(env: Env):
    from earlyeval import Monitor

    mdir, _, trajs, tasks = env.tiny()
    run = trajs[3]
    real = tasks[run.task_id]
    other = tasks[f"repo__repo-{(int(run.task_id.rsplit('-', 1)[1]) + 5) % 12}"]
    mon = Monitor.load(mdir, budget=False, tasks=tasks)
    # bytes, and not UTF-8
    given = {
        **real.to_dict(),
        "gold_patch": other.gold_patch.encode("utf-16"),
    }
    rows = _gold_rows(mon, run, given)
    ref = _gold_rows(Monitor.load(mdir, budget=False), run, real)
    d = mon.observe(run.steps[0])
    said = any("gold_patch" in w for w in mon.run.warnings)
    ok = rows == ref and said
    return (
        "named" if ok else "silent",
        f"undecodable bytes gold patch: table patch used {rows == ref}, said {said}, "
        f"context {d.context}",
    )


# ------------------------------------------------------------------ model-dir integrity


def _signed_case(edit: str):
    def case(env: Env):
        from earlyeval import Monitor

        key = "k" * 32
        code = (
            "import os, sys\nfrom earlyeval.model.modeldir import load_model_dir, save_model_dir\n"
            "save_model_dir(load_model_dir(sys.argv[1], probe_boosters=False), sys.argv[2])\n"
        )
        d = env.base / f"signed_{edit}"
        shutil.rmtree(d, ignore_errors=True)
        subprocess.run(
            [sys.executable, "-c", code, str(env.tiny()[0]), str(d)],
            check=True,
            timeout=300,
            env={**os.environ, "EARLYEVAL_MODEL_KEY": key, "EARLYEVAL_BOOSTER_PROBE": "0"},
        )
        th = json.loads((d / "thresholds.json").read_text())
        th["success"] = 0.51 if edit == "thresholds" else th["success"]
        (d / "thresholds.json").write_text(json.dumps(th, indent=1, sort_keys=True))
        if edit == "leaf":
            text = (d / "booster_success.txt").read_text()  # the first leaf value, still a number
            i = text.index("leaf_value=") + len("leaf_value=")
            j = min(k for k in (text.find(" ", i), text.find("\n", i)) if k > 0)
            (d / "booster_success.txt").write_text(text[:i] + "0.75" + text[j:])
        m = json.loads((d / "manifest.json").read_text())
        m["thresholds"] = th
        (d / "manifest.json").write_text(json.dumps(m))
        rehash(d)
        try:
            with _env("EARLYEVAL_MODEL_KEY", key):
                Monitor.load(d, require_signature=True, budget=False)
        except Exception as e:
            if "signature" in str(e) and type(e).__name__ == "ModelDirError":
                return ("named", f"re-hashed {edit} edit refused: {str(e)[:90]}")
            raise
        return ("silent", f"a re-hashed {edit} edit loaded with require_signature=True")

    return case


def case_rehashed_threshold_below_half(env: Env):
    """thresholds 0.0 / -1 re-hashed: refused by the range check even without a signature."""
    from earlyeval.model.modeldir import load_model_dir

    d = env.copy_model("rehash_zero")
    th = json.loads((d / "thresholds.json").read_text())
    th.update(success=0.0, failure=-1.0)
    (d / "thresholds.json").write_text(json.dumps(th))
    m = json.loads((d / "manifest.json").read_text())
    m["thresholds"] = th
    (d / "manifest.json").write_text(json.dumps(m))
    rehash(d)
    try:
        load_model_dir(d, probe_boosters=False)
    except Exception as e:
        if type(e).__name__ == "ModelDirError" and "thresholds" in str(e):
            return ("named", str(e)[-100:])
        raise
    return ("silent", "thresholds 0.0 / -1.0 loaded")


@contextlib.contextmanager
def _env(name: str, value: str):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


# ------------------------------------------------------------------ the registry: (class, name, case)

CASES24: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    ("machine faults", "ENOSPC: score --out on a full tmpfs", _tmpfs_case("ENOSPC")),
    ("machine faults", "EROFS: score --out on a read-only tmpfs", _tmpfs_case("EROFS")),
    ("machine faults", "EFBIG: score under RLIMIT_FSIZE", case_efbig_score),
    ("machine faults", "EISDIR: score.json is a folder", case_eisdir_score),
    ("machine faults", "--out names an existing file", case_out_is_a_file),
    ("machine faults", "EFBIG: ingest's parquet under RLIMIT_FSIZE", case_efbig_ingest),
    ("machine faults", "EFBIG: model dir save under RLIMIT_FSIZE", case_efbig_model_save),
    ("one writer per folder", "3 concurrent scores on one --out", case_concurrent_scores),
    *[
        ("run files", f"{fmt}: plain and gzipped copy of one run", _twin_case(fmt, fx, rel))
        for fmt, fx, rel in TWIN_FORMATS
    ],
    *[("run files", f"a {k} in the runs folder", _special_file_case(k)) for k in SPECIAL],
    *[("catalogs", name, _bad_catalog_case(text, key)) for name, text, key in BAD_CATALOGS],
    (
        "catalogs",
        'ingest --bench with runs = "x" (CLI)',
        _bad_catalog_cli("ingest", BAD_CATALOGS[4][1], "runs"),
    ),
    (
        "catalogs",
        "train --bench with confidence = 1.0 (CLI)",
        _bad_catalog_cli("train", BAD_CATALOGS[10][1], "confidence"),
    ),
    (
        "catalogs",
        "bad workspace catalog, score on other runs",
        case_bad_workspace_catalog_does_not_break_score,
    ),
    ("catalogs", "dotted-path format is never imported", case_dotted_format_is_not_imported),
    (
        "settings",
        "EARLYEVAL_MAX_MODEL_FILE_BYTES=abc (score CLI)",
        _env_var_cli("EARLYEVAL_MAX_MODEL_FILE_BYTES", "abc"),
    ),
    (
        "settings",
        "EARLYEVAL_MAX_INPUT_BYTES=lots (score CLI)",
        _env_var_cli("EARLYEVAL_MAX_INPUT_BYTES", "lots"),
    ),
    (
        "settings",
        "EARLYEVAL_MAX_MODEL_FILE_BYTES=0",
        _env_var_case("EARLYEVAL_MAX_MODEL_FILE_BYTES", "0"),
    ),
    ("settings", "EARLYEVAL_MAX_INPUT_BYTES=-5", _env_var_case("EARLYEVAL_MAX_INPUT_BYTES", "-5")),
    (
        "settings",
        "EARLYEVAL_BOOSTER_PROBE=maybe",
        _env_var_case("EARLYEVAL_BOOSTER_PROBE", "maybe"),
    ),
    ("settings", "confidence 1.0: the NaN bound never selects", case_nan_bound_never_selects),
    ("monitor inputs", "score --as-of 2024-13-45", case_as_of_not_a_date),
    ("monitor inputs", "Monitor.start(as_of='2024-13-45')", case_monitor_as_of_not_a_date),
    *[
        ("monitor inputs", f"warm start outcome {v!r}", _warm_start_case(v))
        for v in (7, 0.5, "1", -1)
    ],
    ("gold context", "same id, another patch, spawned monitors", case_gold_same_id_other_patch),
    ("gold context", "gold patch as undecodable bytes", case_gold_bytes),
    ("model dirs", "re-hashed thresholds 0.0 / -1", case_rehashed_threshold_below_half),
    ("model dirs", "re-hashed threshold edit, require_signature", _signed_case("thresholds")),
    ("model dirs", "re-hashed leaf-value edit, require_signature", _signed_case("leaf")),
]

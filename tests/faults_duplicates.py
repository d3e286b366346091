"""Fault cases of the class "duplicates within a folder": the same run stored twice in one scored or ingested folder
(copied into a sub-folder, renamed, gzipped elsewhere, three times).  Shared by tests/test_faults.py and
tools/fault_summary.py.

"ok": every run counted once (the counts, the savings and a pass's audit evidence are those of the folder without
the copies) and a skip names both files; a different run of the same task is still counted.  "silent": a copy
counted as a run, or a run dropped as a copy."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Callable

from faults import FIXTURES, Env
from faults24 import _tau2_workspace, cli, one_line_error
from faults29 import _fresh, _no_traceback, score_inputs

SWE_TRAJ = FIXTURES / "swe-agent-traj" / "astropy__astropy-1.traj"


def _copied_folder(env: Env, name: str, how: str) -> tuple[Path, int]:
    """The suite's 8 ATIF runs with one of them stored again as ``how`` says; (folder, runs without copies)."""
    _, runs, _ = score_inputs(env)
    d = _fresh(env.base / "dups" / name)
    shutil.copytree(runs, d)
    trials = sorted(p for p in d.iterdir() if p.is_dir())
    first = trials[0]
    if how == "sub-folder":
        shutil.copytree(first, d / "copy" / first.name)
    elif how == "renamed":
        shutil.copytree(first, d / "zz-renamed-trial")
    elif how == "three times":
        shutil.copytree(first, d / "copy" / first.name)
        shutil.copytree(first, d / "again" / "deeper" / first.name)
    elif how == "a different run of the same task":  # not a copy: one step's text differs
        other = d / "zz-same-task-other-run"
        shutil.copytree(first, other)
        tj = other / "agent" / "trajectory.json"
        doc = json.loads(tj.read_text())
        step = next(s for s in doc["steps"] if s.get("observation") or s.get("tool_calls"))
        step["message"] = str(step.get("message") or "") + " and one more thought"
        tj.write_text(json.dumps(doc))
        return d, len(trials) + 1
    return d, len(trials)


def _score(env: Env, runs: Path, name: str, extra: list[str]) -> tuple[int, str, dict | None]:
    mdir, _, ws = score_inputs(env)
    out = env.base / "dups" / f"out_{name}"
    args = ["score", "--model", str(mdir), "--runs", str(runs), "--format", "atif"]
    rc, _, err = cli([*args, "--out", str(out), "--force", *extra], ws)
    _no_traceback(rc, err)
    rep = json.loads((out / "score.json").read_text()) if rc == 0 else None
    return rc, err, rep


def _score_case(how: str, extra: tuple[str, ...] = ()):
    def case(env: Env):
        name = f"{how.replace(' ', '_')}{'_pass' if extra else ''}"
        runs, want = _copied_folder(env, name, how)
        rc, err, rep = _score(env, runs, name, list(extra))
        if rep is None:
            return ("named" if one_line_error(rc, err) else "silent", f"rc {rc}: {err[-150:]}")
        n = rep["n_trajectories"]
        copies = [s for s in rep["skipped"] if "the same run as" in s.get("reason", "")]
        both = all(s["file"] and str(runs) in s["reason"] for s in copies)
        n_copies = {"three times": 2, "a different run of the same task": 0}.get(how, 1)
        ok = n == want and len(copies) == n_copies and both and len(rep["per_run"]) == want
        if extra and rep.get("pass"):
            ok = ok and rep["pass"]["n_audited"] <= want
        return ("ok" if ok else "silent", f"{n} runs scored of {want}, {len(copies)} copies named")

    return case


def _ingest_one(run_dir: Path, fmt: str, glob: str):
    from earlyeval.config.catalog import LabelSpec, RunSpec
    from earlyeval.ingest import ingest_run

    spec = RunSpec(
        name="r",
        folder=str(run_dir),
        agent="a",
        scaffold="a",
        model="",
        format=fmt,
        glob=glob,
        labels=[LabelSpec("inline", "")] if fmt != "swe-agent-traj" else [],
    )
    trajs, rep = ingest_run(spec, "dups", Path("/"))
    return trajs, rep.skipped


def _ingest_swe_case(how: str):
    """A SWE-agent run file stored again in the same run folder (a sub-folder, a gzipped copy elsewhere)."""

    def case(env: Env):
        d = _fresh(env.base / "dups" / f"ingest_{how.replace(' ', '_')}")
        d.mkdir(parents=True)
        shutil.copy(SWE_TRAJ, d / "astropy__astropy-1.traj")
        if how == "sub-folder":
            (d / "copy").mkdir()
            shutil.copy(SWE_TRAJ, d / "copy" / "astropy__astropy-1.traj")
        else:  # gzipped, in another sub-folder (the plain/gz twin rule sees one folder only)
            (d / "gz").mkdir()
            (d / "gz" / "astropy__astropy-1.traj.gz").write_bytes(
                gzip.compress(SWE_TRAJ.read_bytes())
            )
        trajs, skipped = _ingest_one(d, "swe-agent-traj", "**/*.traj*")
        copies = [s for s in skipped if "the same run as" in s["reason"]]
        ok = (
            len(trajs) == 1
            and len(copies) == 1
            and str(d / "astropy__astropy-1.traj") in copies[0]["reason"]
        )
        return ("ok" if ok else "silent", f"{len(trajs)} runs read, {len(copies)} copies named")

    return case


def case_ingest_catalog_copy(env: Env):
    """``earlyeval ingest`` of a catalog run folder holding a tau2 result file twice: each simulation once."""
    plain = _tau2_workspace(env, "dups_ingest_plain")
    data = {"EARLYEVAL_DATA": str(plain / "shared")}
    rc, out, err = cli(["ingest", "--bench", "fz", "--json"], plain, env=data)
    _no_traceback(rc, err)
    ws = _tau2_workspace(env, "dups_ingest_copy")
    runs = ws / "shared" / "tau2runs"
    shutil.copy(runs / "a.json", runs / "c.json")
    rc2, out2, err2 = cli(
        ["ingest", "--bench", "fz", "--json"], ws, env={"EARLYEVAL_DATA": str(ws / "shared")}
    )
    _no_traceback(rc2, err2)
    if rc or rc2:
        return ("named" if one_line_error(rc2, err2) else "silent", f"rc {rc}/{rc2}: {err2[-150:]}")
    a, b = (json.loads((w / "reports" / "fz" / "ingest.json").read_text()) for w in (plain, ws))
    n = lambda rep: sum(r["trajectories"] for r in rep["runs"])  # noqa: E731
    copies = [s for r in b["runs"] for s in r["skipped"] if "the same run as" in s["reason"]]
    ok = n(a) == n(b) and len(copies) >= 1 and all("a.json" in s["reason"] for s in copies)
    return (
        "ok" if ok else "silent",
        f"{n(b)} simulations with the copy, {n(a)} without; {len(copies)} named",
    )


def case_identical_trials_in_one_file(env: Env):
    """A tau2 result file whose two trials of one task are alike step for step (a deterministic agent): two runs,
    not a copy; both counted, no skip."""
    import copy

    d = _fresh(env.base / "dups" / "trials")
    d.mkdir(parents=True)
    doc = json.loads((FIXTURES / "tau2" / "shop_2025.json").read_text())
    (d / "shop.json").write_text(json.dumps(doc))
    plain, _ = _ingest_one(d, "tau2", "*.json")
    sim = doc["simulations"][0]  # read as a run (the others of the fixture are refused, each named)
    twin = copy.deepcopy(sim)
    twin["id"], twin["trial"] = f"{sim['id']}-again", int(sim.get("trial") or 0) + 1
    doc["simulations"].append(twin)
    (d / "shop.json").write_text(json.dumps(doc))
    trajs, skipped = _ingest_one(d, "tau2", "*.json")
    copies = [s for s in skipped if "the same run as" in s["reason"]]
    ok = len(trajs) == len(plain) + 1 and not copies
    return (
        "ok" if ok else "silent",
        f"{len(trajs)} runs ({len(plain)} without the twin), {len(copies)} copies",
    )


CASES_DUPLICATES: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    *[
        ("duplicates within a folder", f"score: one run {h}", _score_case(h))
        for h in ("sub-folder", "renamed", "three times", "a different run of the same task")
    ],
    *[
        (
            "duplicates within a folder",
            f"score --pass: one run {h}",
            _score_case(h, ("--pass", "--audit-share", "0.5")),
        )
        for h in ("sub-folder", "three times")
    ],
    *[
        ("duplicates within a folder", f"ingest: a SWE-agent file in {h}", _ingest_swe_case(h))
        for h in ("sub-folder", "a gzipped copy elsewhere")
    ],
    (
        "duplicates within a folder",
        "earlyeval ingest: a tau2 result file twice",
        case_ingest_catalog_copy,
    ),
    (
        "duplicates within a folder",
        "two alike trials in one file are two runs",
        case_identical_trials_in_one_file,
    ),
]

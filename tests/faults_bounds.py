"""Fault cases of the class "bounds": sizes a user or a file controls (workers, subsets, counts, nesting, lengths)
pushed far past anything real.  Shared by tests/test_faults.py and tools/fault_summary.py.

"named": refused at once, the error naming the option or field and its bound; "ok": done within bounded memory
(a child under RLIMIT_AS) or, for tool-call arguments nested past any depth, every step still scored with what
could be read; "silent": a step left unscored, or a size taken as given."""

from __future__ import annotations

import json
import resource
from typing import Any, Callable

from faults import Env
from faults24 import cli, one_line_error
from faults29 import _no_traceback, _score_args, score_inputs

GB = 1 << 30


def _pass_workers_case(workers: int, limit_gb: float | None):
    """``score --pass --pass-workers W``: W = 1e9 refused naming the option and its bound; W = 1e6 (the bound)
    scored in a child limited to ``limit_gb`` of address space (a worker past the runs is never allocated)."""

    def case(env: Env):
        _, _, ws = score_inputs(env)
        out = env.base / f"bounds_workers_{workers}"
        args = _score_args(env, out)
        args += ["--force", "--pass", "--pass-workers", str(workers)]
        lim = int(limit_gb * GB) if limit_gb else None
        pre = (lambda: resource.setrlimit(resource.RLIMIT_AS, (lim, lim))) if lim else None
        rc, _, err = cli(args, ws, preexec=pre)
        last = _no_traceback(rc, err)
        if rc == 0:
            rep = json.loads((out / "score.json").read_text())
            ok = rep["pass"]["workers"] == workers and rep["n_trajectories"] == 8
            return ("ok" if ok else "silent", f"W={workers}: scored {rep['n_trajectories']} runs")
        return (
            "named" if one_line_error(rc, err, "--pass-workers", "1000000") else "silent",
            f"rc {rc}: {last}",
        )

    return case


def _nested(n: int, kind: str) -> Any:
    x: Any = {} if kind == "object" else []
    cur = x
    for _ in range(n):
        nxt: Any = {} if kind == "object" else []
        if kind == "object":
            cur["a"] = nxt
        else:
            cur.append(nxt)
        cur = nxt
    return x


def _deep_args_case(kind: str):
    """Every turn of a live run calls a tool with arguments nested 100,000 deep: every step is scored (the
    arguments rendered to a bounded depth), none skipped as unreadable."""

    def case(env: Env):
        from earlyeval import Monitor
        from earlyeval.integrations import EarlyStopper
        from earlyeval.integrations.base import ToolCall

        deep = 100_000
        if kind == "a JSON text":
            call = ToolCall("python", "[" * deep + "]" * deep)
        elif kind == "an editor's view_range":
            call = ToolCall(
                "str_replace_editor",
                {"command": "view", "path": "a.py", "view_range": _nested(deep, "array")},
            )
        else:
            call = ToolCall("bash", _nested(deep, kind))
        st = EarlyStopper(Monitor.load(env.tiny()[0]))
        st.start(task=None, run_id=f"deep-{kind}")
        ds = [st.after_step(actions=[call], observation="ok") for _ in range(4)]
        scored = [d for d in ds if d.p_success is not None]
        skipped = st.monitor.run.n_skipped
        ok = len(scored) == 4 and skipped == 0
        return (
            "ok" if ok else "silent",
            f"{kind}: {len(scored)} of 4 steps scored, {skipped} skipped",
        )

    return case


def _refused(fn: Callable[[], Any], *needles: str) -> tuple[str, str]:
    """ "named" when ``fn`` raises an error of earlyeval's naming every needle on one line."""
    from earlyeval.core.errors import EarlyEvalError

    try:
        fn()
    except (EarlyEvalError, ValueError) as e:
        msg = str(e)
        ok = all(n in msg for n in needles) and "\n" not in msg and len(msg) < 2000
        return ("named" if ok else "silent", msg[:160])
    return ("silent", "accepted")


def case_learning_curve_subsets(env: Env):
    from earlyeval.config.eval_config import EvalConfig
    from earlyeval.evaluation.learning_curve import learning_curve

    return _refused(lambda: learning_curve(None, EvalConfig(), subsets=10**9), "--subsets", "10000")  # type: ignore[arg-type]


def _catalog_case(what: str):
    """A catalog whose runs list or a run's options go past their bounds: refused naming the key."""

    def case(env: Env):
        from earlyeval.config.catalog import load_catalog

        p = env.base / "bounds_catalogs" / f"{what.replace(' ', '_')}.toml"
        p.parent.mkdir(exist_ok=True)
        run = '[[runs]]\nfolder = "f"\nagent = "a"\nformat = "tau2"\n'
        if what == "100,001 runs":
            p.write_text(
                'bench = "b"\nfamilies = ["behaviour"]\n'
                + "".join(run.replace('"a"', f'"a{i}"') for i in range(100_001))
            )
            needles = ("runs", "100001 entries, more than 100000")
        else:
            p.write_text(
                'bench = "b"\nfamilies = ["behaviour"]\n'
                + run
                + "options = "
                + "[" * 80
                + "]" * 80
                + "\n"
            )
            needles = ("runs[0].options", "nested deeper than 64")
        return _refused(lambda: load_catalog(p), *needles)

    return case


def case_thresholds_file_too_large(env: Env):
    """An adapter block's thresholds file of 10 MB: refused naming the file and the bound, not read whole."""
    from earlyeval.config.monitor_config import MonitorConfig
    from earlyeval.core.errors import SettingError

    p = env.base / "bounds_thresholds.json"
    p.write_text('{"success": 0.9, "failure": 0.9, "pad": "' + "x" * (10 << 20) + '"}')
    try:
        MonitorConfig(thresholds=str(p)).threshold_table()
    except SettingError as e:
        ok = str(p) in str(e) and "more than 65536" in str(e)
        return ("named" if ok else "silent", str(e)[:160])
    return ("silent", "read whole")


def case_pass_run_id_too_long(env: Env):
    """A run id of a million characters handed to a pass: refused naming the bound, nothing written."""
    from earlyeval.live.benchpass import Pass
    from earlyeval.live.monitor import Monitor

    path = env.base / "bounds_pass.json"
    path.unlink(missing_ok=True)
    p = Pass(Monitor.load(env.tiny()[0]), path, audit_share=0.0)
    out = _refused(lambda: p.finish("r" * 10**6, steps=3), "1 to 1024 characters")
    return out if not path.exists() else ("silent", "written: " + out[1])


def case_run_on_workers_of_a_million(env: Env):
    """The simulated pass with W = 1,000,000 over 3 runs: done at once, W never allocated."""
    from earlyeval.live.pass_certify import run_on_workers

    got: list[int] = []
    run_on_workers([0, 1, 2], 1_000_000, lambda i, k, start: 5, got.append)
    return ("ok" if sorted(got) == [0, 1, 2] else "silent", f"delivered {got}")


CASES_BOUNDS: list[tuple[str, str, Callable[[Env], tuple[str, str]]]] = [
    ("bounds", "score --pass --pass-workers 1000000000", _pass_workers_case(10**9, None)),
    ("bounds", "score --pass --pass-workers 1000000 under 3 GB", _pass_workers_case(10**6, 3)),
    ("bounds", "run_on_workers with W = 1e6", case_run_on_workers_of_a_million),
    *[
        ("bounds", f"tool-call arguments nested 100,000 deep: {k}", _deep_args_case(k))
        for k in ("object", "array", "a JSON text", "an editor's view_range")
    ],
    ("bounds", "learning-curve --subsets 1e9", case_learning_curve_subsets),
    *[
        ("bounds", f"a catalog with {w}", _catalog_case(w))
        for w in ("100,001 runs", "options nested 80 deep")
    ],
    ("bounds", "an adapter's thresholds file of 10 MB", case_thresholds_file_too_large),
    ("bounds", "a pass run id of a million characters", case_pass_run_id_too_long),
]

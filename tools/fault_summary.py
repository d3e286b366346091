"""Run the fault suite and print the table by class: how many cases (and fuzzed examples) ended ok, refused with
a named error, silent (dropped or decided wrongly without a word) or crashed.

Cases: tests/faults_classes.py (the first suites, tests/faults.py, faults24.py, faults29.py, and the classes by
subject, tests/faults_<subject>.py); a case it lists as known to fail (``XFAIL``: it waits for another change) is
counted in its own column, "known", and the run fails if it passes (its mark must go).  Property-based classes:
tests/fuzz.py (hypothesis; a fresh sample each run, ``EARLYEVAL_FUZZ_SEED`` replays one).
Usage: .venv/bin/python tools/fault_summary.py [--verbose] [--keep] [--no-fuzz] [--only-fuzz] [--examples N]
       [--class SUBSTRING]"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from faults import new_env, run_case  # noqa: E402
from faults_classes import ALL, XFAIL  # noqa: E402
from fuzz import FUZZ, fuzz_seed, run_fuzz  # noqa: E402

COLS = ("crash", "named", "silent", "ok")


def _arg(name: str, default: int | None) -> int | None:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def _arg_str(name: str) -> str | None:
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else None


def main() -> int:
    verbose = "--verbose" in sys.argv
    env = new_env()
    cases: dict[str, Counter] = defaultdict(Counter)
    fuzz: dict[str, Counter] = defaultdict(Counter)
    bad: list[str] = []
    t0 = time.time()
    if "--only-fuzz" not in sys.argv:
        only = _arg_str("--class")
        for cls, name, fn in ALL:
            if only and only not in cls:
                continue
            kind, detail = run_case(env, fn)
            if name in XFAIL:  # known to fail until another change lands: counted apart
                if kind in ("silent", "crash"):
                    kind = "known"
                else:
                    bad.append(f"{name} passes: remove its xfail ({XFAIL[name]})")
            cases[cls][kind] += 1
            if verbose or kind in ("silent", "crash"):
                print(f"  [{kind:6}] {cls} / {name}: {detail}", flush=True)
            if kind in ("silent", "crash"):
                bad.append(name)
    seed = fuzz_seed()
    if "--no-fuzz" not in sys.argv:
        for fc in FUZZ:
            shown = [0]

            def record(kind: str, detail: str, example: object, fc=fc, shown=shown) -> None:
                fuzz[fc.name][kind] += 1
                if (kind in ("silent", "crash") and shown[0] < 3) or verbose:
                    shown[0] += 1
                    print(
                        f"  [{kind:6}] fuzz {fc.name}: {detail} <- {repr(example)[:120]}",
                        flush=True,
                    )
                if kind in ("silent", "crash"):
                    bad.append(fc.name)

            run_fuzz(fc, env, seed, record, n=_arg("--examples", None), shrink=False)
    print(
        "\n| class | cases | crash | named | silent | ok | known (xfail) | not stageable here |"
        "\n|---|---|---|---|---|---|---|---|"
    )
    tot: Counter = Counter()
    for cls in sorted(cases):
        c = cases[cls]
        tot.update(c)
        print(
            f"| {cls} | {sum(c[k] for k in COLS) + c['known']} | "
            + " | ".join(str(c[k]) for k in COLS)
            + f" | {c['known']} | {c['absent']} |"
        )
    if cases:
        print(
            f"| **all cases** | {sum(tot[k] for k in COLS) + tot['known']} | "
            + " | ".join(str(tot[k]) for k in COLS)
            + f" | {tot['known']} | {tot['absent']} |"
        )
    if fuzz:
        print(
            f"\n| fuzzed class (hypothesis, seed {seed}) | examples | crash | named | silent | ok |\n|---|---|---|---|---|---|"
        )
        ft: Counter = Counter()
        for name, c in fuzz.items():
            ft.update(c)
            print(
                f"| {name} | {sum(c[k] for k in COLS)} | "
                + " | ".join(str(c[k]) for k in COLS)
                + " |"
            )
        print(
            f"| **all examples** | {sum(ft[k] for k in COLS)} | "
            + " | ".join(str(ft[k]) for k in COLS)
            + " |"
        )
    print(f"\n{time.time() - t0:.0f} s")
    if "--keep" in sys.argv:
        print(f"temp folder kept: {env.base}")
    else:
        shutil.rmtree(env.base, ignore_errors=True)
    for b in bad:
        if "remove its xfail" in b:
            print(f"XPASS: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

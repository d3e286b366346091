"""Run the fault suite and print the table by class: how many cases (and fuzzed examples) ended ok, refused with
a named error, silent (dropped or decided wrongly without a word) or crashed.

Cases: tests/faults.py (issue 15), tests/faults24.py (issue 24), tests/faults29.py (issue 29) and
tests/faults_settings.py (a monitor's settings), tests/faults_readers.py (the step readers); property-based classes:
tests/fuzz.py
(hypothesis; a fresh sample each run, ``EARLYEVAL_FUZZ_SEED`` replays one).
Usage: .venv/bin/python tools/fault_summary.py [--verbose] [--keep] [--no-fuzz] [--only-fuzz] [--examples N]"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from faults import CASES, class_of, new_env, run_case  # noqa: E402
from faults24 import CASES24  # noqa: E402
from faults29 import CASES29  # noqa: E402
from faults_readers import CASES_READERS  # noqa: E402
from faults_settings import CASES_SETTINGS  # noqa: E402
from fuzz import FUZZ, fuzz_seed, run_fuzz  # noqa: E402

COLS = ("crash", "named", "silent", "ok")


def _arg(name: str, default: int | None) -> int | None:
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main() -> int:
    verbose = "--verbose" in sys.argv
    env = new_env()
    cases: dict[str, Counter] = defaultdict(Counter)
    fuzz: dict[str, Counter] = defaultdict(Counter)
    bad: list[str] = []
    t0 = time.time()
    if "--only-fuzz" not in sys.argv:
        for cls, name, fn in (
            [(class_of(f, n), n, fn) for f, n, fn in CASES]
            + CASES24
            + CASES29
            + CASES_SETTINGS
            + CASES_READERS
        ):
            kind, detail = run_case(env, fn)
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
        "\n| class | cases | crash | named | silent | ok | not stageable here |\n|---|---|---|---|---|---|---|"
    )
    tot: Counter = Counter()
    for cls in sorted(cases):
        c = cases[cls]
        tot.update(c)
        print(
            f"| {cls} | {sum(c[k] for k in COLS)} | "
            + " | ".join(str(c[k]) for k in COLS)
            + f" | {c['absent']} |"
        )
    if cases:
        print(
            f"| **all cases** | {sum(tot[k] for k in COLS)} | "
            + " | ".join(str(tot[k]) for k in COLS)
            + f" | {tot['absent']} |"
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
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run the fault-injection cases of tests/faults.py and print, per finding of issue 15, how many cases
were tried and how many ended correct, refused with a named error, silent (dropped or decided wrongly
without a word) or crashed.  Usage: .venv/bin/python tools/fault_summary.py [--verbose] [--keep]"""

from __future__ import annotations

import shutil
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from faults import CASES, new_env, run_case  # noqa: E402


def main() -> int:
    verbose = "--verbose" in sys.argv
    env = new_env()
    by: dict[str, Counter] = defaultdict(Counter)
    bad = []
    t0 = time.time()
    for finding, name, fn in CASES:
        kind, detail = run_case(env, fn)
        by[finding][kind] += 1
        if verbose or kind in ("silent", "crash"):
            print(f"  [{kind:7}] {finding} / {name}: {detail}")
        if kind in ("silent", "crash"):
            bad.append((finding, name))
    print(f"\n| finding | cases | crashes | named errors | correct | silent |\n|---|---|---|---|---|---|")
    tot: Counter = Counter()
    for f in sorted(by):
        c = by[f]
        tot.update(c)
        print(f"| {f} | {sum(c.values())} | {c['crash']} | {c['named']} | {c['correct']} | {c['silent']} |")
    print(f"| **all** | {sum(tot.values())} | {tot['crash']} | {tot['named']} | {tot['correct']} | {tot['silent']} |")
    print(f"\n{time.time() - t0:.0f} s")
    if "--keep" in sys.argv:
        print(f"temp folder kept: {env.base}")
    else:
        shutil.rmtree(env.base, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How often the pass's shift test (``earlyeval.model.shift_test``) fires on the real held-out agents, whose
halts the evaluation already knows: ``python tools/shift_test_real.py [BENCH] [SEEDS] [AUDIT_SHARE]``.

Each held-out agent's runs, from ``features/<bench>/loao_predictions.parquet`` (its own fold's predictions,
gates and thresholds, as ``evaluate`` wrote them), are replayed as a pass many times: a seeded order and a seeded
audit sample of ``AUDIT_SHARE`` of the runs, each audited run judged by the halt the rule would have made
(``report.page_halts.halt_steps``: the evaluation's own halts) against its graded outcome. Printed per agent: its
runs, its true shares of wrong success and wrong failure halts, and the share of passes in which the test fired.
An agent whose shares are both within the test's margin should see it fire at most at its level."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd

from earlyeval.config.workspace import features_dir, reports_dir
from earlyeval.model.shift_test import ALPHA, MARGIN, ShiftTest
from earlyeval.report.page_halts import halt_steps


def main(bench: str = "swebench", seeds: int = 200, audit_share: float = 0.10) -> None:
    preds = pd.read_parquet(features_dir(bench) / "loao_predictions.parquet")
    config = json.loads((reports_dir(bench) / "loao.json").read_text()).get("config") or {}
    h = halt_steps(
        preds, int(config.get("min_halt_step", 1) or 1), bool(config.get("task_skips", False))
    )
    print(
        f"| agent | runs | wrong success halts | wrong failure halts | fired (of {seeds} passes) |"
    )
    print("|---|---|---|---|---|")
    for agent, g in h.groupby("agent", sort=True):
        said = [
            None if t <= 0 else ("success" if p == 1 else "failure")
            for t, p in zip(g["t_halt"], g["pred"])
        ]
        pairs = list(zip(said, (int(y) for y in g["y"])))
        over = np.mean([s == "success" and y == 0 for s, y in pairs])
        under = np.mean([s == "failure" and y == 1 for s, y in pairs])
        fired = 0
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            order = rng.permutation(len(pairs))
            audited = [pairs[i] for i in order if rng.random() < audit_share]
            fired += ShiftTest.replay(audited).rejected is not None
        print(
            f"| {agent} | {len(pairs)} | {100 * over:.1f} % | {100 * under:.1f} % | "
            f"{fired} ({100 * fired / seeds:.1f} %) |"
        )
    print(
        f"\nmargin {MARGIN:.0%} per side, level {ALPHA:g} (both sides); audit share {audit_share:g}"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    main(
        args[0] if args else "swebench",
        int(args[1]) if len(args) > 1 else 200,
        float(args[2]) if len(args) > 2 else 0.10,
    )

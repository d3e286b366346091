"""A better text encoder, measured (issue 28 item 6): TF-IDF + SVD (the ``text`` family) against WordLlama's static
token vectors (``dense_text``, tools/dense_text.py), each added to the shipped families, under leave-one-agent-out
and leave-one-scaffold-out:

    HF_HUB_OFFLINE=1 /tmp/venv-enc/bin/python tools/encoder_compare.py [--bench swebench] [--seed 0]

(a venv with the lock, earlyeval and wordllama: docs/architecture.md, "Feature families").  Three configurations,
shipped (the catalog's model_families), + text and + dense_text, each under the as_of protocol and no_prior (the
history families left out: ``evaluation.protocols.protocol_configs``), each evaluated by earlyeval's own ``run_loao`` +
``with_loso`` + ``loao_report``, one after another on one dataset.  LOSO pooled is over every held-out scaffold's
large agents, each under its own fold's thresholds (``blocks.pooled_block``, as a scaffold's own pooled row is).
Writes reports/<bench>/encoders.json atomically, prints a markdown table and, last, where the output is.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

# before LightGBM starts its OpenMP threads: on a shared machine, threads that spin while they wait compete with the
# other work for the cores (measured on 2 busy cores: one fit 1.4 s spinning, 0.7 s passive; the numbers are the same)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# dense_text beside this file, however it is run
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dense_text import DenseTextFamily  # noqa: E402

from earlyeval.config.eval_config import EvalConfig  # noqa: E402
from earlyeval.config.workspace import reports_dir  # noqa: E402
from earlyeval.core.atomic import write_json  # noqa: E402
from earlyeval.evaluation.blocks import pooled_block  # noqa: E402
from earlyeval.evaluation.dataset import Dataset, load_dataset  # noqa: E402
from earlyeval.evaluation.evaluate import LoaoResult, run_loao  # noqa: E402
from earlyeval.evaluation.fit_plan import planned_fits  # noqa: E402
from earlyeval.evaluation.loao_report import loao_report  # noqa: E402
from earlyeval.evaluation.protocols import protocol_configs, with_loso  # noqa: E402
from earlyeval.evaluation.settings import eval_config  # noqa: E402
from earlyeval.features import register_family  # noqa: E402
from earlyeval.report.html import fnum, pct  # noqa: E402

ADDED = {"shipped": [], "+text": ["text"], "+dense_text": [DenseTextFamily.name]}
PROTOCOLS = ("as_of", "no_prior")
KEYS = (
    "n_runs",
    "auroc_success",
    "halted_accuracy",
    "steps_saved",
    "steps_saved_in_run",
    "steps_saved_task_skip",
    "resolve_rate_shift_pp",
)


class Progress:
    """Counts the model fits of one evaluation against its plan (``planned_fits``: with the prior guard, at most)."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total, self.n, self.t0 = label, total, 0, time.time()

    def __call__(self, msg: str) -> None:
        if msg.startswith("fit without"):
            self.n += 1
            print(
                f"  [{self.label}] fit {self.n} of at most {self.total} ({time.time() - self.t0:.0f} s)",
                file=sys.stderr,
                flush=True,
            )


def configs(base: EvalConfig) -> dict[str, dict[str, EvalConfig]]:
    """configuration -> protocol -> its EvalConfig (no_prior: the pipeline's own, the history families left out)."""
    out: dict[str, dict[str, EvalConfig]] = {}
    for name, extra in ADDED.items():
        cfg = base.replace(families=list(base.families) + extra)
        out[name] = {"as_of": cfg, "no_prior": protocol_configs(cfg)["no_prior"]}
    return out


def loso_pooled(res: LoaoResult, cfg: EvalConfig) -> dict[str, Any]:
    """Every held-out scaffold's large agents pooled, each under its fold's thresholds and with the model its fold
    ships (the prior guard's choice; the predictions are the runners' cached ones)."""
    items = []
    for blk in res.loso.values():
        th = blk["thresholds"]
        task_level = (th.get("model_choice") or {}).get("chosen") == "task-level features only"
        runner = res.runner_prior if task_level else res.runner
        ex = frozenset(blk["held_out_agents"])
        items += [(runner.predict(ex, a), th) for a in blk["held_out_agents"] if a in res.holdout]
    return pooled_block(items, cfg)


def measure(ds: Dataset, cfg: EvalConfig, label: str) -> dict[str, Any]:
    """One configuration under one protocol: LOSO pooled and per scaffold, LOAO pooled."""
    t0 = time.time()
    prog = Progress(label, planned_fits(ds, cfg))
    res = with_loso(ds, cfg, run_loao(ds, cfg, prog))
    rep = loao_report(ds, cfg, res, light=True)
    pick = lambda b: {k: b.get(k) for k in KEYS}  # noqa: E731
    scaffolds = {
        sc: {
            "held_out_agents": b["held_out_agents"],
            "thresholds": b["thresholds"],
            **pick(b["pooled"]),
        }
        for sc, b in res.loso.items()
    }
    out = {
        "families": list(cfg.families),
        "fits": prog.n,
        "seconds": round(time.time() - t0, 1),
        "loso": {"pooled": pick(loso_pooled(res, cfg)), "scaffolds": scaffolds},
        "loao": {"pooled": pick(rep["pooled"]), "holdout_agents": rep["holdout_agents"]},
    }
    print(
        f"[{label}] {out['seconds']:.0f} s, {prog.n} fits: LOSO pooled AUROC {fnum(out['loso']['pooled']['auroc_success'])}, "
        f"LOAO pooled AUROC {fnum(out['loao']['pooled']['auroc_success'])}",
        file=sys.stderr,
        flush=True,
    )
    return out


def saved(b: dict[str, Any]) -> str:
    return f"{pct(b.get('steps_saved'))} ({pct(b.get('steps_saved_in_run'))} in-run)"


def table(results: dict[str, dict[str, Any]]) -> str:
    """The markdown table: a row per configuration and protocol."""
    scs = list(next(iter(next(iter(results.values())).values()))["loso"]["scaffolds"])
    head = (
        ["configuration", "protocol", "LOSO pooled: AUROC", "halted acc", "steps saved"]
        + [f"LOSO {sc}: AUROC" for sc in scs]
        + ["LOAO pooled: AUROC", "halted acc", "steps saved"]
    )
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, prots in results.items():
        for p, r in prots.items():
            lo, la = r["loso"]["pooled"], r["loao"]["pooled"]
            cells = (
                [name, p, fnum(lo["auroc_success"]), pct(lo["halted_accuracy"]), saved(lo)]
                + [fnum(r["loso"]["scaffolds"][sc]["auroc_success"]) for sc in scs]
                + [fnum(la["auroc_success"]), pct(la["halted_accuracy"]), saved(la)]
            )
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def encoder_info() -> dict[str, Any]:
    meta, _ = DenseTextFamily().get_state()
    return {
        "dense_text": {
            **meta,
            "width": 5 * meta["dim"],
            "reduction": "matryoshka truncation of the 256-d vectors to their first dim columns, per block; "
            "nothing fitted, so the family is fold-free",
        },
        "text": {
            "width": 320,
            "reduction": "TF-IDF + truncated SVD to 64 per block, fitted inside each training fold",
        },
    }


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", default="swebench")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    t0 = time.time()
    # the public plugin registry: the name now resolves like a built-in's
    register_family(DenseTextFamily)
    grid = configs(eval_config(args.bench, seed=args.seed))
    needed = sorted({f for prots in grid.values() for c in prots.values() for f in c.families})
    print(
        f"loading {args.bench} and featurizing the fold-free families of {needed} ...",
        file=sys.stderr,
        flush=True,
    )
    ds = load_dataset(args.bench, needed)
    print(
        f"  {len(ds.trajs)} runs, {len(ds.prefixes)} prefixes ({time.time() - t0:.0f} s)",
        file=sys.stderr,
        flush=True,
    )
    results: dict[str, dict[str, Any]] = {}
    n, k = sum(len(p) for p in grid.values()), 0
    for name, prots in grid.items():
        for p, cfg in prots.items():
            k += 1
            results.setdefault(name, {})[p] = measure(ds, cfg, f"{k}/{n} {name} {p}")
    doc = {
        "bench": args.bench,
        "seed": args.seed,
        "command": "tools/encoder_compare.py " + " ".join(argv or sys.argv[1:]),
        "runs": len(ds.trajs),
        "prefixes": len(ds.prefixes),
        "encoders": encoder_info(),
        "note": "LOSO pooled: every held-out scaffold's large agents, each under its fold's thresholds",
        "results": results,
        "seconds": round(time.time() - t0, 1),
    }
    path = write_json(doc, reports_dir(args.bench) / "encoders.json")
    print(table(results))
    print(f"\nwall time {doc['seconds']:.0f} s")
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()

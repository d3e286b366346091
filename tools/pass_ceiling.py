"""How far could a benchmark pass lift each held-out agent's ranking? Ceilings for issue 28, measured, not shipped.

`python tools/pass_ceiling.py [--bench swebench]` (after `make train`): per large held-out agent, under `as_of` and
`no_prior`, leave-one-agent-out as `earlyeval evaluate` runs it (inner-LOAO thresholds, the prior guard), with

- `shipped`: the catalog's model families, as in loao.json;
- `pass_all_runs`: plus the `pass` family read against *all* of the agent's runs: every run finished, none halted,
  none censored, this run included -- more than any pass knows at any point (a label-free ceiling);
- `agent_rank`: plus every behaviour feature as its percentile among the agent's prefixes at the same step, over all
  of its runs (the same ceiling for "where this run falls in this agent's distribution", feature by feature);

and, from the agent's own labels (prefix AUROC only):

- `own_labels_80`: the same estimator and features fitted on 80 % of the agent's own runs (5 folds grouped by
  task), scored on the other 20 %: what eight times a 10 % audit sample's labels would buy;
- `audit_10`: the LOAO prediction restacked by a logistic fit (logit p, t over the agent's median length, survival
  share) on a seeded 10 % of the agent's runs, scored on the other 90 % (with the LOAO AUROC on the same rows).

The oracle columns are appended to the in-memory behaviour block of the loaded dataset, so that the static (cold)
prediction path reads them like any other column. Writes reports/<bench>/pass_ceiling.json and prints a table.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from typing import Any

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold

from earlyeval.config.workspace import reports_dir
from earlyeval.core.atomic import write_json
from earlyeval.evaluation.dataset import Dataset, load_dataset
from earlyeval.evaluation.evaluate import run_loao
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.evaluation.loao_report import loao_report
from earlyeval.evaluation.protocols import protocol_configs
from earlyeval.evaluation.settings import eval_config
from earlyeval.features import Featurizer, RunContext
from earlyeval.features.passref import PassFamily, PassReference, profile_of
from earlyeval.fitting.metrics import auroc
from earlyeval.model.outcome import split_proba

KEYS = ("auroc_success", "halted_accuracy", "steps_saved", "steps_saved_in_run")
SEED = 0


def pass_all_runs(ds: Dataset) -> tuple[np.ndarray, list[str]]:
    """The pass family's rows, each run read against every run of its agent (profiles as a live pass records them)."""
    profiles = [profile_of(t) for t in ds.trajs]
    by_agent: dict[str, list[int]] = {}
    for i, t in enumerate(ds.trajs):
        by_agent.setdefault(t.agent, []).append(i)
    refs = {a: PassReference.of(profiles[i] for i in idx) for a, idx in by_agent.items()}
    ctxs = [RunContext(pass_reference=refs[t.agent]) for t in ds.trajs]
    fz = Featurizer([PassFamily()])
    return fz.prefix_matrix(ds.trajs, ctxs), [f"all_runs_{n}" for n in fz.names]


def agent_rank(ds: Dataset) -> tuple[np.ndarray, list[str]]:
    """Every behaviour column as its percentile among the agent's prefixes at the same step (NaN below 5 of them)."""
    B, names = ds.blocks["behaviour"], ds.block_names["behaviour"]
    P = ds.prefixes
    out = np.full(B.shape, np.nan, dtype=np.float32)
    for _, m in P.groupby("agent").indices.items():
        df = pd.DataFrame(B[m])
        df["t"] = P["t"].to_numpy()[m]
        g = df.groupby("t")
        ranks = np.array(g.rank(pct=True).to_numpy(), dtype=np.float32)
        ranks[g["t"].transform("size").to_numpy() < 5] = np.nan
        out[m] = ranks
    return out, [f"agent_rank_{n}" for n in names]


def with_columns(ds: Dataset, extra: tuple[np.ndarray, list[str]] | None) -> Dataset:
    """``ds`` with ``extra`` appended to its behaviour block (a shallow copy; ``ds`` is unchanged)."""
    if extra is None:
        return ds
    blocks, names = dict(ds.blocks), dict(ds.block_names)
    blocks["behaviour"] = np.hstack(
        [ds.blocks["behaviour"], extra[0].astype(ds.blocks["behaviour"].dtype)]
    )
    names["behaviour"] = ds.block_names["behaviour"] + extra[1]
    return dataclasses.replace(ds, blocks=blocks, block_names=names)


def loao_blocks(ds: Dataset, cfg: Any) -> dict[str, Any]:
    res = run_loao(ds, cfg, with_loso=False, with_small=False)
    rep = loao_report(ds, cfg, res, light=True, pass_features=False)
    out = {a: {k: rep["agents"][a].get(k) for k in KEYS} for a in rep["holdout_agents"]}
    out["POOLED"] = {k: rep["pooled"].get(k) for k in KEYS}
    return out


def own_label_ceilings(ds: Dataset, cfg: Any) -> dict[str, Any]:
    """Per large agent: LOAO prefix AUROC, the 80 %-own-labels model's, and the 10 %-audit restack's."""
    runner = FoldRunner(ds, cfg)
    large = ds.large_agents(cfg.holdout_min_runs)
    y_all, w_all = ds.prefixes["y"].to_numpy(), ds.prefixes["weight"].to_numpy()
    out: dict[str, Any] = {}
    for a in large:
        runs = np.flatnonzero(runner.run_agent == a)
        rows = runner.rows_of(runs, 2)
        fitted = runner.fit(frozenset([a]))
        X, _ = runner.features(fitted, runs, rows)
        p_loao, _ = split_proba(fitted.model.predict_proba(X))
        y, w = y_all[rows], w_all[rows]
        groups = ds.prefixes["task_id"].to_numpy()[rows]
        oof = np.zeros(len(rows))
        for tr, te in GroupKFold(5).split(rows, groups=groups):
            m = runner.new_model(frozenset([a]))
            m.fit(X[tr], y[tr], sample_weight=w[tr], groups=groups[tr])
            oof[te] = split_proba(m.predict_proba(X[te]))[0]
        run_of_row = runner.prefix_run[rows]
        rng = np.random.default_rng(SEED)
        audit = set(rng.choice(runs, max(1, len(runs) // 10), replace=False).tolist())
        aud = np.isin(run_of_row, list(audit))
        p = np.clip(p_loao, 1e-4, 1 - 1e-4)
        t = ds.prefixes["t"].to_numpy()[rows].astype(float)
        lengths = np.sort(np.asarray([len(ds.trajs[r].steps) for r in runs], dtype=float))
        F = np.c_[
            np.log(p / (1 - p)),
            t / np.median(lengths),
            1 - np.searchsorted(lengths, t, side="right") / len(lengths),
        ]
        stack = None
        if len(np.unique(y[aud])) == 2:
            lr = LogisticRegression().fit(F[aud], y[aud], sample_weight=w[aud])
            stack = auroc(y[~aud], lr.predict_proba(F[~aud])[:, 1], w[~aud])
        out[a] = {
            "loao": auroc(y, p_loao, w),
            "own_labels_80": auroc(y, oof, w),
            "audit_10": stack,
            "loao_on_audit_10_rows": auroc(y[~aud], p_loao[~aud], w[~aud]),
            "audited_runs": len(audit),
        }
    return out


def fmt(v: Any) -> str:
    return "–" if v is None else f"{v:.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="swebench")
    args = ap.parse_args()
    t0 = time.time()
    base_cfg = eval_config(args.bench)
    # evaluate's own no_prior
    protocols = {
        "as_of": base_cfg,
        "no_prior": protocol_configs(base_cfg)["no_prior"],
    }
    ds = load_dataset(args.bench, sorted(set(base_cfg.families) | {"behaviour"}), progress=False)
    variants = {"shipped": None, "pass_all_runs": pass_all_runs(ds), "agent_rank": agent_rank(ds)}
    report: dict[str, Any] = {"bench": args.bench, "doc": __doc__, "loao": {}, "own_labels": {}}
    total, k = len(protocols) * (len(variants) + 1), 0
    for prot, cfg in protocols.items():
        for name, extra in variants.items():
            k += 1
            print(f"[{k}/{total}] {prot}: {name} ({time.time() - t0:.0f} s)", flush=True)
            report["loao"].setdefault(prot, {})[name] = loao_blocks(with_columns(ds, extra), cfg)
        k += 1
        print(f"[{k}/{total}] {prot}: own labels ({time.time() - t0:.0f} s)", flush=True)
        report["own_labels"][prot] = own_label_ceilings(ds, cfg)
    report["seconds"] = round(time.time() - t0, 1)
    for prot in protocols:
        print(f"\n{prot}: prefix AUROC / halted accuracy / steps saved (in-run)")
        print(
            "| agent | "
            + " | ".join(variants)
            + " | own labels 80 % | audit 10 % (LOAO same rows) |"
        )
        print("|---" * (len(variants) + 3) + "|")
        lo, own = report["loao"][prot], report["own_labels"][prot]
        for a in lo["shipped"]:
            cells = [
                f"{fmt(lo[v][a]['auroc_success'])} / {fmt(lo[v][a]['halted_accuracy'])} / "
                f"{fmt(lo[v][a]['steps_saved'])} ({fmt(lo[v][a]['steps_saved_in_run'])})"
                for v in variants
            ]
            o = own.get(a)
            tail = (
                [
                    fmt(o["own_labels_80"]),
                    f"{fmt(o['audit_10'])} ({fmt(o['loao_on_audit_10_rows'])})",
                ]
                if o
                else ["", ""]
            )
            print(f"| {a} | " + " | ".join(cells + tail) + " |")
    path = write_json(report, reports_dir(args.bench) / "pass_ceiling.json")
    print(f"\nOutputs:\n  report       {path}")


if __name__ == "__main__":
    main()

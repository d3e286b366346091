"""Savings/accuracy frontiers over thresholds: label-free, warm-start, and the baselines.

Every threshold pair of the grid applied to ``earlyeval evaluate``'s held-out predictions; the honest operating
point is the one chosen without the held-out labels. The modes: docs/architecture.md, "Threshold frontiers".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from earlyeval.config.workspace import features_dir, reports_dir
from earlyeval.core.atomic import atomic_path, savefig
from earlyeval.core.plotting import pyplot
from earlyeval.evaluation.adapt import warm_split
from earlyeval.evaluation.settings import eval_config
from earlyeval.fitting.metrics import RunSet, grid_metrics, outcome_metrics, step_cap_policy
from earlyeval.fitting.thresholds import DEFAULT_TAUS as GRID  # the threshold grid (one definition)
from earlyeval.fitting.thresholds import fit_recalibration, recalibrated

KEYS = ("outcome_accuracy", "halted_accuracy", "steps_saved", "shift_pp", "economic_consistency")


def runsets_from_predictions(df: pd.DataFrame, task_skips: bool = False) -> dict[str, RunSet]:
    """Per agent, the held-out predictions of ``loao_predictions.parquet`` as a RunSet, each prefix with the gate
    evaluate wrote beside it (the halting rule's evidence), under the task-skip policy ``task_skips``."""
    if "gate" not in df.columns:
        raise ValueError(
            "loao_predictions.parquet has no 'gate' column (written before the success-evidence rule): "
            "run `earlyeval evaluate` again"
        )
    out: dict[str, RunSet] = {}
    for agent, g in df.groupby("agent", sort=False):
        ids, ys, Ts, ps, pf, gates = [], [], [], [], [], []
        for rid, r in g.groupby("run_id", sort=False):
            r = r.sort_values("t")
            ids.append(rid)
            ys.append(int(r["y"].iloc[0]))
            Ts.append(int(r["T"].iloc[0]))
            ps.append(r["p_success"].to_numpy(np.float64))
            pf.append(r["p_failure"].to_numpy(np.float64))
            gates.append(r["gate"].to_numpy(np.int8))
        n = len(ids)
        out[str(agent)] = RunSet(
            [str(agent)] * n,
            ids,
            np.asarray(ys),
            np.asarray(Ts),
            ps,
            pf,
            gates=gates,
            task_skips=task_skips,
        )
    return out


def _grid_rows(mode: str, agent: str, g, n_runs: int, total_T: float) -> list[dict[str, Any]]:
    rows = []
    for i, ts in enumerate(g.taus_s):
        for j, tf in enumerate(g.taus_f):
            rows.append(
                {
                    "mode": mode,
                    "agent": agent,
                    "tau_s": float(ts),
                    "tau_f": float(tf),
                    "param": np.nan,
                    "n_runs": n_runs,
                    "total_steps": total_T,
                    **{k: float(getattr(g, k)[i, j]) for k in KEYS},
                }
            )
    return rows


def _pool(rows: list[dict[str, Any]], mode: str) -> list[dict[str, Any]]:
    """Pooled rows: run-weighted accuracies, step-weighted savings, over the agents of each grid point."""
    df = pd.DataFrame(rows)
    out = []
    for (ts, tf, param), g in df.groupby(["tau_s", "tau_f", "param"], dropna=False, sort=False):
        n, T = g["n_runs"].to_numpy(), g["total_steps"].to_numpy()
        rec = {
            "mode": mode,
            "agent": "pooled",
            "tau_s": ts,
            "tau_f": tf,
            "param": param,
            "n_runs": int(n.sum()),
            "total_steps": float(T.sum()),
        }
        for k in KEYS:
            v = g[k].to_numpy()
            w = T if k == "steps_saved" else n
            ok = ~np.isnan(v)
            rec[k] = float(np.sum(v[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else np.nan
        out.append(rec)
    return out


def sweep_frame(
    sets: dict[str, RunSet],
    taus: np.ndarray,
    shares: tuple = (0.1, 0.2),
    repeats: int = 5,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    # label-free
    lf = []
    for a, rs in sets.items():
        lf += _grid_rows("label_free", a, grid_metrics(rs, taus, taus), len(rs), float(rs.T.sum()))
    rows += lf + _pool(lf, "label_free")
    # warm start
    for share in shares:
        mode = f"warm_start_{int(round(share * 100))}"
        if progress:
            progress(f"sweep {mode}")
        ws = []
        for a, rs in sets.items():
            acc: list[Any] = []
            for r in range(repeats):
                warm = warm_split(len(rs), share, seed=seed * 1000 + r)
                rest = recalibrated(rs.subset(~warm), fit_recalibration(rs.subset(warm)))
                g = grid_metrics(rest, taus, taus)
                # the warm runs complete: correct, nothing saved, no shift
                n_w, n_r = int(warm.sum()), len(rest)
                T_w, T_r = float(rs.T[warm].sum()), float(rest.T.sum())
                acc.append(
                    {
                        "outcome_accuracy": (g.outcome_accuracy * n_r + n_w) / (n_r + n_w),
                        "halted_accuracy": g.halted_accuracy,
                        "steps_saved": g.steps_saved * T_r / (T_r + T_w),
                        "shift_pp": g.shift_pp * n_r / (n_r + n_w),
                        "economic_consistency": g.economic_consistency,
                    }
                )
            mean = {k: np.nanmean(np.stack([d[k] for d in acc]), axis=0) for k in KEYS}
            for i, ts in enumerate(taus):
                for j, tf in enumerate(taus):
                    ws.append(
                        {
                            "mode": mode,
                            "agent": a,
                            "tau_s": float(ts),
                            "tau_f": float(tf),
                            "param": np.nan,
                            "n_runs": len(rs),
                            "total_steps": float(rs.T.sum()),
                            **{k: float(mean[k][i, j]) for k in KEYS},
                        }
                    )
        rows += ws + _pool(ws, mode)
    # baselines
    bl = []
    for a, rs in sets.items():
        for k in range(2, 61, 2):
            t, p = step_cap_policy(rs.T, k)
            m = outcome_metrics(rs.y, rs.T, t, p)
            bl.append(
                {
                    "mode": "step_cap",
                    "agent": a,
                    "tau_s": np.nan,
                    "tau_f": np.nan,
                    "param": float(k),
                    "n_runs": len(rs),
                    "total_steps": float(rs.T.sum()),
                    "outcome_accuracy": m["outcome_accuracy"],
                    "halted_accuracy": m["halted_accuracy"]
                    if m["halted_accuracy"] is not None
                    else np.nan,
                    "steps_saved": m["steps_saved"],
                    "shift_pp": m["resolve_rate_shift_pp"],
                    "economic_consistency": m["economic_consistency"]
                    if m["economic_consistency"] is not None
                    else np.nan,
                }
            )
    rows += bl + _pool(bl, "step_cap")
    return pd.DataFrame(rows)


def frontier(df: pd.DataFrame, mode: str, agent: str = "pooled") -> pd.DataFrame:
    """Upper envelope: for each point, no other point saves more steps at higher outcome accuracy."""
    d = df[(df["mode"] == mode) & (df["agent"] == agent)].dropna(
        subset=["steps_saved", "outcome_accuracy"]
    )
    d = d.sort_values(["steps_saved", "outcome_accuracy"], ascending=[False, False])
    best, keep = -1.0, []
    for idx, r in d.iterrows():
        if r["outcome_accuracy"] > best + 1e-12:
            keep.append(idx)
            best = r["outcome_accuracy"]
    return d.loc[keep].sort_values("steps_saved")


def plot_frontiers(df: pd.DataFrame, loao: dict[str, Any] | None, path: Path) -> Path:
    plt = pyplot()  # Agg, labels literal (an agent named $x$ is not TeX)

    fig, ax = plt.subplots(figsize=(7.5, 5))
    for mode, style in (
        ("label_free", "-"),
        ("warm_start_10", "--"),
        ("warm_start_20", ":"),
        ("step_cap", "-."),
    ):
        f = frontier(df, mode)
        if len(f):
            ax.plot(
                100 * f["steps_saved"],
                100 * f["outcome_accuracy"],
                style,
                label=mode.replace("_", " "),
            )
    if loao:
        p = loao.get("pooled", {})
        if p.get("steps_saved") is not None:
            ax.plot(
                [100 * p["steps_saved"]],
                [100 * p["outcome_accuracy"]],
                "o",
                ms=9,
                label="selected (honest thresholds)",
            )
        for name, b in (loao.get("baselines") or {}).items():
            if name == "repeat_action" and b.get("steps_saved") is not None:
                ax.plot(
                    [100 * b["steps_saved"]],
                    [100 * b["outcome_accuracy"]],
                    "x",
                    ms=9,
                    label="repeat-action rule",
                )
    ax.set_xlabel("steps saved, pooled over held-out agents (%)")
    ax.set_ylabel("outcome accuracy (%)")
    ax.set_title("Savings vs accuracy on held-out agents (leave-one-agent-out)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    savefig(fig, path, dpi=120)
    plt.close(fig)
    return path


def sweep_bench(bench: str, progress: Callable[[str], None] | None = None) -> dict[str, Path]:
    pred_path = features_dir(bench) / "loao_predictions.parquet"
    if not pred_path.exists():
        raise FileNotFoundError(
            f"{pred_path} is missing: run `earlyeval evaluate --bench {bench}` first"
        )
    with open(pred_path, "rb") as f:  # one handle: safe against a concurrent atomic replace
        df = pd.read_parquet(f)
    df = df[~df["small"]]
    cfg = eval_config(bench)
    sets = runsets_from_predictions(df, cfg.task_skips)
    out = sweep_frame(sets, np.asarray(GRID), cfg.warm_shares, cfg.warm_repeats, cfg.seed, progress)
    rdir = reports_dir(bench)
    csv = rdir / "sweep.csv"
    with atomic_path(csv) as tmp:
        out.to_csv(tmp, index=False)
    loao_path = rdir / "loao.json"
    loao = json.loads(loao_path.read_text()) if loao_path.exists() else None
    png = plot_frontiers(out, loao, rdir / "sweep_frontier.png")
    return {"sweep": csv, "plot": png}

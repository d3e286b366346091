"""The routing simulator's printed table and plot: report-layer views of a routing.json pair block."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from earlyeval.core.atomic import savefig
from earlyeval.core.plotting import pyplot


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def routing_table(block: Mapping[str, Any]) -> str:
    """One line per policy, for the console and the final report."""
    head = f"{block['cheap']} -> {block['strong']}: {block['n_tasks']} shared tasks" + (
        f", budget ${block['budget_usd']:.0f}" if block.get("budget_usd") else ""
    )
    cols = f"{'policy':<34} {'resolve':>7} {'cost$':>8} {'$/res':>6} {'esc':>4} {'stop':>4} {'gap':>6} {'gap/$100':>8} {'vsOrc/$':>7} {'econ':>5} {'budget':>8}"
    lines = [head, cols]
    for k, m in block["policies"].items():
        b = m["budget"]
        flag = "-" if b.get("over_budget") is None else ("OVER" if b["over_budget"] else "ok")
        lines.append(
            f"{k:<34} {_fmt(100 * m['resolve_rate'], '6.1f')}% {_fmt(m['total_cost_usd'], '8.2f')} "
            f"{_fmt(m['cost_per_resolved_usd'], '6.2f')} {m['n_escalated']:>4} {m['n_stopped']:>4} "
            f"{_fmt(m['gap_closed'], '6.2f')} {_fmt(m['gap_closed_per_100usd'], '8.3f')} "
            f"{_fmt(m['vs_oracle']['gap_closed_per_usd_ratio'], '7.2f')} {_fmt(m['economic_consistency']['value'], '5.2f')} {flag:>8}"
        )
    r = (block.get("references") or {}).get("random_escalation_same_share")
    if r:
        lines.append(
            f"{'(random escalation, same share)':<34} {_fmt(100 * r['expected_resolve_rate'], '6.1f')}% "
            f"{_fmt(r['expected_total_cost_usd'], '8.2f')} {'':>6} {'':>4} {'':>4} {_fmt(r['expected_gap_closed'], '6.2f')} "
            f"{_fmt(r['expected_gap_closed_per_100usd'], '8.3f')}"
        )
    return "\n".join(lines)


def plot_pair(block: Mapping[str, Any], path: Path) -> Path:
    """Resolve rate vs total real cost: every policy, the learned sweeps and the oracle frontier."""
    plt = pyplot()  # Agg, labels literal (an agent named $x$ is not TeX)

    fig, ax = plt.subplots(figsize=(11, 5.5))
    f = np.asarray(block["oracle_frontier"])
    ax.step(
        f[:, 0],
        100 * f[:, 1],
        where="post",
        color="k",
        lw=1,
        label="oracle frontier (all outcomes known)",
    )
    styles = {
        "escalate_on_predicted_failure": ("-", "tab:blue"),
        "stop_on_predicted_failure": ("--", "tab:orange"),
        "tier_by_prior": (":", "tab:green"),
        "escalate_when_value_positive": ("-.", "tab:purple"),
    }
    for name, pts in block["sweeps"].items():
        ls, col = styles.get(name, ("-", None))
        ax.plot(
            [p["total_cost_usd"] for p in pts],
            [100 * p["resolve_rate"] for p in pts],
            ls,
            color=col,
            alpha=0.6,
            lw=1,
            label=f"{name.replace('_', ' ')} (sweep)",
        )
    markers = "osD^v<>ph*X"
    for i, (name, m) in enumerate(block["policies"].items()):
        ax.plot(
            [m["total_cost_usd"]],
            [100 * m["resolve_rate"]],
            markers[i % len(markers)],
            ms=8,
            color=plt.cm.tab20(i % 20),
            label=f"{name} ({100 * m['resolve_rate']:.1f}%, ${m['total_cost_usd']:.0f})",
        )
    if block.get("budget_usd"):
        ax.axvline(
            block["budget_usd"],
            color="red",
            ls="-.",
            lw=1,
            label=f"budget ${block['budget_usd']:.0f}",
        )
    ax.set_xlabel("total real cost of one pass (USD)")
    ax.set_ylabel("resolve rate (%)")
    ax.set_title(
        f"{block['cheap']} -> {block['strong']} ({block['n_tasks']} shared tasks)", fontsize=10
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    savefig(fig, path, dpi=120)
    plt.close(fig)
    return path

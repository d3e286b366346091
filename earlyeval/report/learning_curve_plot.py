"""The learning curve's figure: held-out AUROC and steps saved against the number of training agents."""

from __future__ import annotations

from earlyeval.core.extras import require

require("plots", "the learning-curve figure")

from pathlib import Path
from typing import Any

from earlyeval.core.atomic import atomic_path  # noqa: E402
from earlyeval.core.plotting import pyplot  # noqa: E402

plt = pyplot()  # Agg, labels literal


def plot_learning_curve(lc: dict[str, Any], path: Path) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric, label in (
        (axes[0], "auroc_success", "held-out AUROC"),
        (axes[1], "steps_saved", "steps saved"),
    ):
        pts = [p for p in lc["points"] if p.get(metric) is not None]
        ax.scatter(
            [p["k"] for p in pts],
            [p[metric] for p in pts],
            s=12,
            alpha=0.4,
            label="one held-out agent, one subset",
        )
        ks = sorted(int(k) for k in lc["by_k"])
        ax.plot(
            ks,
            [lc["by_k"][str(k)][metric] for k in ks],
            "o-",
            color="black",
            label="mean over agents and subsets",
        )
        fit = (lc.get("fit") or {}).get(metric)
        if fit:
            xs = [k / 4 for k in range(4, 4 * (4 * max(ks)) + 1)]
            ax.plot(
                xs,
                [fit["a"] - fit["b"] / x for x in xs],
                "--",
                color="grey",
                label=f"fit a - b/k (plateau {fit['a']:.3f})",
            )
        ax.set_xlabel("training agents (k)")
        ax.set_ylabel(label)
        ax.set_title(
            f"{label} vs training agents ({lc.get('protocol')}, {lc.get('threshold_rule')})",
            fontsize=9,
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return path

"""How many models a leave-one-agent-out (or a training) fits, counted before any fit: the progress bars'
totals, from the same plans the fits follow (``evaluate.inner_plan``, ``loso``)."""

from __future__ import annotations

from earlyeval.config.eval_config import EvalConfig
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.holdout_groups import inner_plan, scaffold_of


def scaffold_groups(ds: Dataset, large: list[str]) -> dict[str, list[str]]:
    """The held-out scaffolds of leave-one-scaffold-out: every scaffold (``scaffold_of``, the one definition the
    inner exclusion uses too) with a large agent, while another scaffold has one to train and choose on; each
    with all its agents, large and small, in run order."""
    by: dict[str, list[str]] = {}
    for agent, scaffold in scaffold_of(ds).items():
        by.setdefault(scaffold, []).append(agent)
    return {
        s: ags
        for s, ags in by.items()
        if any(a in large for a in ags) and any(b not in ags for b in large)
    }


FITS_PLANNED = "fits planned: "  # the progress message that gives a bar its total (app.options.Bar)


def planned_fits(
    ds: Dataset,
    cfg: EvalConfig,
    with_loso: bool = True,
    with_small: bool = True,
    train: bool = False,
) -> int:
    """How many models ``run_loao`` (or, with ``train``, ``train_bench``) fits: the distinct sets of agents left
    out, from the same plans the fits follow; the progress bars' totals (a test checks it against the fits)."""
    keys: set[frozenset] = set()

    def add(held: frozenset) -> None:
        plan, _ = inner_plan(ds, cfg, held, large)
        keys.update([ex for ex, _ in plan] or [held])
        keys.add(held)

    units = ds.holdout_units(cfg.holdout_min_runs)
    large = [u.agents[0] for u in units if not u.small]
    if train:
        add(frozenset())
        return 2 * len(keys) if cfg.prior_guard else len(keys)
    for a in large:
        add(frozenset([a]))
    small = [a for u in units if u.small for a in u.agents] if with_small else []
    if small:
        add(frozenset(small))
    groups = scaffold_groups(ds, large) if with_loso else {}
    for ags in (
        groups.values()
    ):  # leave-one-scaffold-out: the scaffold, then it with each other one (loso.py)
        keys.add(frozenset(ags))
        keys.update(
            frozenset(ags) | frozenset(other)
            for other in groups.values()
            if not set(other) & set(ags)
        )
    # the prior guard fits the inner units twice (the model, the task-level model) and each held-out set once,
    # with whichever won: at most every key twice (the bar's total is then an upper bound)
    return 2 * len(keys) if cfg.prior_guard else len(keys)

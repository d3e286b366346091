"""Who is held out with whom: the inner units a fold's thresholds are chosen on (``inner_exclusion``,
``inner_plan``, ``inner_sets``: leave-one-agent-out or -scaffold-out among the training agents) and the
forward protocol's units (each agent by the agents dated strictly before it)."""

from __future__ import annotations

from earlyeval.config.eval_config import EvalConfig
from earlyeval.core.errors import SettingError
from earlyeval.evaluation.dataset import Dataset
from earlyeval.evaluation.fold_runner import FoldRunner
from earlyeval.fitting.metrics import RunSet


def scaffold_of(ds: Dataset) -> dict[str, str]:
    """Each agent's scaffold (catalog ``scaffold``; the agent's own name when the catalog gives none)."""
    out: dict[str, str] = {}
    for t in ds.trajs:
        out.setdefault(t.agent, str(t.meta.get("scaffold") or t.agent))
    return out


def inner_exclusion(ds: Dataset, held_out: frozenset, inner: frozenset, mode: str) -> frozenset:
    """Agents left out of the model that predicts the inner held-out agents ``inner``.

    ``mode`` "agent": the inner agents alone.  "scaffold": every agent sharing a scaffold with
    one of them too, so that an inner agent is as new to its model as a new scaffold is to the
    shipped one (with "agent", Moatless 0617 would be judged by a model trained on its twin 0609,
    and thresholds chosen on such easy inner predictions are too aggressive for a new agent).
    When the scaffold leaves no agent to train on (every agent shares it), "agent" applies."""
    if mode not in ("agent", "scaffold"):
        raise SettingError(
            "EvalConfig", "inner_holdout", f"must be 'agent' or 'scaffold', not {mode!r}"
        )
    if mode == "agent":
        return held_out | inner
    sc = scaffold_of(ds)
    mates = {a for a in sc if sc[a] in {sc[b] for b in inner}}
    wide = held_out | inner | frozenset(mates)
    return wide if set(sc) - wide else held_out | inner


def inner_plan(
    ds: Dataset, cfg: EvalConfig, held_out: frozenset, large: list[str]
) -> tuple[list[tuple[frozenset, list[str]]], str]:
    """The inner fits ``inner_sets`` makes: (agents left out of the model, the inner agents it predicts), and
    the method's name; no pair means the training agents' validation split (one fit, without ``held_out``)."""
    remaining = [b for b in large if b not in held_out]
    k = cfg.inner_folds
    mode = cfg.inner_holdout
    suffix = "" if mode == "agent" else " (each inner agent's whole scaffold left out)"
    if 2 <= len(remaining) <= k:
        return [
            (inner_exclusion(ds, held_out, frozenset([b]), mode), [b]) for b in remaining
        ], "inner-loao" + suffix
    if len(remaining) > k:
        # many agents (tau2): leave-one-GROUP-of-agents-out, k groups dealt round-robin by size
        order = sorted(remaining, key=lambda b: (-ds.n_runs(b), b))
        groups = [frozenset(order[i::k]) for i in range(k)]
        return (
            [(inner_exclusion(ds, held_out, g, mode), sorted(g)) for g in groups],
            f"inner leave-{k}-groups-of-agents-out" + suffix,
        )
    return [], "training agents' task-grouped validation split"


def inner_sets(
    runner: FoldRunner, held_out: frozenset, large: list[str]
) -> tuple[dict[str, RunSet], str]:
    """Predictions of every other large agent from models that see neither it nor the held-out set
    (nor, with ``inner_holdout = "scaffold"``, any agent of its scaffold)."""
    plan, method = inner_plan(runner.ds, runner.cfg, held_out, large)
    if not plan:
        return runner.validation_sets(held_out), method
    return {b: runner.predict(ex, b) for ex, agents in plan for b in agents}, method


def agent_dates(ds: Dataset) -> dict[str, str]:
    """Each agent's date: the earliest date of its runs ("" when none is dated)."""
    out: dict[str, str] = {}
    for t in ds.trajs:
        d = str(t.meta.get("date") or "")
        if d and (t.agent not in out or d < out[t.agent] or not out[t.agent]):
            out[t.agent] = d
        out.setdefault(t.agent, d)
    return out


MIN_OLDER_AGENTS = (
    3  # the forward protocol holds out an agent only with at least this many older agents
)


def forward_groups(
    ds: Dataset, large: list[str], small: list[str]
) -> list[tuple[frozenset, list[str]]]:
    """The forward protocol's held-out units: each agent (the small ones one by one too) with every agent dated on
    or after it left out, so its model (and thresholds) know only the agents dated strictly before it; kept only
    with ``MIN_OLDER_AGENTS`` older large agents (what a user has when a new agent arrives)."""
    dates = agent_dates(ds)
    out = []
    for a in [*large, *small]:
        if not dates.get(a):
            continue
        newer = frozenset(b for b in dates if not dates[b] or dates[b] >= dates[a])
        if len([b for b in large if b not in newer]) >= MIN_OLDER_AGENTS:
            out.append((newer | {a}, [a]))
    return out

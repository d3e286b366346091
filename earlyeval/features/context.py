"""Whether a run's context gives the model's families what they need, and what Decision.context says then.

The Monitor asks it at ``start`` (never halting on missing information) and ``earlyeval train``
counts, per family, the training runs that lacked its inputs (``training.context_absent_runs``).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from earlyeval.features import Featurizer, RunContext
from earlyeval.features.peer import task_of

# a family's absent inputs count as a state the model was trained on when at least this share (and this
# many) of its training runs lacked them too (``training.context_absent_runs``, written by train_bench)
TRAINED_STATE_MIN_SHARE = 0.01
TRAINED_STATE_MIN_RUNS = 10


def context_gaps(featurizer: Featurizer, ctx: RunContext) -> list[tuple[str, str]]:
    """(family, message) for each family of ``featurizer`` whose inputs ``ctx`` lacks (its features are NaN):
    each family says so itself (``check_context``), in the featurizer's order."""
    out = []
    for f in featurizer.families:
        try:
            msg = f.check_context(ctx)
        except (
            Exception
        ) as e:  # a family that cannot tell is a gap (halting off), never a crash at start
            msg = f"the {f.name} family could not check the context ({type(e).__name__}: {e}): taken as absent"
        if msg:
            out.append((f.name, str(msg)))
    return out


def context_state(
    featurizer: Featurizer,
    ctx: RunContext,
    gaps: list[tuple[str, str]],
    training: Mapping[str, Any],
) -> tuple[str, str]:
    """(Decision.context, why halting is off or "") for a run's context; see the module doc."""
    needs_task = [f.name for f in featurizer.families if f.needs_task]
    if needs_task and ctx.task is None and not task_of(ctx):
        return "none", f"no task given, and the model's {', '.join(needs_task)} features need one"
    if not gaps:
        return "full", ""
    absent = training.get("context_absent_runs") if isinstance(training, Mapping) else None
    runs = training.get("context_runs") if isinstance(training, Mapping) else None
    untrained = []
    for fam, _ in gaps:
        n = absent.get(fam) if isinstance(absent, Mapping) else None
        if not (
            isinstance(n, int)
            and isinstance(runs, int)
            and runs > 0
            and n >= TRAINED_STATE_MIN_RUNS
            and n >= TRAINED_STATE_MIN_SHARE * runs
        ):
            untrained.append(fam)
    if not untrained:
        return "partial-trained", ""
    return (
        "partial",
        f"the {', '.join(untrained)} inputs are missing and the model was not trained on runs without them",
    )


def context_absent_counts(featurizer: Featurizer, contexts: Iterable[RunContext]) -> dict[str, int]:
    """Per family, how many of these (training) contexts lack its inputs: what ``context_state`` reads."""
    out = {f.name: 0 for f in featurizer.families if f.needs_task}
    for ctx in contexts:
        for fam, _ in context_gaps(featurizer, ctx):
            out[fam] = out.get(fam, 0) + 1
    return out

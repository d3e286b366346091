"""The targets a held-out agent's numbers are read against (issue 21), in one place: the report page marks
every miss from here, and nothing else states them.

Per held-out agent (label-free, under as_of): AUROC >= 0.90, halted accuracy >= 95 %, >= 20 % of steps saved
with at least half of it in-run, |resolve-rate shift| <= 1 pp.  Beside them, what the page calls a large
calibration gap (mean P(success) against the observed success rate) and an off-nominal budget coverage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from earlyeval.report.html import num as _num


@dataclass(frozen=True)
class Target:
    key: str  # the metric-block key whose cell is marked on a miss
    text: str  # the target as a person reads it
    met: Callable[[dict[str, Any]], bool | None]  # None: the block cannot tell (metric unknown)


def _at_least(key: str, lo: float) -> Callable[[dict[str, Any]], bool | None]:
    return lambda b: None if _num(b.get(key)) is None else _num(b.get(key)) >= lo


def _half_in_run(b: dict[str, Any]) -> bool | None:
    saved, inrun = _num(b.get("steps_saved")), _num(b.get("steps_saved_in_run"))
    if saved is None or inrun is None:
        return None
    return saved > 0 and inrun >= saved / 2


def _small_shift(b: dict[str, Any]) -> bool | None:
    v = _num(b.get("resolve_rate_shift_pp"))
    return None if v is None else abs(v) <= 1.0


TARGETS: tuple[Target, ...] = (
    Target("auroc_success", "AUROC ≥ 0.90", _at_least("auroc_success", 0.90)),
    Target("halted_accuracy", "halted accuracy ≥ 95 %", _at_least("halted_accuracy", 0.95)),
    Target("steps_saved", "≥ 20 % of steps saved", _at_least("steps_saved", 0.20)),
    Target("steps_saved_in_run", "at least half of the steps saved in-run", _half_in_run),
    Target("resolve_rate_shift_pp", "|shift| ≤ 1 pp", _small_shift),
)

# a held-out agent's mean P(success) this far (absolute) from its observed success rate is flagged on the page
CALIBRATION_GAP = 0.10
# a budget interval's coverage this far (absolute) from its nominal level is flagged
COVERAGE_TOLERANCE = 0.05


def misses(block: dict[str, Any]) -> dict[str, str]:
    """The targets ``block`` (a loao.json agent or pooled block) misses: metric key -> the target's text.
    A metric the block does not have is not a miss (unknown is unknown)."""
    return {t.key: t.text for t in TARGETS if t.met(block) is False}


def exact(block: dict[str, Any], key: str) -> str:
    """The metric behind a target, unrounded enough to see why it misses (a shift of -1.04 pp shows as -1.0)."""
    v = _num(block.get(key))
    if v is None:
        return "unknown"
    if key == "resolve_rate_shift_pp":
        return f"{v:+.2f} pp"
    if key == "auroc_success":
        return f"{v:.4f}"
    if key == "steps_saved_in_run":
        return (
            f"{100 * v:.2f} % in-run of {100 * (_num(block.get('steps_saved')) or 0):.2f} % saved"
        )
    return f"{100 * v:.2f} %"


def calibration_gap(mean_p: float | None, observed: float | None) -> float | None:
    """mean P(success) - observed success rate (negative: the model under-predicts success)."""
    return None if mean_p is None or observed is None else float(mean_p) - float(observed)


def off_nominal(coverage: Any, level: Any) -> bool:
    c, lv = _num(coverage), _num(level)
    return c is not None and lv is not None and abs(c - lv) > COVERAGE_TOLERANCE


def target_sentences(rep: dict[str, Any], protocol: str = "as_of") -> list[str]:
    """Per target, on how many large held-out agents of ``protocol`` it is met and which miss it (with the
    number): the README's targets lines (tools/results_tables.py), read off the same ``TARGETS`` as the page."""
    prot = (rep.get("protocols") or {}).get(protocol) or {}
    agents = prot.get("agents") or {}
    small = set(rep.get("small_agents") or [])
    large = [
        a
        for a in prot.get("holdout_agents") or agents
        if a not in small and isinstance(agents.get(a), dict)
    ]
    out = []
    for t in TARGETS:
        verdicts = {a: t.met(agents[a]) for a in large}
        known = [a for a, v in verdicts.items() if v is not None]
        missed = [f"{a} {exact(agents[a], t.key)}" for a in known if verdicts[a] is False]
        out.append(
            f"Target {t.text} ({protocol}, label-free): met on {len(known) - len(missed)} of {len(known)} "
            f"held-out agents" + (f"; missed by {', '.join(missed)}." if missed else ".")
        )
    return out

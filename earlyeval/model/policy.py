"""The threshold policy: the one halting rule, numpy only (the live Monitor imports it).

Prefix t (1 <= t < T) halts when t >= min_t and p_s >= tau_s or p_f >= tau_f (NaN never crosses; when both
cross, the larger margin wins, a tie going to success); a run halts at its first such prefix. Before the rule, the
prefix's gate (``gated``) says which sides may halt at all: the success side only where the run's own success
evidence holds, and neither side on a task skip unless the task-skip policy is on. Its scalar and batch forms and
``halt_on``: docs/monitor.md, "The halting rule".
"""

from __future__ import annotations

from typing import Any, Literal, Sequence, Union, get_args, overload

import numpy as np
from numpy.typing import ArrayLike

# a threshold no probability reaches: "never halt this way" (printed as "off": core.decision.threshold_text)
from earlyeval.core.decision import NEVER as NEVER
from earlyeval.features.evidence import ACTED, EVIDENCE

# step_outcome's codes; FAILURE/SUCCESS are also the recorded outcome
CONTINUE, FAILURE, SUCCESS = (
    -1,
    0,
    1,
)

# a halt after at most this many steps, or before any action of the agent, is a task skip: the task alone decided
TASK_SKIP_T = 1

HaltOn = Literal["failure", "success", "both"]
HALT_ON: tuple[str, ...] = get_args(HaltOn)  # ("failure", "success", "both")

# (R, L) padded with NaN, or R 1-D arrays (prefix t at index t-1)
Runs = Union[np.ndarray, Sequence[np.ndarray]]
# a Python float (the Monitor's one prefix) or a float64 array (the batch forms)
Real = Union[float, np.ndarray]


@overload
def step_outcome(
    p_s: float, p_f: float, tau_s: float, tau_f: float, t: int, min_t: int = 1
) -> int: ...
@overload
def step_outcome(
    p_s: np.ndarray, p_f: np.ndarray, tau_s: Real, tau_f: Real, t: Real, min_t: int = 1
) -> np.ndarray: ...
def step_outcome(
    p_s: Real, p_f: Real, tau_s: Real, tau_f: Real, t: Real, min_t: int = 1
) -> int | np.ndarray:
    """SUCCESS, FAILURE or CONTINUE for prefix t under (tau_s, tau_f): the halting rule, elementwise.

    Written with operators only, so that the one expression serves both callers: Python floats in
    and an int out (the Monitor, a microsecond per step), float64 arrays in and an int8 array out
    (the batch forms, broadcasting).  Python floats and float64 are the same IEEE doubles."""
    s_hit = p_s >= tau_s  # NaN >= x is False: a NaN never halts
    f_hit = p_f >= tau_f
    success = s_hit & (((p_s - tau_s) >= (p_f - tau_f)) | (f_hit == False))  # noqa: E712 (elementwise not)
    halt = (s_hit | f_hit) & (t >= max(int(min_t), 1))
    code = halt * (success + 1) - 1  # CONTINUE (-1) unless halting, then SUCCESS (1) or FAILURE (0)
    return code.astype(np.int8) if isinstance(code, np.ndarray) else int(code)


def may_halt(t: Any, gate: Any, task_skips: bool = False) -> tuple[Any, Any]:
    """(the success side may halt, the failure side may halt) at prefix ``t`` with gate bits ``gate``
    (``features.evidence.ACTED``, ``EVIDENCE``): the one place that says it, for the Monitor (Python ints in,
    numpy bools out) and the batch forms (arrays, broadcasting).

    A task-level prefix (t <= TASK_SKIP_T, or no action of the agent read yet) halts on neither side unless
    ``task_skips`` is on: what the task alone predicts is a task skip, an explicit policy. The success side
    also needs the run's own evidence: a success halt records work the run must have done."""
    task_level = np.logical_or(
        np.less_equal(t, TASK_SKIP_T), np.equal(np.bitwise_and(gate, ACTED), 0)
    )
    failure_ok = np.logical_or(bool(task_skips), np.logical_not(task_level))
    success_ok = np.logical_and(failure_ok, np.not_equal(np.bitwise_and(gate, EVIDENCE), 0))
    return success_ok, failure_ok


def gated(
    p_s: np.ndarray, p_f: np.ndarray, gate: np.ndarray, task_skips: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """One run's per-prefix probabilities (prefix t at index t-1) as the rule may read them: NaN (never
    crosses) where ``may_halt`` says the side may not halt."""
    t = np.arange(1, len(p_s) + 1)
    s_ok, f_ok = may_halt(t, np.asarray(gate, dtype=np.int64), task_skips)
    return (
        np.where(s_ok, np.asarray(p_s, dtype=np.float64), np.nan),
        np.where(f_ok, np.asarray(p_f, dtype=np.float64), np.nan),
    )


def gated_pair(p_s: float, p_f: float, t: int, gate: int, task_skips: bool = False) -> list[float]:
    """One prefix's (p_s, p_f) as the rule may read it, in a form strict JSON holds: 0.0 (below every
    threshold) for a side ``may_halt`` forbids. What a pass keeps of an audited run, so that its certification
    and shift test judge the halts the rule could make, as the simulator's gated view (``gated``) does."""
    s_ok, f_ok = may_halt(t, gate, task_skips)
    return [float(p_s) if s_ok else 0.0, float(p_f) if f_ok else 0.0]


def check_halt_on(value: object, where: str = "halt_on") -> str:
    """``value`` as a ``HALT_ON`` name; a ValueError naming ``where`` and the allowed values otherwise."""
    if not isinstance(value, str) or value not in HALT_ON:
        raise ValueError(
            f"{where}: {value!r} is not one of {', '.join(HALT_ON)} "
            "(which predicted outcomes may halt a run)"
        )
    return value


def halts_on_success(halt_on: str) -> bool:
    """Whether a predicted success may halt a run under ``halt_on``."""
    return check_halt_on(halt_on) in ("success", "both")


def halts_on_failure(halt_on: str) -> bool:
    """Whether a predicted failure may halt a run under ``halt_on``."""
    return check_halt_on(halt_on) in ("failure", "both")


def halting_pair(tau_s: float, tau_f: float, halt_on: str = "both") -> tuple[float, float]:
    """The (tau_s, tau_f) the rule applies under ``halt_on``: a side that is off gets ``NEVER``.

    The one definition of the operating modes: the Monitor, ``score`` and the offline evaluation
    all halt with ``step_outcome``/``first_halt`` on this pair."""
    return (
        float(tau_s) if halts_on_success(halt_on) else NEVER,
        float(tau_f) if halts_on_failure(halt_on) else NEVER,
    )


def pad(runs: Runs, T: np.ndarray | None = None) -> np.ndarray:
    """(R, L) float64 matrix of per-prefix probabilities, NaN past each run's end (NaN never halts).

    With ``T`` (run lengths), prefixes t >= T are blanked too: halting happens only at t < T."""
    if isinstance(runs, np.ndarray) and runs.dtype != object:
        if runs.ndim != 2:
            raise ValueError(
                f"runs: a (R, L) matrix or a list of per-run arrays, not an array of shape {runs.shape}"
            )
        m = runs.astype(np.float64, copy=True)
    else:
        rows = list(runs)
        m = np.full((len(rows), max((len(r) for r in rows), default=0)), np.nan)
        for i, r in enumerate(rows):
            m[i, : len(r)] = r
    if T is not None:
        t = np.arange(1, m.shape[1] + 1)
        m[t[None, :] >= np.asarray(T, dtype=np.int64)[:, None]] = np.nan
    return m


def _first_crossings(p: np.ndarray, taus: np.ndarray, lo: int) -> np.ndarray:
    """(R, N): per run and tau, the first 0-based index i >= lo with p[r, i] >= tau; L when none."""
    R, L = p.shape
    q = np.where(np.isnan(p), -np.inf, p)
    q[:, :lo] = -np.inf
    out = np.full((R, len(taus)), L, dtype=np.int64)
    if L == 0:
        return out
    # sorted per row: binary search finds the first crossing
    run_max = np.maximum.accumulate(q, axis=1)
    for r in range(R):
        out[r] = run_max[r].searchsorted(taus, side="left")
    return out


def first_halt_grid(
    p_s: Runs,
    p_f: Runs,
    taus_s: ArrayLike,
    taus_f: ArrayLike,
    min_t: int = 1,
    T: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(t_halt, outcome), each (R, Ns, Nf): the halting prefix t (0 = not halted) and its recorded
    outcome (SUCCESS/FAILURE; CONTINUE when not halted) of every run under every (tau_s, tau_f) pair."""
    ps, pf = pad(p_s, T), pad(p_f, T)
    if ps.shape != pf.shape:
        raise ValueError(f"p_s and p_f differ in shape: {ps.shape} vs {pf.shape}")
    ts = np.atleast_1d(np.asarray(taus_s, dtype=np.float64))
    tf = np.atleast_1d(np.asarray(taus_f, dtype=np.float64))
    if np.isnan(ts).any() or np.isnan(tf).any() or (ts == -np.inf).any() or (tf == -np.inf).any():
        raise ValueError(
            "thresholds must be numbers above -inf (a NaN or -inf threshold has no first crossing)"
        )
    R, L = ps.shape
    lo = max(int(min_t), 1) - 1
    S = _first_crossings(ps, ts, lo)[:, :, None]
    F = _first_crossings(pf, tf, lo)[:, None, :]
    k = np.minimum(S, F)  # the first prefix index where either side crosses
    halted = k < L
    # step_outcome at prefix k: one side crossed first (k = S < F: only p_s >= tau_s holds there, SUCCESS;
    # k = F < S: FAILURE); where both first cross at k, the margins decide: step_outcome itself, on those cells
    # SUCCESS (1) where the success side crossed first, else FAILURE (0)
    out = (S < F).astype(np.int8)
    r, i, j = np.nonzero(halted & (S == F))
    if len(r):
        kt = k[r, i, j]
        with np.errstate(
            invalid="ignore"
        ):  # inf - inf (an infinite threshold met by an infinite p) is no tie
            out[r, i, j] = step_outcome(ps[r, kt], pf[r, kt], ts[i], tf[j], kt + 1, min_t)
    not_halted = ~halted
    out[not_halted] = CONTINUE
    k += 1
    k[not_halted] = 0
    return k, out


def first_halt(
    p_s: Runs, p_f: Runs, tau_s: float, tau_f: float, min_t: int = 1, T: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(t_halt, outcome), each (R,), of every run under one (tau_s, tau_f): ``first_halt_grid`` of one pair."""
    t, o = first_halt_grid(p_s, p_f, [tau_s], [tau_f], min_t, T)
    return t[:, 0, 0], o[:, 0, 0]


def first_halt_below(
    p: Runs, taus: ArrayLike, min_t: int = 1, T: np.ndarray | None = None
) -> np.ndarray:
    """(R, N): per run and tau, the first prefix t >= min_t with p < tau (0 = none), e.g. P(feasible) < tau.

    The same rule with the failure side only, on p_f = -p and tau_f = -(the largest float below tau):
    for floats, p < tau  <=>  -p >= -nextafter(tau, -inf), exactly.  A NaN p never halts."""
    q = pad(p, T)
    taus = np.atleast_1d(np.asarray(taus, dtype=np.float64))
    t, _ = first_halt_grid(
        np.full_like(q, np.nan), -q, [np.inf], -np.nextafter(taus, -np.inf), min_t
    )
    return t[:, 0, :]


# why a run halted (Decision.halt_rule, score's records and per_run.csv): one name per basis
TASK_PRIOR = "task prior"  # at step 1, or before any action of the agent: the task alone decided (a task skip)
OUTCOME_RULE = "outcome rule"  # the run's own steps crossed a threshold
BUDGET_RULE = "budget rule"  # P(feasible) under the budget fell below its tau
HALT_RULES: tuple[str, ...] = (TASK_PRIOR, OUTCOME_RULE, BUDGET_RULE)


def halt_rule(t: int, actions_seen: int, budget: bool = False) -> str:
    """The basis of a halt after ``t`` steps of which ``actions_seen`` held an action of the agent:
    ``TASK_PRIOR`` when nothing the agent did was read yet (t <= 1 or no action), so that a task skip
    says so wherever it is shown; else ``BUDGET_RULE`` or ``OUTCOME_RULE``."""
    if int(t) <= TASK_SKIP_T or int(actions_seen) <= 0:
        return TASK_PRIOR
    return BUDGET_RULE if budget else OUTCOME_RULE

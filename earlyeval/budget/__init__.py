"""Budget awareness (ARCHITECTURE §5): remaining-budget intervals, feasibility under a
budget B, early stop on "impossible", measured leave-one-agent-out.

Targets.  For a run with per-step usage u_0..u_{T-1} in a dimension (steps: all 1;
output/input tokens; cost in USD) the prefix t (steps 0..t-1 seen, 1 <= t < T) has
``spent = sum(u[:t])`` and ``remaining = sum(u[t:])``.  A run whose usage is unknown
(None) on any step is left out of that dimension, never counted as 0.  One
documented exception: the opening turn of a tau2 dialogue is the scaffold's
hard-coded greeting (no LLM call, no tool call, no usage at all; see
``earlyeval.ingest.tau2``); it costs nothing, so it counts as 0 when every other
step is metered.  Only formats listed in ``BudgetConfig.free_opening_formats``.
A run whose usage is 0 on every step is unknown too (a counter that never
counted: tau2's gemma-3-27b-it logs completion_tokens = 0 on every turn that
wrote text), the rule the tau2 ingestor already applies to an all-zero cost.

Estimator.  LightGBM quantile regression (alphas 0.05/0.1/0.5/0.9/0.95) of
``z = log1p(remaining / rate)``, where ``rate = (spent + unit) / (t + 1)`` is the
run's own spend per step so far shrunk towards ``unit`` (the training agents'
median spend per step).  The target is then "remaining budget in units of this
run's own pace", which carries across agents whose token scales differ tenfold.
Quantile crossing is fixed by sorting.  Features: the outcome model's fold-free
blocks (Dataset.blocks) plus, for token/cost dimensions, spend so far, pace and
last-step spend relative to pace (computed here only).

Conformal calibration (CQR, Romano et al. 2019) with AGENTS as the exchangeable units.  For a
held-out agent A, the other agents (the small runs as one group, as in ``evaluate.run_loao``) are
dealt into calibration folds: with the outcome rule's ``inner_holdout = "scaffold"`` (SWE-bench) one
fold per scaffold (groups sharing a scaffold together, up to ``max_scaffold_folds``: a
leave-one-scaffold-out calibration), else ``max_folds`` agent folds.  Fold model k is fitted on the
calibration agents outside fold k and scores the agents of fold k: ``s = max(q_lo - z, z - q_hi)``, so
each calibration agent is scored by a model that saw no agent of its scaffold, as new to it as a new
scaffold is to the shipped model.  Per calibration group g, Q_g = the weighted level quantile of g's own
scores (prefix weight 1/(T-1)): the correction under which g's coverage would be exactly the level.
The correction is the k-th smallest of the n groups' Q_g, k = ceil(agent_quantile (n + 1))
(``quantiles.agent_conformal_quantile``; agent_quantile 0.5).  A's prediction is the mean of the fold
models' quantiles, widened by it.  Guarantee: if A and the n calibration groups are exchangeable as
units, A's own correction Q_A is at most the k-th smallest with probability >= k / (n + 1), so from A's
first run P(A's coverage >= level) >= k / (n + 1) and P(A's coverage <= level) >= (n + 1 - k) / (n + 1):
the correction is a median-unbiased estimate of the one A needs.  It bounds no distance: an agent unlike
every calibration agent (its own run-length scale) can still fall far from the level, which
``budget.json`` measures per held-out agent (``targets``).  ``calibration = "pooled"`` is the earlier
rule: the weighted level (1 + 1/n_runs) quantile of every calibration row's score, each group weighing
the same in total (runs as the exchangeable units).
A never reaches a fit, a score or a threshold of its own evaluation.

Feasibility.  A run is feasible iff it succeeds and its total <= B.  At prefix t,
``P(feasible) = P(success) * P(remaining <= B - spent)``; P(success) is the outcome
model fitted without A (``FoldRunner.predict``), the second factor the
conformalized distribution: the five corrected quantiles, sorted, linearly
interpolated in z (linear tails).  The two factors are treated as independent
(they are not: failing runs tend to be long), which the report's F1s measure.
Early stop: halt at the first t with P(feasible) < tau; tau maximizes the budget
saved on infeasible runs of the large calibration agents (inner predictions,
without A; small agents are left out of threshold selection as in
``evaluate.run_loao``) subject to a mean success-rate cost <= ``max_cost_pp`` over
them.  Costs and savings are counted under the budget (``StopSet``): a run that
would overrun B is stopped at B anyway, so only feasible runs can be lost.

B is a scenario parameter fixed per benchmark and dimension (a quantile of the
run totals), the same in every fold so that feasibility labels and pooled
numbers are comparable; it is not fitted to anything.

Online re-conformalization (``budget.online``, reported beside the label-free numbers under
``online``, never replacing them): the held-out agent's runs finish in a seeded random order and
run i's correction is recomputed from the realized budgets (no outcome labels) of that agent's
runs finished before i, once >= 20 have finished (the calibration agents' correction before).

Shipping.  ``fit_shipped`` is the same procedure with no agent held out (every
agent group a calibration group; the same folds, corrections, B and tau rule,
through the same functions ``run_budget`` calls: ``fit_calibrated``,
``inner_p_success``, ``select_on_calibration``); ``earlyeval train`` stores it
as ``extra_budget.json`` and the Monitor evaluates it live (``budget.live``).
The spend features have one implementation, ``spend_features``, called on the
batch prefix table here and on the streaming spend (``SpendTracker``) there.

Modules, bottom to top (each imports only from those above it):

* ``config``      constants and ``BudgetConfig``                                  (numpy)
* ``targets``     per-step usage, remaining/spent per prefix, spend features,
                  ``SpendTracker`` (the streaming twin)                            (numpy)
* ``cqr``         z scale, crossing, CQR scores/widening, quantile CDF            (numpy)
* ``live``        ``LiveBudget``: extra_budget.json evaluated per step in the Monitor
                  (config, targets, cqr + ``fastpredict``; no pandas/sklearn of its own)
* ``quantiles``   ``QuantileRegressor``, ``CrossConformalQuantiles``, ``BudgetEstimator`` (lightgbm)
* ``baseline``    the linear-extrapolation baseline
* ``stopping``    stop sets under B, tau / step-cap selection
* ``online``      online re-conformalization (beside the label-free numbers)
* ``calibration`` groups, agent folds, B, the shared set-up, the CQR fit on calibration agents
* ``evaluation``  ``run_budget`` (LOAO)
* ``shipped``     ``fit_shipped`` / ``predict_prefixes`` (what ``earlyeval train`` ships)
* ``report``      budget.json and the summary lines
* ``plots``       the two PNGs (matplotlib)

``earlyeval budget`` is ``pipeline.budget_bench``.  This ``__init__`` imports nothing, so that
``import earlyeval.budget.live`` loads only the live path.
"""

"""The remaining-budget maths: usage targets, conformalized quantile regression, stop sets under a budget.

The live intervals are ``earlyeval.live.budget``, their leave-one-agent-out evaluation and the shipped fit
``earlyeval.evaluation.budget*``, budget.json ``earlyeval.report.budget``.  The design (targets, CQR with agents
as the exchangeable units, feasibility, the guarantee) is in docs/architecture.md, "The remaining budget".
This ``__init__`` imports nothing, so that ``import earlyeval.live.budget`` loads only what it needs.
"""

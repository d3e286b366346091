"""The remaining-budget maths: usage targets, conformalized quantile regression, stop sets under a budget.

The live intervals are ``earlyeval.live.budget``, their leave-one-agent-out evaluation and the shipped fit
``earlyeval.evaluation.budget*``, budget.json ``earlyeval.report.budget``.  The design (targets, CQR with agents
as the exchangeable units, feasibility, the guarantee) is in docs/architecture.md, "The remaining budget".
The live budget imports nothing of it (``earlyeval.model.budget``, ``model.cqr``); this ``__init__`` only checks
the [train] extra.
"""

from earlyeval.core.extras import require

require("train", "earlyeval.budget (the remaining-budget estimators)", ("sklearn",))

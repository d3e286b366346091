"""Offline evaluation: datasets; leave-one-agent-out, as-of and leave-one-scaffold-out runs of the outcome model
and of the budget intervals (budget*.py); warm start and adaptation."""

from earlyeval.core.extras import require

require("train", "earlyeval.evaluation (leave-one-agent-out)")

"""Report writing: tables, prediction dumps, budget.json and its plots, the HTML page."""

from earlyeval.core.extras import require

require("train", "earlyeval.report", ("pandas",))

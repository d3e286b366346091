"""Report writing: tables, prediction dumps, budget.json and its plots, the HTML page."""

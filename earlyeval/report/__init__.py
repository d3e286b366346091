"""Report writing: tables, prediction dumps, the HTML page."""

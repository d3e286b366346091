"""The application: the typer CLI and the pipeline steps it runs."""

from earlyeval.core.extras import require

require("cli", "the earlyeval command", ("typer",))

"""The application: the typer CLI (``cli``, one module per verb in ``verbs``) and the stages it runs (``stages``)."""

from earlyeval.core.extras import require

require("cli", "the earlyeval command", ("typer",))

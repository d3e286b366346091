"""The ``earlyeval`` command (and ``python -m earlyeval``): the typer CLI when the [cli] extra is installed, else
one line naming it."""

from __future__ import annotations

import sys

from earlyeval.core.errors import MissingExtraError
from earlyeval.core.extras import require


def main() -> None:
    try:
        require("cli", "the earlyeval command", ("typer",))
    except MissingExtraError as e:
        sys.exit(f"earlyeval: {e}")
    from earlyeval.app.cli import app  # here, once typer is known to be there

    app()


if __name__ == "__main__":
    main()

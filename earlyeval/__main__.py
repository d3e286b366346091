"""The ``earlyeval`` command (and ``python -m earlyeval``): the typer CLI when the [cli] extra is installed, else
one line naming it."""

from __future__ import annotations

import sys

from earlyeval.core.errors import MissingExtraError
from earlyeval.core.extras import require
from earlyeval.model.threads import configure


def main() -> None:
    configure()  # before anything loads OpenMP (LightGBM): it reads its wait policy once, at load
    try:
        require("cli", "the earlyeval command", ("typer",))
    except MissingExtraError as e:
        sys.exit(f"earlyeval: {e}")
    from earlyeval.app.cli import app  # here, once typer is known to be there

    app()


if __name__ == "__main__":
    main()

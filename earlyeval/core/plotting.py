"""matplotlib for earlyeval's figures: the Agg backend (no display), and labels as literal text.

matplotlib reads a label between two ``$`` as TeX (mathtext): an agent named ``$x$`` would be typeset, and one
named ``$\\fo$`` raise when the figure is drawn, costing its section.  Every figure's labels are literal
(``text.parse_math`` off, ``text.usetex`` off), set in this one place."""

from __future__ import annotations

from typing import Any

LITERAL_TEXT: dict[str, Any] = {"text.parse_math": False, "text.usetex": False}


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, labels literal."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rc: Any = plt.rcParams  # matplotlib types its keys as literals; these two are its own
    rc.update(LITERAL_TEXT)
    return plt

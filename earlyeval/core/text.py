"""Text shown to a person (a terminal, a log, a report page): control and bidi characters made visible."""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1, the bidi embeddings, overrides, isolates and marks: what lets a file
# name move the cursor, recolour or rewrite what a terminal shows, or reorder what a page shows
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every control and bidi character escaped (``\\x1b``, ``\\u202e``): a run file named with
    ANSI codes reaches the terminal as its escaped name, never as codes the terminal obeys."""
    return _CONTROL.sub(
        lambda m: (
            f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}"
        ),
        text,
    )

"""``earlyeval formats``: the native run formats earlyeval reads, each with its description."""

from __future__ import annotations

import typer

from earlyeval.app.cli_support import print_json, say


def format_descriptions() -> dict[str, str]:
    """Each run format's one-line description: the first line of its ingestor's docstring."""
    from earlyeval.ingest import FORMATS

    out = {}
    for f in sorted(FORMATS.known()):
        try:
            doc = (FORMATS.resolve(f).__doc__ or "").strip()
        except Exception as e:  # a broken optional plugin: say so, list the others
            doc = f"(cannot load: {type(e).__name__}: {e})"
        out[f] = doc.splitlines()[0].strip() if doc else ""
    return out


def formats(
    as_json: bool = typer.Option(False, "--json", help="Print {name: description} as JSON."),
) -> None:
    """List the native run formats earlyeval reads (built-in, then installed entry points), each with a description."""
    d = format_descriptions()
    if as_json:
        print_json(d)
        return
    w = max(map(len, d), default=0)
    for f, desc in d.items():
        say(f"{f:<{w}}  {desc}")

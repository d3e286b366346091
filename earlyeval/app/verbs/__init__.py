"""The CLI verbs, one module each: a verb parses its options, calls its stage (``earlyeval.app.stages`` or a
workflow) and prints; ``earlyeval.app.cli`` puts them on the typer app.  Each imports its stack when it runs, so
that ``earlyeval --help`` stays fast."""

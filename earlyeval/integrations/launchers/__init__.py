"""The adapters' command-line launchers (``earlyeval-mini``, ``earlyeval-sweagent``): typer programs that start an
agent framework's own runner with an adapter switched on.  Unlike the adapters beside this folder they are not
held to the runtime rule (tests/test_layers.py): they sit with the workflows."""

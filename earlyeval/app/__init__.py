"""The application: the typer CLI and the pipeline steps it runs."""

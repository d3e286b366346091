"""The tables ingest writes and features read: the normalized-run store, task tables, prefix tables."""

"""Step readers: one module per native run format, each mapping native records (a message, an event, a
transition, a tool call, ...) to ``Step`` s.

No files and no catalog here: ``earlyeval.ingest`` reads a run's files and hands the records to its format's
reader, and the live adapters (``earlyeval.integrations``) hand it the records their framework gives them, so a
live step is the step training saw by construction.  A record a reader cannot place (an answer to nothing, a
kind it does not know, a repeat) is an ``IngestError`` naming the source and the record (docs/formats.md,
"Records a reader cannot place").
"""

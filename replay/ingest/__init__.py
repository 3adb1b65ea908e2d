"""Ingest: from a raw log file to a content-free `SessionTrace`.

`readers/` (one module per log source), `trace` (the trace's columns and vocabularies),
`keys` (keyed hashes, path pseudonyms), `tokens` and `blocktext` (canonical text, token
counts). The lowest room: imports nothing else from `replay`.
"""

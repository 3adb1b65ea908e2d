"""Ingest: from a raw log file to a content-free `SessionTrace`.

`readers/` (one module per log source, plus `base`, `report`, `source` and `jsonbytes`, which
stream a file's records whatever its format, and `fields`, what they all share), `checks`
(what a value from a log must look like before the trace keeps it), `builder` (the trace
columns every reader fills), `trace` (the trace's columns and vocabularies), `shell` and
`shell_parse` (what a shell command does to which file), `keys` (keyed hashes, path
pseudonyms), `tokens` and `blocktext` (canonical text, token counts).
The lowest room: imports nothing else from `replay`.
"""

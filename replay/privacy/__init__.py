"""Privacy: anonymized logs in their original format (`anonymize`) and secret scrubbing (`scrub`).

May import: `replay.ingest` (block text, keys, token counts). Reads logs itself (`files`): line by
line, repairing invalid UTF-8, writing each copy under a temporary name.
"""

"""Privacy: anonymized logs in their original format (`anonymize`) and secret scrubbing (`scrub`).

May import: `replay.ingest` (readers' loaders, block text, keys, token counts).
"""

"""The world the replay simulates: compact per-stream arrays loaded from the store (`arrays`),
the prompt-cache model (`cache`) and the price table (`costs`).

May import: `replay.store`, `replay.ingest`.
"""

"""Synthetic data: the session generator (`generate`) and the embedded sample's settings (`sample`).

May import: `replay.ingest`.
"""

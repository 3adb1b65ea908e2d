"""Experiments over the engine: stored runs (`runs`), sweeps (`sweep`), tuning (`tune`) and
the fidelity check of the no-op baseline (`validate`).

May import: `replay.engine`, `replay.policies`, `replay.model`, `replay.store`, `replay.ingest`.
"""

"""The replay loop: walks each stream's blocks and requests through a policy, the prompt-cache
model and the price table, and returns per-session and per-request figures.

May import: `replay.model`, `replay.policies`, `replay.ingest.trace`.
"""

from replay.engine.loop import replay_dataset, replay_session
from replay.engine.options import REQUEST_FIGURES, SESSION_FIGURES, ReplayOptions, SessionResult

__all__ = ["REQUEST_FIGURES", "SESSION_FIGURES", "ReplayOptions", "SessionResult", "replay_dataset",
           "replay_session"]

"""noop: the baseline. Every block keeps its size; nothing is hinted, trimmed or cleared.

Its replay must reproduce the usage the log recorded (the fidelity check): every saving
any other policy reports is measured against it.
"""

from __future__ import annotations

from replay.policies.base import Policy


class Noop(Policy):
    """Keeps everything; the replay must reproduce the recorded usage."""

    name = "noop"
    source = "baseline (DESIGN.md section 3, fidelity check)"

"""ctxreplay: replay coding-agent logs through context policies, priced with a prompt-cache model."""

__version__ = "0.1.0"

"""Parameters of the embedded sample dataset (datasets/sample/), so it can be regenerated."""

SAMPLE_SESSIONS = 6
SAMPLE_SEED = 7

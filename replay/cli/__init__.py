"""The `ctxreplay` command line: thin click commands over the library.

May import everything, including `analysis`; nothing imports it.
"""

from replay.cli.demo import sample_logs_dir
from replay.cli.main import main

__all__ = ["main", "sample_logs_dir"]

"""The ctxreplay command line: the click group and the registration of every command.

Each command group lives in its own module, a thin layer over the library: `data`
(ingest, datasets, sessions, export, generate), `usage` (recorded usage and cost), `run` (policies, replay, runs, sweep,
tune), `results` (compare, report), `fidelity` (validate), `demo` and `privacy` (anonymize). What
they share (options, consoles, error handling, database helpers) is in `common`; `check`
reads a database fully to tell whether it is whole.
"""

from __future__ import annotations

import click

from replay import __version__
from replay.cli import advise, bound, breaks, check, claims, data, demo, fidelity, results, run, usage, whatif
from replay.cli.common import CONTEXT_SETTINGS, EXIT_CODES, CleanGroup
from replay.cli.console import warn
from replay.cli.demo import sample_logs_dir
from replay.cli.privacy import anonymize

__all__ = ["main", "sample_logs_dir"]

FIGURES_LINE = ("What every figure means (delivered tokens, cost, cache read/write, breaks, bound, saving, interval, "
                "within targets, matched requests, ...): docs/figures.md.")


@click.group(cls=CleanGroup, context_settings=CONTEXT_SETTINGS, epilog=EXIT_CODES + "\n\n" + FIGURES_LINE)
@click.version_option(__version__, prog_name="ctxreplay")
def main() -> None:
    """Replay coding-agent logs through context dedup/trimming policies and price them
    with a prompt-cache model.

    Start with `ctxreplay usage --by day`: with no --db it ingests your agents' logs from their
    default folders into a database in your data directory first. Or try `ctxreplay demo`.
    """
    import warnings

    # a library warning (a policy given a model outside its documented list, ...) is one
    # `warning:` line like the CLI's own, not Python's two-line form with a source line
    warnings.showwarning = lambda message, *_a, **_k: warn(str(message))


for _command in [*data.COMMANDS, *usage.COMMANDS, *run.COMMANDS, *results.COMMANDS, *fidelity.COMMANDS, *breaks.COMMANDS,
                 *bound.COMMANDS, *whatif.COMMANDS, *advise.COMMANDS, *claims.COMMANDS, *check.COMMANDS, *demo.COMMANDS, anonymize]:
    # every command answers -h, also when invoked on its own (tests, docgen): click caches a
    # command's help option from the first context that asks for it
    _command.context_settings = {**CONTEXT_SETTINGS, **_command.context_settings}
    main.add_command(_command)

if __name__ == "__main__":  # pragma: no cover
    main()

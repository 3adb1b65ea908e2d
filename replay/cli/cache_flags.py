"""The cache-model and price options that replay, validate and friends share, and the
`ReplayOptions` they make (re-exported by `replay.cli.common`)."""

from __future__ import annotations

from pathlib import Path

import click


def _to_meta(ctx: click.Context, param: click.Parameter, value):
    # cache settings that commands pass through untouched: kept off their signatures
    ctx.meta[f"cache.{param.name}"] = value
    return value


def _setting(flag: str, choices: list[str], text: str):
    """A cache-model setting kept off the commands' signatures (in ``ctx.meta``, read by
    `make_options`); the first choice is the default, as in `CacheConfig`."""
    return click.option(flag, type=click.Choice(choices), default=choices[0], show_default=True,
                        expose_value=False, callback=_to_meta, help=text)


# (flag, choices with the default first, help) of each cache-model setting, in --help order
# the keys with spaces between them, so that a narrow terminal wraps between two keys, never inside one
PRICE_DATE_HELP = ("Date the library prices are resolved at [default: the price file's price_date, else 2026-11-01; "
                   "both given must agree].")
PRICES_HELP = ("TOML price overrides: a [models.\"NAME\"] table with every one of input, cache_write_5m, "
               "cache_write_1h, cache_read, output (in $/Mtok; or only a `fast` table of them)")

_CACHE_SETTINGS = [
    ("--warm-start", ["log", "cold"],
     "log: a stream's system prefix is warm where the log shows a read of it (cached by "
     "another session); cold: every stream starts with an empty cache."),
    ("--turn-end-write", ["earned", "v2", "always", "none"],
     "earned: model Claude Code's unlogged turn-end request (its prompt suggestion), which "
     "caches the conversation when a turn ends in assistant text, for client versions "
     "2.0.0-2.1.42, where the rule was earned (docs/replay-model.md, \"Rules earned on later "
     "versions\"); v2: for every 2.x version; always: for every client; none: off."),
    ("--thinking-switch", ["invalidate", "ignore"],
     "invalidate: a user turn that switches extended thinking on or off (budget-thinking "
     "models) reads only the system prefix (docs/replay-model.md); ignore: off."),
    ("--resume", ["invalidate", "ignore"],
     "invalidate: the first request after the log records a resumed session (a synthetic "
     "\"No response requested.\" answer, or a SessionStart hook with source resume) reads only "
     "the system prefix (the client rebuilt its project context; docs/replay-model.md); "
     "ignore: off."),
    ("--task-turns", ["invalidate", "ignore"],
     "invalidate: in Claude Code 2.1.32-2.1.37, a user turn after one that called the task "
     "tools reads only the system prefix (docs/replay-model.md); ignore: off."),
    ("--skill-turns", ["earned", "invalidate", "ignore"],
     "earned: in client versions 2.0.0-2.1.42, a user turn that loads a skill by slash command, "
     "and the turn after one that loaded a skill, read only the system prefix "
     "(docs/replay-model.md); invalidate: in every version; ignore: off."),
    ("--warm-prefix", ["ttl", "kept"],
     "ttl: the system prefix a stream's first request read warm (cached by other sessions) "
     "expires like the stream's own entries; kept: it stays readable however long the stream "
     "idles (measured, not earned: docs/replay-model.md)."),
    ("--tool-search", ["invalidate", "ignore"],
     "invalidate: from Claude Code 2.1.119, the request after a stream's first ToolSearch call "
     "reads only the system prefix (the loaded tool definitions change the tools; "
     "docs/replay-model.md); ignore: off."),
    ("--unknown-times", ["log", "model"],
     "log: where the log gives a request no time of its own (its stamp is shared with other "
     "requests: rewritten), the recorded read decides in every variant; model: judged as if no "
     "time had passed."),
    ("--system-prefix", ["earlier", "dataset", "log", "overhead"],
     "earlier: as log, and a stream whose first request read nothing takes the system prefix "
     "the sessions that started before it show for its model and client version (later "
     "sessions never change a replay); dataset: the same from every session of the dataset, "
     "later ones included (not causal); log: the "
     "system-prefix entry ends where the stream's first warm read ended; overhead: at the whole "
     "overhead (system, tools and unrecorded first-message context)."),
    ("--prefix-versions", ["nearest", "same"],
     "nearest: a cold stream whose client version no other session shows borrows the "
     "system prefix of the nearest version (the closest earlier one first); same: only "
     "its own version's."),
    ("--clock", ["end", "send", "response"],
     "end: requests look the cache up at their last input block's time, and what they read "
     "or write expires a TTL after their response's last block; send: both at the last input "
     "block's time; response: both at the logged response time."),
    ("--openai-retention", ["1h", "10m", "24h"],
     "OpenAI models: how long a prefix stays cached after its last use (with --ttl log): "
     "1h, the in-memory maximum; 10m, the typical; 24h, extended retention (docs/replay-model.md)."),
    ("--openai-increments", ["observed", "documented"],
     "OpenAI models: observed: GPT-5.5 reads end at 384 + a multiple of 512 tokens, as on the "
     "shared Codex logs, other models at 1,024 + a multiple of 128; documented: 1,024 + a "
     "multiple of 128 for every model."),
    ("--openai-reasoning", ["turn", "keep"],
     "OpenAI models: turn: a new user turn's prompt no longer holds the earlier turns' "
     "reasoning, so it shares only the part before the previous turn's first reasoning item "
     "with earlier prompts; keep: off."),
    ("--openai-second-request", ["system_only", "model"],
     "OpenAI models: system_only: a stream's second request reads only the prefix other "
     "sessions kept warm, as on every shared Codex log; model: off."),
    ("--openai-warm-prefix", ["kept", "ttl"],
     "OpenAI models: kept: the prefix a stream's first request read warm (kept by other "
     "sessions) stays readable however long the stream idles; ttl: it expires."),
]


def price_options(f):
    """The --prices and --price-date options (`prices_file`, `price_date`)."""
    f = click.option("--price-date", default=None,
                     help=PRICE_DATE_HELP)(f)
    return click.option("--prices", "prices_file", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                        default=None, help=PRICES_HELP + ".")(f)


def cache_options(f):
    """Cache-model and price options shared by replay, validate and friends."""
    opts = [
        click.option("--ttl", type=click.Choice(["log", "5m", "1h"]), default="log", show_default=True,
                     help="Cache TTL: from the log's recorded 5m/1h split, or forced."),
        click.option("--breakpoints", type=click.Choice(["claude-code", "last-message", "none"]),
                     default="claude-code", show_default=True,
                     help="Cache breakpoint placement (claude-code: after system+tools and at the last message)."),
        click.option("--observed-evictions", type=click.Choice(["log", "none"]), default="log", show_default=True,
                     help="log: the calibrated variant (replay the cache evictions and writes the log records "
                     "but the model cannot explain); none: the model-only (predictive) variant, which "
                     "takes from the log each request's input size, time, model, TTL split and client "
                     "events, and the first request's warm read, and predicts every hit and miss."),
        *(_setting(*s) for s in _CACHE_SETTINGS),
        click.option("--openai-routing-miss", type=click.FloatRange(0.0, 1.0, max_open=True), default=0.0,
                     show_default=True, expose_value=False, callback=_to_meta,
                     help="OpenAI models, model-only variant: the expected share of each read beyond the "
                     "warm prefix lost to requests routed to a machine without the prefix (0: off; "
                     "docs/replay-model.md gives the rate fitted on held Codex sessions)."),
        price_options,
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def make_options(ttl, breakpoints, observed_evictions, prices_file, price_date, detail=False):
    """ReplayOptions from the values of `cache_options`."""
    from replay.model.cache import CacheConfig
    from replay.model.costs import DEFAULT_PRICE_DATE, PriceTable
    from replay.engine import ReplayOptions

    date = price_date or DEFAULT_PRICE_DATE
    prices = PriceTable.from_toml(prices_file, date, given_date=price_date) if prices_file else PriceTable(date)
    meta = click.get_current_context(silent=True)
    meta = meta.meta if meta is not None else {}
    settings = {k.removeprefix("cache."): v for k, v in meta.items() if k.startswith("cache.")}
    return ReplayOptions(CacheConfig(ttl=ttl, breakpoints=breakpoints, observed_evictions=observed_evictions,
                                     **settings), prices, detail)

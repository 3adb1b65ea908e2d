"""`ctxreplay claims`: the claims register (every published claim, measured here in its own metric and in dollars, with a verdict), then each source's own metric in detail."""

from __future__ import annotations

import click

from replay.cli.claims_view import print_tables
from replay.cli.common import (
    DB_OPTION, cache_options, dataset_option, echo_json, err, esc, fail_on, format_option, json_option, make_options, open_db,
    pick_dataset, key_file_option
)
from replay.cli.fmt import wide_option


@click.command()
@DB_OPTION
@dataset_option("Dataset [default: the only one].")
@cache_options
@wide_option
@key_file_option("Key the dataset was ingested with, which maps a --prices file's hidden model names to the trace's [default: $CTXREPLAY_KEY_FILE or the default key file].")
@json_option("Print JSON: claims (the register: per published claim its text, figure, where published, "
             "conditions, own_metric (value and 95% interval in the claim's own metric), cost (billed dollars "
             "and percent saved with prompt caching priced, 95% interval_pct, run ids), verdict, reason and "
             "with_caching; cost_paper_prices: the Complexity Trap priced as the paper priced it), and sources (per source devboy, jp_067, ai_experiments: its own accounting in "
             "detail and ctxreplay's savings with intervals).")
@format_option
def claims(db, dataset, ttl, breakpoints, observed_evictions, prices_file, price_date, wide, key_file, as_json):
    """The claims register: every published claim ctxreplay can test, measured on these logs in
    its own metric, then in dollars with prompt caching priced, with a verdict.

    Claims: devboy, JP 067 and 036, Cupel, ai-experiments, Anthropic context editing (84% fewer
    tokens), Claude Code microcompact, the Complexity Trap's observation masking (M = 10; also
    priced as the paper priced it, with no cache-write premium) and SWE-agent's warning that
    masking breaks prompt caching; the published cache-TTL advice (main conversation at 1h with
    subagents at 5m; subagent cache writes' share of cost and re-cached system prompts; the
    March 2026 move from 1-hour to 5-minute TTLs), measured on the recorded requests re-priced
    (replay/experiments/claims_cache.py); solve-rate claims are listed as not testable offline.
    Verdicts: holds / does not hold here / not exercised (the policy or setting changes nothing
    on these logs) / not testable offline, from the own metric's 95% paired bootstrap interval
    (method: replay/experiments/claims_register.py, docs/claims.md). Then per source in detail:

    devboy: its published simulator's L0 dedup accounting (tool results of >= 200 chars, one
    FIFO of 5 per session log cleared at compaction, chars/4 tokens, 15-token hints): the
    saving, the repeat rate and the ceiling with an unbounded cache; then devboy_lru at the
    simulator's setting (eviction=fifo, verbosity=verbose) and at its defaults. devboy's L1/L2
    format re-encoding is not modelled. JP 067: tokens per redundant file read (and per 500
    lines); then jp_resource_dedup. ai-experiments (trim only when the conversation is large):
    supersede swept over its size trigger (trigger_tokens). The policies' runs are taken from
    the database when stored under the same cache settings, else replayed and stored.
    Method: replay/experiments/claims.py."""
    from analysis import intervals as iv
    from analysis.compare import compare
    from replay.experiments import runs
    from replay.experiments.claims import compute_claims
    from replay.model.costs import PriceError

    with fail_on(PriceError, ValueError):
        opts = make_options(ttl, breakpoints, observed_evictions, prices_file, price_date)
    con = open_db(db, read_only=False)
    dataset = pick_dataset(con, dataset, db)
    opts.prices.bind(dataset, key_file)
    ds = runs.load(con, dataset)
    before = _n_runs(con)
    with fail_on(PriceError):
        got = compute_claims(con, ds, opts, compare, iv)
    stored = _n_runs(con) - before
    if stored:  # they stay in the database: `report` and `compare` rank them with the others (newcomer's hour)
        err.print(f"stored {stored:,} new run(s) in {esc(db)} (the claims' configurations, reused next time): "
                  "`ctxreplay runs` lists them; `report` and `compare` rank them with every other stored run",
                  soft_wrap=True)
    if as_json:
        echo_json(got)
        return
    src = got["sources"]
    dev = src["devboy"]["ctxreplay"]
    rows = [("devboy", "devboy_lru (fifo, verbose: the simulator)", dev["simulator_setting"]),
            ("devboy", "devboy_lru (defaults)", dev["defaults"]),
            ("jp_067", "jp_resource_dedup (defaults)", src["jp_067"]["ctxreplay"]["defaults"])]
    rows += [("ai_experiments", f"supersede (trigger_tokens={x['trigger_tokens']:,})", x)
             for x in src["ai_experiments"]["ctxreplay"]["sweep"]]
    print_tables(got, dataset, wide, [(s, p, _cell(x, "context_tokens"), _cell(x, "cost"), (x or {}).get("run_id", "-"))
                                      for s, p, x in rows])


def _n_runs(con) -> int:
    return con.execute("SELECT count(*) FROM runs").fetchone()[0]


def _cell(x: dict | None, f: str) -> str:
    v = (x or {}).get(f)
    if not v or v["saved_pct"] is None:
        return "-"
    ivl = v["interval_pct"]
    span = f" [{ivl['low']:+z.3f}, {ivl['high']:+z.3f}]" if ivl else ""
    return f"{v['saved_pct']:+z.3f}%{span}"


COMMANDS = [claims]

"""The saving line `replay` and `tune` print under a run: against the matching no-op baseline
(`analysis.saving`), in dollars and percent, with the 95% paired interval."""

from __future__ import annotations

import json

from replay.cli.common import esc, out
from replay.cli.fmt import money, pct


def saving_text(s: dict) -> str:
    """`saves +$3.29 (+16.90%, 95% interval +10.94% to +20.39%) of $19.49`; a loss reads `costs −$1.20 more`."""
    ci = s.get("interval")
    inner = pct(s["saved_pct"]) + (f", 95% interval {pct(ci['low'])} to {pct(ci['high'])}" if ci else "")
    verb = "saves" if s["saved_usd"] >= 0 else "loses"
    return f"{verb} {money(abs(s['saved_usd']))} ({inner}) of {money(s['baseline_cost'])}"


def print_savings(con, run_ids: dict[str, str], db, dataset: str) -> dict[str, dict | None]:
    """Under each variant's run (variant -> run id), its saving against the matching baseline,
    or the command that stores that baseline; returns variant -> saving (None: no baseline)."""
    from analysis.saving import run_saving

    got = {v: run_saving(con, rid) for v, rid in run_ids.items()}
    for v, s in got.items():
        if s is not None:
            out.print(f"  vs the no-op baseline {esc(s['baseline_run'])} ({v}): {esc(saving_text(s))}")
    missing = [v for v, s in got.items() if s is None]
    if missing:
        from replay.cli.results import _baseline_command

        cfg, prices = con.execute("SELECT cache_config, prices FROM runs WHERE run_id = ?",
                                  [run_ids[missing[0]]]).fetchone()
        row = {"cache_config": json.loads(cfg), "prices": json.loads(prices), "dataset": dataset,
               "variant": missing[0].replace("-", "_")}
        cmd = _baseline_command(db, row, None if len(missing) == 2 else "")
        out.print(f"[yellow]no no-op baseline with these settings yet ({', '.join(missing)}), so no saving to show; "
                  f"store it with[/]\n  {esc(cmd)}\n  then `ctxreplay compare` shows the saving")
    return got

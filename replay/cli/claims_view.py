"""The tables `ctxreplay claims` prints: within 120 columns by default (the figures whole on one
line, only names and words wrapped), every column at full width with `--wide`."""

from __future__ import annotations

import textwrap

from rich.table import Table

from replay.cli.common import esc, out, print_table
from replay.cli.fmt import WIDTH, fit


def _whole(t: Table, i: int, figures: list[str]) -> None:
    """Column ``i`` exactly as wide as the widest of its ``figures`` (the lines that hold a
    figure: a cell's first line, and a cost cell's dollar and no-op lines): a figure must never
    wrap, while the words around it (a unit, a baseline's name) may. A fixed width, not a
    minimum: Rich shrinks the widest columns first and would then widen a minimum-width column
    back past the table's width."""
    t.columns[i].width = max(12, *(len(x) for x in figures))


def _cost_lines(p: dict[str, str]) -> list[str]:
    """The narrow cost cell: percent [95%], dollars (of the baseline's cost when the baseline is
    not the no-op replay), that baseline named, and the saving against the no-op beside it."""
    if p["cost_pct"] == "-":
        return ["-"]
    lines = [p["cost_pct"]]
    if p["cost_usd"] != "-":
        lines.append(p["cost_usd"] + (f" of {p['baseline_usd']}" if p["baseline"] and p["baseline_usd"] else ""))
    if p["baseline"]:
        lines.append(f"vs {p['baseline']}" + ("; vs the no-op"
                     + (f" ({p['noop_base_usd']})" if p["noop_base_usd"] else "") + ":" if p["noop_pct"] else ""))
        if p["noop_pct"]:
            lines += [p["noop_pct"], p["noop_usd"]]
    return lines


def register_table(claims: list[dict], title: str, wide: bool = False, sessions: int | None = None) -> Table:
    from analysis.report_claims import cells, parts

    if wide:
        t = Table("claim", "published", "measured here (own metric) [95%]", "cost saved with caching [95%]",
                  "verdict", title=title)
        for c in claims:
            pub, got, usd, (word, reason) = cells(c, sessions)
            t.add_row(esc(c["id"]), esc(pub), esc(got), esc(usd), esc(word + reason))
        return t
    t = Table("claim", "published", "measured here [95%] (own metric)", "cost saved with caching [95%]", "verdict",
              title=f"{title} (--wide: the reason for each verdict)")
    rows, own_figures, cost_figures = [], [], []
    for c in claims:
        p = parts(c, sessions)
        got = p["own"] + (f"\n{p['unit']}" if p["unit"] else "")
        cost = _cost_lines(p)
        own_figures.append(p["own"])
        cost_figures += [x for x in cost if not x.startswith("vs ")]
        rows.append((c["id"], p["published"], got, "\n".join(cost), p["verdict"]))
    for r in rows:
        t.add_row(*("\n".join(esc(line) for line in x.split("\n")) for x in r))
    t.columns[0].overflow = "fold"  # an id wraps rather than being cut: it names the claim in docs/claims.md
    t.columns[1].no_wrap = True
    _whole(t, 2, own_figures)
    _whole(t, 3, cost_figures)
    t.columns[1].justify = "right"
    return fit(t)


def savings_table(rows: list[tuple[str, str, str, str, str]], wide: bool = False) -> Table:
    """(source, policy, context tokens saved, cost saved, run id) per row; the run id only with ``wide``."""
    title = "ctxreplay's savings (percent of the no-op baseline; 95% interval)"
    if wide:
        t = Table("source", "policy", "context tokens saved", "cost saved", "run", title=title)
    else:
        t = Table("source", "policy", "context tokens saved", "cost saved", title=f"{title} (--wide: run ids)")
    for r in rows:
        t.add_row(*(esc(x) for x in (r if wide else r[:4])))
    t.columns[1].overflow = "fold"
    for c in t.columns[2:]:
        c.justify, c.no_wrap = "right", True
    return fit(t, wide)


def print_tables(got: dict, dataset: str, wide: bool, savings_rows) -> None:
    import click

    from replay.cli.common import FORMAT_META

    ctx = click.get_current_context(silent=True)
    if ctx is not None and ctx.meta.get(FORMAT_META, "table") != "table":
        wide = True  # --format plain|markdown|csv has no width to fit, and one figure per cell reads better there
    print_table(register_table(got["claims"], f"Claims register on {esc(dataset)} ({got['sessions']} sessions)",
                               wide, got["sessions"]))
    src = got["sources"]
    t = Table("source", "published claim", "its own metric on these logs",
              title=f"Sources in detail on {esc(dataset)} ({got['sessions']} sessions)")
    for name, x in src.items():
        t.add_row(esc(name), esc(x["claim"]), esc(x["summary"]))
    print_table(fit(t, wide))
    print_table(savings_table(savings_rows, wide))
    note = src["devboy"]["l1_l2"]
    out.print("\n".join(esc(line) for line in ([note] if wide else textwrap.wrap(note, WIDTH))))

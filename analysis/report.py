"""The policy report: a self-contained ``index.html`` (plots embedded, no external URL) and a
``report.md`` (plots as files under ``img/``) written from the runs in a DuckDB file.

Every number comes from ``analysis.compare.compare`` (the same rows `ctxreplay compare --json`
prints, with their bootstrap intervals), ``analysis.answer`` (the recommendation) or from
``replay.experiments.validate`` (the same report `ctxreplay validate --json` prints).

The report leads with the answer: the recommendation (or "no policy beats the baseline on
these logs") with units, intervals and the runner-up's differing setting, and one chart;
then each configuration's saving under both cache-model variants; then the baseline's
fidelity (calibrated and model only side by side); then the detail.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import re
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from . import advice
from . import intervals as iv
from . import plots, report_claims, tables
from . import report_md as sections
from . import sweep_best
from .answer import BOUNDS, answer
from .compare import compare


def _run_prices(rows: list[dict]):
    """The price table the first of ``rows`` was replayed with (the library's without runs)."""
    from replay.model.costs import PriceTable

    p = rows[0].get("prices") if rows else None
    if not p:
        return PriceTable()
    return PriceTable(p["price_date"], p.get("overrides") or {}, p.get("override_file"))


def _overrides_text(prices: dict) -> str:
    """', overrides for 2 models from prices.toml': the file's name only (runs stored before the
    name alone was kept hold its whole path, which says where the user keeps it)."""
    if not prices.get("overrides") and not prices.get("override_file"):
        return ""
    n = len(prices.get("overrides") or {})
    name = Path(prices["override_file"]).name if prices.get("override_file") else None
    return f", overrides for {n} model{'s' if n != 1 else ''}" + (f" from {name}" if name else "")


def _num(v, nd=0) -> str:
    return "-" if v is None or pd.isna(v) else f"{v:,.{nd}f}"


def build(db: Path, dataset: str, out_dir: Path, *, objective: str = "cost",
          max_risk: dict[str, float] | None = None, slice: dict | None = None,
          min_per_session: float | None = None, prices=None) -> dict[str, Any]:
    """Write the report into ``out_dir``: everything is written into a temporary folder inside
    it and moved into place once complete (``index.html`` last), so a failed or interrupted run
    leaves no partial report under the final names (and no new ``out_dir`` if it made one).

    ``prices`` (a PriceTable) prices the recorded usage of the fidelity check and the cache
    breaks; None: the prices the report's runs were replayed with. A model without a price
    raises PriceError."""
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".report-tmp-", dir=out_dir))
    try:
        res = _build(db, dataset, out_dir, stage, objective=objective, max_risk=max_risk, slice=slice,
                     min_per_session=min_per_session, prices=prices)
        finals = [p.relative_to(stage) for p in stage.rglob("*") if p.is_file()]
        for rel in sorted(finals, key=lambda r: (r.name == "index.html", r.name == "report.md", str(r))):
            (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(stage / rel, out_dir / rel)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()  # only if still empty
        raise
    shutil.rmtree(stage, ignore_errors=True)
    return res


def _whatif(con, dataset: str, slice: dict | None, prices=None, brk: dict | None = None) -> dict[str, Any] | None:
    """The cache what-ifs of the report's sessions (`replay.experiments.whatif`, model-only), or
    None when the dataset has no Claude session to replay (the levers section then names the
    breaks only)."""
    from replay import store
    from replay.engine import ReplayOptions
    from replay.experiments.runs import load
    from .whatif import whatif

    try:
        ds = load(con, dataset, slice)
    except store.StoreError:
        return None
    if not ds.sessions:
        return None
    wi = whatif(ds, ReplayOptions(prices=prices) if prices is not None else ReplayOptions())
    # each lever as the client setting that applies it (`ctxreplay advise`)
    wi["advice"] = advice.advise(con, dataset, ds, wi, brk, keys=[s.session_key for s in ds.sessions] if slice else None)
    return wi


def _build(db: Path, dataset: str, out_dir: Path, stage: Path, *, objective: str,
           max_risk: dict[str, float] | None, slice: dict | None = None,
           min_per_session: float | None = None, prices=None) -> dict[str, Any]:
    """The report of ``dataset``, written into ``stage`` (it is moved to ``out_dir`` afterwards),
    over the runs of ``slice`` (None: the runs of the whole dataset; a run's slice is its
    ``cache_config["slice"]``)."""
    from replay import __version__
    from replay import store
    from replay.model.costs import library_version
    from replay.engine import ReplayOptions
    from replay.experiments.runs import git_sha
    from replay.experiments.breaks import breaks_summary
    from replay.experiments.validate import plot_worst, validate

    img = stage / "img"
    con = store.connect(db, read_only=True)
    try:
        overview = tables.dataset_overview(con, dataset)
        ds_meta = con.execute("SELECT key_fingerprint, token_counter, description FROM datasets WHERE name = ?",
                              [dataset]).fetchone()
        every = compare(con, dataset)
        rows = [r for r in every if r["cache_config"].get("slice") == slice]
        df = tables.runs(con, dataset)
        if not df.empty:
            df = df[df["run_id"].isin({r["run_id"] for r in rows})].reset_index(drop=True)
        prices = prices or _run_prices(rows)
        fid = validate(con, dataset, ReplayOptions(prices=prices))
        tb = tables.tool_breakdown(con, dataset)
        # the recommendation is chosen on the earlier sessions and leads with its saving on the later ones
        ans = answer(con, rows, objective, max_risk, min_per_session=min_per_session, split="time")
        brk = breaks_summary(con, dataset, prices)
        wi = _whatif(con, dataset, slice, prices, brk)
        claims = report_claims.claims_md(con, dataset, rows)
        # each sweep's cheapest setting is picked on its earlier sessions and shown on the later ones
        held = {sid: sweep_best.sweep_pick(con, rows, sid) for sid in sorted({r["sweep_id"] for r in rows
                                                                              if r.get("sweep_id")})}
    finally:
        con.close()
    if not rows:
        raise ValueError(no_runs_text(dataset, slice, every, first_runs(db, dataset, slice)))
    m = tables.with_baseline(df)
    mc = tables.calibrated(m)
    figures: list[tuple[str, str, Path]] = []  # (section, caption, png)

    def add(section: str, caption: str, fig, name: str) -> None:
        paths = plots.save(fig, img, name)
        figures.append((section, caption, paths["png"]))

    bands = _fidelity_bands(rows)
    if ans.get("ranked"):
        add("answer", "The best configurations' saving against the no-op baseline with 95% intervals, calibrated and "
            "model only; the grey band is the baseline's own error against the recorded bill",
            plots.answer(ans["ranked"][:8], bands.get("calibrated"), bands.get("model_only"), ans["figure"]), "answer")
    plot_worst(fid, img / "fidelity.png")
    figures.append(("fidelity", "Simulated (no-op, calibrated) vs recorded cache reads per request, worst sessions by "
                    "cost error", img / "fidelity.png"))
    lb = tables.defaults_leaderboard(m)
    if not lb.empty and (lb["policy"] != "noop").any():
        ints = {r["run_id"]: (r.get("interval") or {}).get("cost") for r in rows}
        add("leaderboard", "Savings of each policy at its source's defaults (calibrated; policies that save and "
            "policies that cost more on separate scales)", plots.leaderboard(lb, ints), "leaderboard")
    front = tables.pareto_front(mc[~mc["policy"].isin(["noop", *BOUNDS])])
    pareto_fig = plots.pareto(mc, front)
    if pareto_fig is not None:
        add("pareto", "Every calibrated run: cost saved against risk; the line is the Pareto frontier", pareto_fig,
            "pareto")
    sweeps = [s for s in m["sweep_id"].dropna().unique()] if not m.empty else []
    for sid in sweeps:
        # a sweep over a cache what-if grid runs model-only only (replay.experiments.sweep): its own variant
        t = tables.sweep_table(tables.calibrated(m[m["sweep_id"] == sid]), sid)
        if t.empty:  # a sweep of baselines only (policy noop): nothing to draw against them
            continue
        var = tables.varying_columns(t)
        name = f"sweep-{sid}"
        title = f"Sweep {sid}: {t['policy'].iloc[0]}"
        if len(var) >= 2:
            add("sweeps", f"{title}: cost saved (%) by {var[0]} and {var[1]}",
                plots.sweep_heatmap(t, var[0], var[1], title=title), name)
        elif len(var) == 1:
            add("sweeps", f"{title}: savings by {var[0]}", plots.sweep_line(t, var[0], title=title), name)
    study = tables.cache_hit_study(tables.calibrated(df))
    if not study.empty:
        add("cache", "Saving under other cache prices (calibrated runs)", plots.cache_hit_study(study), "cache-prices")
    if wi and wi["scenarios"]:
        add("levers", "Cost under each cache what-if scenario (model-only, `ctxreplay whatif`) with the 95% interval "
            "of its saving; the dashed line is the recorded settings' model-only replay",
            plots.whatif_costs(wi["scenarios"], wi["baseline"]["cost"]), "levers")
    if sum(1 for b in brk["by_cause"] if b["count"]) >= 3:  # fewer causes: the table says it all
        add("breaks", "Cache breaks of the recorded logs: re-billed dollars by cause (hatched: inferred cause)",
            plots.breaks_by_cause(brk["by_cause"]), "breaks")
    if not tb.empty:
        add("tools", "Tool result tokens and byte-identical repeats per tool", plots.tool_breakdown(tb), "tools")

    # ---- markdown: the answer first, then both variants, fidelity, detail ------------------
    gen = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md: list[str] = [f"# ctxreplay policy report: {dataset}", "", *synthetic_banner(ds_meta[2])]
    md += sections.levers(brk, wi, ans)
    md += sections.recommendation(ans, bands, _img_md("answer", figures))
    md += sections.levers_chart(_img_md("levers", figures))
    md += advice.markdown((wi or {}).get("advice"))
    md += sections.both_variants(rows)
    md += sections.bounds(rows)
    md += sections.fidelity(fid, _img_md("fidelity", figures))
    md += ["## Dataset", "",
           "| sessions | streams | requests | blocks | compactions | agents | tool results | recorded input tokens |"
           " recorded output tokens |", "|---|---|---|---|---|---|---|---|---|",
           f"| {overview['sessions']} | {overview['streams']} | {overview['requests']} | {overview['blocks']} | "
           f"{overview['compactions']} | {overview['agents']} | {overview['tool_results']} | "
           f"{_num(overview['recorded_input_tokens'])} | {_num(overview['recorded_output'])} |", ""]
    md += sections.leaderboard(rows, _img_md("leaderboard", figures))
    md += sections.per_agent(rows)
    md += ["## Cost saved vs risk", "", _img_md("pareto", figures) if pareto_fig is not None
           else plots.pareto_sentence(mc), ""]
    if sweeps:
        md += ["## Sweeps", ""]
        for sid in sweeps:
            n = int(((m["sweep_id"] == sid) & (m["policy"] != "noop")).sum())
            nb = int(((m["sweep_id"] == sid) & (m["policy"] == "noop")).sum())
            only_mo = not (tables.calibrated(m[m["sweep_id"] == sid])["cache_dict"].map(tables.variant)
                           == "calibrated").any()
            shown = "model-only: a cache what-if grid" if only_mo else "calibrated"
            md.append(f"Sweep `{sid}`: {n} runs (the charts show the {shown} variant)." if n
                      else f"Sweep `{sid}`: {nb} no-op baseline(s) only, no policy runs to chart.")
            md += sweep_best.best_lines(rows, sid, held.get(sid))
        md += ["", _img_md("sweeps", figures), ""]
    if not study.empty:
        md += ["## Cost vs cache prices", "",
               "Cost is linear in the token categories each run stores, so every run is repriced exactly under other "
               "read/write prices (x the input price). Policies that rewrite history trade cache reads for writes: "
               "they pay only where reads are expensive relative to writes.", "", _img_md("cache", figures), ""]
    md += ["## Tool results by tool", "", "| tool | kind | results | tokens | byte-identical repeats | repeat tokens |",
           "|---|---|---|---|---|---|"]
    for r in tb.head(15).itertuples(index=False):
        md.append(f"| {r.tool} | {r.kind} | {int(r.results):,} | {_num(r.tokens)} | {int(r.repeats):,} | "
                  f"{_num(r.repeat_tokens)} |")
    md += ["", _img_md("tools", figures), ""]
    md += sections.breaks(brk, _img_md("breaks", figures))
    md += sections.risk(rows)
    md += claims
    run_prices = json.loads(df["prices"].iloc[0]) if not df.empty else {}
    md += ["## Reproducibility", "",
           f"- dataset `{dataset}`, key fingerprint `{ds_meta[0]}`, token counter {ds_meta[1]}",
           f"- ctxreplay {__version__}, git `{git_sha()}`, generated {gen}",
           f"- prices: {run_prices.get('library', library_version())} at {run_prices.get('price_date', '?')}"
           + _overrides_text(run_prices),
           f"- cache model of the baseline: `{json.dumps(fid['cache_config'])}`",
           f"- intervals: paired percentile bootstrap over sessions, {iv.N_RESAMPLES:,} resamples, seed {iv.SEED}, "
           "95% (`analysis/intervals.py`)",
           "- what each figure means (delivered tokens, saving, interval, within targets, ...): `docs/figures.md`",
           f"- runs: {len(rows)} ({', '.join(sorted({r['policy'] for r in rows}))}); regenerate with "
           f"`ctxreplay report --db {db} --dataset {dataset} --out {out_dir}`"
           + (" and the slice options below" if slice else ""), ""]
    if slice:
        md.insert(-1, f"- dataset slice: `{json.dumps(slice, sort_keys=True)}` (the runs cover only the sessions of "
                  "this slice; the dataset overview, fidelity check and tool breakdown cover the whole dataset)")
    (stage / "report.md").write_text("\n".join(md))
    (stage / "index.html").write_text(_html(md, figures, stage, dataset))
    rec = tables.compact(ans)
    return {"out": str(out_dir), "runs": len(rows), "figures": len(figures), "recommendation": rec, "answer": ans}


def no_runs_text(dataset: str, slice: dict | None, every: list[dict], commands: str) -> str:
    """Why there is nothing to report (no finished run of the dataset and slice), and what to run;
    ``every``: the dataset's runs of any slice (compare rows, or anything with ``cache_config``)."""
    where = f" in the slice {json.dumps(slice, sort_keys=True)}" if slice else " over the whole dataset"
    if every:
        others = sorted({json.dumps(r["cache_config"].get("slice"), sort_keys=True) for r in every})
        return (f"no finished runs for dataset {dataset!r}{where}; its runs are of other slices "
                f"({', '.join(others[:3])}): give the same slice options as their `replay`, or store runs of this "
                f"one: {commands}")
    return (f"no finished runs for dataset {dataset!r}{where}: a report compares policy runs with their no-op "
            f"baseline; store them first: {commands}; then write the report again")


EXAMPLE_POLICY = "devboy_lru"  # lossless and without risk: the example a "no runs" message names
EXAMPLE_SWEEP = Path(__file__).resolve().parents[1] / "examples" / "devboy_capacity.toml"


def first_runs(db: Path | None, dataset: str | None, slice: dict | None, baseline: bool = True) -> str:
    """The commands that store what a report compares: the no-op baseline (``baseline``) and one
    policy's run, or a sweep (its grid and their no-op baselines). ``db``/``dataset`` None: the
    commands' defaults (not repeated)."""
    import shlex

    from replay.experiments.slices import slice_text
    from replay.policies import REGISTRY

    opts = (f" --db {shlex.quote(str(db))}" if db else "") + (f" --dataset {shlex.quote(dataset)}" if dataset else "")
    tail = f" {slice_text(slice)}" if slice else ""
    policy = EXAMPLE_POLICY if EXAMPLE_POLICY in REGISTRY else next(p for p in REGISTRY if p != "noop")
    spec = "SPEC"
    if EXAMPLE_SWEEP.is_file():
        spec = str(EXAMPLE_SWEEP)
        with contextlib.suppress(ValueError):
            spec = str(EXAMPLE_SWEEP.relative_to(Path.cwd()))
    run = f"`ctxreplay replay{opts} --policy {policy}{tail}` (one policy; `ctxreplay policies` lists them)"
    if baseline:
        run = f"`ctxreplay replay{opts}{tail}` (the no-op baseline) and {run}"
    return f"{run}, or `ctxreplay sweep {shlex.quote(spec)}{opts}{tail}` (a grid of settings with their baselines)"


SYNTHETIC_NOTICE = "Synthetic data: these savings illustrate the pipeline, not what real logs save."


def synthetic_banner(description: str | None) -> list[str]:
    """One short line, under the title, for a dataset its ``datasets.description`` marks
    ``{"synthetic": true}`` (`ctxreplay demo` marks the embedded sample so)."""
    try:
        meta = json.loads(description) if description else None
    except ValueError:
        meta = None
    return [f"**{SYNTHETIC_NOTICE}**", ""] if isinstance(meta, dict) and meta.get("synthetic") is True else []


def _fidelity_bands(rows: list[dict]) -> dict[str, float | None]:
    """|cost error| of the latest calibrated and model-only baselines (log TTL where there is one)."""
    out: dict[str, float | None] = {}
    for r in sorted(rows, key=lambda r: r["cache_config"].get("ttl") == "log"):
        if r["policy"] == "noop" and r["baseline_run"] == r["run_id"] and r.get("baseline_fidelity"):
            e = r["baseline_fidelity"].get("cost_rel_error")
            out[r["variant"]] = None if e is None else abs(e)
    return out


def _img_md(section: str, figures) -> str:
    return "\n\n".join(f"![{cap}](img/{png.name})" for sec, cap, png in figures if sec == section)


IMAGE_LINE = re.compile(r"^!\[(?P<cap>[^\]]*)\]\((?P<rel>img/[^)\s]+)\)$")
CSS = ("body{font-family:system-ui,sans-serif;max-width:1140px;margin:1em auto 2em;padding:0 1em;color:#222}"
       # a compact title and banner (a synthetic dataset's notice): the answer and its chart stay on the first screen
       "h1{font-size:1.5em;margin:.2em 0}h1+p{margin:.2em 0 .5em;font-size:14px}"
       # tables shrink to the page: small type, text wraps between words only (never inside a word or
       # a number: a figure column, right-aligned in the Markdown, never wraps); the wrapper scrolls a
       # table that still cannot fit (many agents side by side) instead of widening the whole page
       "div.table{max-width:100%;overflow-x:auto;margin:1em 0}"
       "table{border-collapse:collapse;font-size:10.5px}td,th{border:1px solid #ccc;padding:2px 4px;"
       "text-align:right;overflow-wrap:normal;word-break:normal;hyphens:manual}"
       "th{background:#f2f2f2;text-align:center}td[style*=right]{white-space:nowrap}"
       "td:nth-child(-n+3){text-align:left}img{max-width:100%;height:auto}"
       "figure{margin:1em 0}figcaption{font-size:12px;color:#555}code{background:#f4f4f4;padding:0 3px}")


def _html(md: list[str], figures, out_dir: Path, dataset: str) -> str:
    """The report's Markdown rendered as one self-contained HTML page: CommonMark with tables
    (markdown-it-py, which rich already requires; raw HTML in the text is escaped), each image
    line embedded as a figure with its caption."""
    from markdown_it import MarkdownIt

    render = MarkdownIt("commonmark", {"html": False}).enable("table").render
    body: list[str] = []
    chunk: list[str] = []

    def flush() -> None:
        if chunk:
            body.append(render("\n".join(chunk)))
            chunk.clear()

    for line in "\n".join(md).split("\n"):
        m = IMAGE_LINE.match(line.strip())
        if not m:
            chunk.append(line)
            continue
        flush()
        cap = html.escape(m["cap"])
        data = base64.b64encode((out_dir / m["rel"]).read_bytes()).decode()
        body.append(f'<figure><img alt="{cap}" src="data:image/png;base64,{data}">'
                    f"<figcaption>{cap}</figcaption></figure>")
    flush()
    page = "\n".join(body).replace("<table>", '<div class="table"><table>').replace("</table>", "</table></div>")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ctxreplay report: "
            f"{html.escape(dataset)}</title><style>{CSS}</style></head><body>{page}</body></html>")

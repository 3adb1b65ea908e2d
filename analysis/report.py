"""The policy report: a self-contained ``index.html`` (plots embedded, no external URL) and a
``report.md`` (plots as files under ``img/``) written from the runs in a DuckDB file.

Every number comes from ``analysis.compare.compare`` (the same rows `ctxreplay compare --json`
prints) or from ``replay.experiments.validate`` (the same report `ctxreplay validate --json` prints).
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import os
import shutil
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from . import plots, tables
from .compare import compare


def _pct(v) -> str:
    return "-" if v is None or pd.isna(v) else f"{100 * v:+.2f}%"


def _num(v, nd=0) -> str:
    return "-" if v is None or pd.isna(v) else f"{v:,.{nd}f}"


def build(db: Path, dataset: str, out_dir: Path, *, objective: str = "cost",
          max_risk: dict[str, float] | None = None) -> dict[str, Any]:
    """Write the report into ``out_dir``: everything is written into a temporary folder inside
    it and moved into place once complete (``index.html`` last), so a failed or interrupted run
    leaves no partial report under the final names (and no new ``out_dir`` if it made one)."""
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".report-tmp-", dir=out_dir))
    try:
        res = _build(db, dataset, out_dir, stage, objective=objective, max_risk=max_risk)
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


def _build(db: Path, dataset: str, out_dir: Path, stage: Path, *, objective: str,
           max_risk: dict[str, float] | None) -> dict[str, Any]:
    """The report of ``dataset``, written into ``stage`` (it is moved to ``out_dir`` afterwards)."""
    from replay import __version__
    from replay import store
    from replay.model.costs import library_version
    from replay.engine import ReplayOptions
    from replay.experiments.runs import git_sha
    from replay.experiments.validate import plot_worst, validate

    max_risk = {"stale_refs": 0, "dangling_refs": 0} if max_risk is None else max_risk
    img = stage / "img"
    con = store.connect(db, read_only=True)
    try:
        overview = tables.dataset_overview(con, dataset)
        ds_meta = con.execute("SELECT key_fingerprint, token_counter FROM datasets WHERE name = ?",
                              [dataset]).fetchone()
        rows = compare(con, dataset)
        df = tables.runs(con, dataset)
        fid = validate(con, dataset, ReplayOptions())
        tb = tables.tool_breakdown(con, dataset)
    finally:
        con.close()
    if not rows:
        raise ValueError(f"no finished runs for dataset {dataset!r}; run `ctxreplay replay` first")
    m = tables.with_baseline(df)
    figures: list[tuple[str, str, Path]] = []  # (section, caption, png)

    def add(section: str, caption: str, fig, name: str) -> None:
        paths = plots.save(fig, img, name)
        figures.append((section, caption, paths["png"]))

    plot_worst(fid, img / "fidelity.png")
    figures.append(("fidelity", "Simulated (no-op) vs recorded cache reads per request, worst sessions by cost "
                    "error", img / "fidelity.png"))
    lb = tables.defaults_leaderboard(m)
    if not lb.empty and (lb["policy"] != "noop").any():
        add("leaderboard", "Savings of each policy at its source's defaults", plots.leaderboard(lb), "leaderboard")
    front = tables.pareto_front(m[m["policy"] != "noop"])
    add("pareto", "Every run: cost saved against risk; the line is the Pareto frontier", plots.pareto(m, front),
        "pareto")
    sweeps = [s for s in m["sweep_id"].dropna().unique()]
    for sid in sweeps:
        t = tables.sweep_table(m, sid)
        var = tables.varying_columns(t)
        name = f"sweep-{sid}"
        title = f"Sweep {sid}: {t['policy'].iloc[0]}"
        if len(var) >= 2:
            add("sweeps", f"{title}: cost saved (%) by {var[0]} and {var[1]}",
                plots.sweep_heatmap(t, var[0], var[1], title=title), name)
        elif len(var) == 1:
            add("sweeps", f"{title}: savings by {var[0]}", plots.sweep_line(t, var[0], title=title), name)
    study = tables.cache_hit_study(df)
    if not study.empty:
        add("cache", "Saving under other cache prices", plots.cache_hit_study(study), "cache-prices")
    if not tb.empty:
        add("tools", "Tool result tokens and byte-identical repeats per tool", plots.tool_breakdown(tb), "tools")
    rec = tables.recommend(df, objective, max_risk)

    # ---- markdown ------------------------------------------------------------------------
    o = fid["overall"]
    e = o["rel_error"]
    gen = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md: list[str] = [f"# ctxreplay policy report: {dataset}", ""]
    md += ["## Dataset", "",
           "| sessions | streams | requests | blocks | compactions | agents | tool results | recorded input tokens |"
           " recorded output tokens |", "|---|---|---|---|---|---|---|---|---|",
           f"| {overview['sessions']} | {overview['streams']} | {overview['requests']} | {overview['blocks']} | "
           f"{overview['compactions']} | {overview['agents']} | {overview['tool_results']} | "
           f"{_num(overview['recorded_input_tokens'])} | {_num(overview['recorded_output'])} |", ""]
    md += ["## Baseline fidelity", "",
           "The no-op replay against the usage the logs recorded (`ctxreplay validate`); every saving below is "
           "measured against this baseline.", "",
           "| figure | recorded | simulated | error |", "|---|---|---|---|"]
    for f in ("input_total", "cache_read", "cache_write", "cost"):
        nd = 2 if f == "cost" else 0
        md.append(f"| {f} | {_num(o['recorded'][f], nd)} | {_num(o['simulated'][f], nd)} | {_pct(e[f])} |")
    md += ["", f"{o['sessions_within_targets']} of {o['sessions']} sessions within the targets (input 1%, reads 1%, "
           f"writes 5%, cost 2%); {o['sessions_without_usage']} session(s) without recorded input usage.", "",
           _img_md("fidelity", figures), ""]
    md += ["## Leaderboard", "",
           "Every finished run, with deltas against its no-op baseline (same dataset, cache and price settings). "
           "Hit rate = reads / (reads + writes + uncached).", "",
           "| run | policy | parameters | cost $ | cost saved | context tokens | context saved | tokens delivered |"
           " hit rate | busts | rewritten tokens | hints | dangling | stale | trimmed, re-read |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: r["figures"]["cost"]):
        f = r["figures"]
        s = r.get("saved_pct") or {}
        md.append(
            f"| {r['run_id']} | {r['policy']} | {_params(tables.non_default(r['policy'], r['params']))} | {_num(f['cost'], 2)} | {_pct(s.get('cost'))} | "
            f"{_num(f['context_tokens'])} | {_pct(s.get('context_tokens'))} | {_num(f['tokens_delivered'])} | "
            f"{_pct(f['hit_rate']).lstrip('+')} | {_num(f['busts'])} | {_num(f['bust_tokens'])} | {_num(f['hints'])} | "
            f"{_num(f['dangling_refs'])} | {_num(f['stale_refs'])} | {_num(f['trimmed_reread'])} |")
    md += ["", _img_md("leaderboard", figures), ""]
    agents = sorted({a for r in rows for a in r.get("by_agent", {})})
    if agents:
        md += ["## Per agent", "", "Cost saved vs the baseline, per agent that wrote the logs (runs outside sweeps).",
               "", "| run | policy | " + " | ".join(f"{a} cost $ | {a} saved" for a in agents) + " |",
               "|---|---|" + "---|---|" * len(agents)]
        for r in sorted((r for r in rows if not r["sweep_id"]), key=lambda r: r["policy"]):
            cells = []
            for a in agents:
                fa = r["by_agent"].get(a)
                cells += [_num(fa["cost"], 2) if fa else "-", _pct(fa.get("cost_saved_pct")) if fa else "-"]
            md.append(f"| {r['run_id']} | {r['policy']} | " + " | ".join(cells) + " |")
        md.append("")
    md += ["## Cost saved vs risk", "", _img_md("pareto", figures), ""]
    if sweeps:
        md += ["## Sweeps", ""]
        for sid in sweeps:
            n = int((m["sweep_id"] == sid).sum())
            md.append(f"Sweep `{sid}`: {n} configurations.")
        md += ["", _img_md("sweeps", figures), ""]
    if not study.empty:
        md += ["## Cost vs cache prices", "",
               "Cost is linear in the token categories each run stores, so every run is repriced exactly under other "
               "read/write prices (x the input price). Policies that rewrite history trade cache reads for writes: "
               "they pay only where reads are expensive relative to writes.", "", _img_md("cache", figures), ""]
    md += ["## Tool results by tool", "", "| tool | kind | results | tokens | byte-identical repeats | repeat tokens |",
           "|---|---|---|---|---|---|"]
    for r in tb.head(15).itertuples(index=False):
        md.append(f"| {r.tool} | {r.kind} | {r.results} | {_num(r.tokens)} | {r.repeats} | {_num(r.repeat_tokens)} |")
    md += ["", _img_md("tools", figures), ""]
    md += ["## Risk", "", "| run | policy | busts | rewritten tokens | dangling refs | stale refs | trimmed, re-read |"
           " mean hint distance (turns) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = r["figures"]
        if r["policy"] == "noop":
            continue
        md.append(f"| {r['run_id']} | {r['policy']} | {_num(f['busts'])} | {_num(f['bust_tokens'])} | "
                  f"{_num(f['dangling_refs'])} | {_num(f['stale_refs'])} | {_num(f['trimmed_reread'])} | "
                  f"{_num(f['mean_hint_distance'], 1)} |")
    md += ["", "## Recommendation", "",
           f"Objective: minimize **{rec.get('figure', objective)}**; risk limit: "
           + ", ".join(f"{k} <= {v:g}" for k, v in max_risk.items()) + "."]
    if rec["best"]:
        b = rec["best"]
        fig = rec["figure"]
        md += ["", f"Recommended: **{b['label']}** (run `{b['run_id']}`, TTL {b['ttl']}), "
               f"{fig} {_num(b[fig], 2)}."]
        if "margin_over_runner_up" in rec:
            md.append(f"Margin over the runner-up ({rec['runner_up']['label']}, run `{rec['runner_up']['run_id']}`): "
                      f"{_num(rec['margin_over_runner_up'], 2)}.")
        if "margin_over_baseline" in rec:
            md.append(f"Margin over the no-op baseline: {_num(rec['margin_over_baseline'], 2)}.")
        if "margin_over_source_default" in rec:
            md.append(f"Margin over the best policy at its source's defaults ({rec['best_source_default']['label']}): "
                      f"{_num(rec['margin_over_source_default'], 2)}.")
    else:
        md += ["", "No run meets the risk limit."]
    prices = json.loads(df["prices"].iloc[0]) if not df.empty else {}
    md += ["", "## Reproducibility", "",
           f"- dataset `{dataset}`, key fingerprint `{ds_meta[0]}`, token counter {ds_meta[1]}",
           f"- ctxreplay {__version__}, git `{git_sha()}`, generated {gen}",
           f"- prices: {prices.get('library', library_version())} at {prices.get('price_date', '?')}"
           + (f", overrides from {prices['override_file']}" if prices.get("override_file") else ""),
           f"- cache model of the baseline: `{json.dumps(fid['cache_config'])}`",
           f"- runs: {len(rows)} ({', '.join(sorted({r['policy'] for r in rows}))}); regenerate with "
           f"`ctxreplay report --db {db.name} --dataset {dataset} --out {out_dir}`", ""]
    (stage / "report.md").write_text("\n".join(md))
    (stage / "index.html").write_text(_html(md, figures, stage, dataset))
    return {"out": str(out_dir), "runs": len(rows), "figures": len(figures), "recommendation": rec}


def _params(p: dict) -> str:
    return "defaults" if not p else ", ".join(f"{k}={v}" for k, v in p.items())[:60].replace("|", "/")


def _img_md(section: str, figures) -> str:
    return "\n\n".join(f"![{cap}](img/{png.name})" for sec, cap, png in figures if sec == section)


def _html(md: list[str], figures, out_dir: Path, dataset: str) -> str:
    """Markdown subset (headings, tables, paragraphs, images) to one self-contained HTML page."""
    body: list[str] = []
    table: list[list[str]] = []

    def inline(s: str) -> str:
        s = html.escape(s)
        out, bold, code = "", False, False
        i = 0
        while i < len(s):
            if s.startswith("**", i):
                out += "</b>" if bold else "<b>"
                bold = not bold
                i += 2
            elif s[i] == "`":
                out += "</code>" if code else "<code>"
                code = not code
                i += 1
            else:
                out += s[i]
                i += 1
        return out

    def flush_table():
        if not table:
            return
        head, rows = table[0], table[2:]
        body.append("<table><thead><tr>" + "".join(f"<th>{inline(c)}</th>" for c in head) + "</tr></thead><tbody>"
                    + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in rows)
                    + "</tbody></table>")
        table.clear()

    for line in md:
        if line.startswith("|"):
            table.append([c.strip() for c in line.strip("|").split("|")])
            continue
        flush_table()
        if line.startswith("# "):
            body.append(f"<h1>{inline(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{inline(line[3:])}</h2>")
        elif line.startswith("!["):
            for part in line.split("\n\n"):
                cap = part[2:part.index("](")]
                rel = part[part.index("](") + 2:-1]
                data = base64.b64encode((out_dir / rel).read_bytes()).decode()
                body.append(f'<figure><img alt="{html.escape(cap)}" src="data:image/png;base64,{data}">'
                            f"<figcaption>{html.escape(cap)}</figcaption></figure>")
        elif line.startswith("- "):
            body.append(f"<li>{inline(line[2:])}</li>")
        elif line.strip():
            body.append(f"<p>{inline(line)}</p>")
    flush_table()
    css = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
           "table{border-collapse:collapse;font-size:12px;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 6px;"
           "text-align:right}th{background:#f2f2f2}td:nth-child(-n+3){text-align:left}img{max-width:100%}"
           "figure{margin:1em 0}figcaption{font-size:12px;color:#555}code{background:#f4f4f4;padding:0 3px}")
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ctxreplay report: "
            f"{html.escape(dataset)}</title><style>{css}</style></head><body>" + "\n".join(body) + "</body></html>")

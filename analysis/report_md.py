"""The report's Markdown sections, from compare rows, the answer and the fidelity report.

Each function returns a list of lines; ``analysis.report`` orders them: the answer first,
then both cache-model variants side by side, the baseline's fidelity, then detail.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from . import advice
from . import intervals as iv
from .answer import (BOUNDS, bound_runs, bound_share, calibrated_whatif, interval_text, money, name, pct,
                     per_session_text, settings, ttl_text)
from .fidelity import NAMES, variant_fidelity

VARIANT_NAME = {"calibrated": "calibrated", "model_only": "model only"}


def num(v, nd=0) -> str:
    return "-" if v is None or pd.isna(v) else f"{v:z,.{nd}f}"


def count(v) -> str:
    return "-" if v is None or pd.isna(v) else f"{int(round(v)):,}"


def cell(v) -> str:
    return str(v).replace("|", "/")


def sep(cols: str) -> str:
    """A table's delimiter row: ``l`` a text column, ``r`` a figure or an identifier (right-aligned;
    the HTML page never wraps it, so `-$37.35` or a run id stays on one line: ``analysis.report.CSS``),
    ``c`` an interval (`+0.66% to +1.58%`: it may wrap between its two numbers, never inside one)."""
    return "|" + "|".join({"l": ":---", "r": "---:", "c": ":---:"}[c] for c in cols) + "|"


def settings_text(policy: str, params: dict) -> str:
    st = settings(policy, params)
    return cell(", ".join(f"{k}={v}" for k, v in st.items())[:60]) if st else "defaults"


def recommendation(ans: dict, fid_bands: dict[str, float | None], img: str) -> list[str]:
    """The answer: one sentence, the rules it applied (risk filter, too small to act on), the
    runs the risk filter dropped, the runner-up and margins, the chart."""
    fig = ans.get("figure", "cost")
    md = ["## Recommendation", ""]
    head = ans["headline"]
    if ans.get("best"):
        b = ans["best"]
        head = head.replace(f"Recommended: {b['name']}.", f"Recommended: **{b['name']}**.", 1)
    for plain in ("No policy beats the baseline on these logs", "No policy saves enough to act on"):
        if ans.get("candidates") and head.startswith(plain):
            head = head.replace(plain, f"**{plain}**", 1)
    md += [head, ""]
    if ans.get("bounds"):
        md += ["Offline-optimal bounds (what a policy that knew the whole log could save; same cache settings, "
               f"{VARIANT_NAME.get(ans.get('variant'), ans.get('variant'))}): "
               + "; ".join(f"{b['kind']} (`{k}`) {pct(b['saved_pct'])} ({money(b['saved'], fig)})"
                           for k, b in ans["bounds"].items())
               + ". Each policy's saving as a share of its bound: section *Offline-optimal bounds*.", ""]
    cal_band, mo_band = fid_bands.get("calibrated"), fid_bands.get("model_only")
    floor = ans.get("min_saving_per_session")
    md += [f"Objective: minimize **{fig}**; risk limit: {ans.get('risk_rule', '-')}. Savings are percent of the no-op "
           "baseline's " + ("cost and dollars" if fig == "cost" else "context tokens and tokens")
           + " (same dataset, slice, cache and price settings); intervals are 95% paired bootstrap intervals over "
           f"sessions ({iv.N_RESAMPLES:,} resamples). A saving is **not distinguishable** when its interval contains 0 or "
           "it is smaller than the baseline's own error against the recorded bill"
           + (" (" + ", ".join(f"{_abs_pct(b)} of cost {n}" for b, n in ((cal_band, "calibrated"), (mo_band, "model only"))
                                 if b is not None) + ")" if cal_band is not None or mo_band is not None else "")
           + "; it is **too small to act on** when it is not distinguishable or less than "
           + (f"{per_session_text(floor, fig)} per session replayed" if floor is not None else "the floor")
           + ". Runs with any risk counter above its limit are dropped, whatever they save.", ""]
    md += dropped_runs(ans.get("dropped") or [])
    lead = ans.get("best") or ans.get("closest")
    if lead and "runner_up" in ans:
        ru, m = ans["runner_up"], ans["margin_over_runner_up"]
        md.append(f"Runner-up: {ru['name']} (differs in {'; '.join(ans['runner_up_differs'])}): "
                  f"{pct(ru['saved_pct'])} ({money(ru['saved'], fig)}). Margin (difference of the two savings): "
                  f"{money(m['value'], fig)} ({_pts(m['pct'])} of the baseline, 95% interval "
                  f"{interval_text(m['interval'])}" + ("" if m["distinguishable"] else ", not distinguishable") + ").")
    if lead and "margin_over_source_default" in ans:
        d, m = ans["best_source_default"], ans["margin_over_source_default"]
        md.append(f"Margin over the best policy at its source's defaults ({d['name']}, {pct(d['saved_pct'])}): "
                  f"{money(m['value'], fig)} ({_pts(m['pct'])} of the baseline, 95% interval "
                  f"{interval_text(m['interval'])}" + ("" if m["distinguishable"] else ", not distinguishable") + ").")
    md += ["", img, ""]
    if ans.get("ranked"):
        has_bound = any(r.get("bound") for r in ans["ranked"])
        md += ["| configuration | TTL | calibrated: saved | 95% interval | saved | model only: saved | 95% interval |"
               " distinguishable (calibrated) |" + (" share of bound |" if has_bound else ""),
               sep("llrcrrcr" + ("r" if has_bound else ""))]
        for r in ans["ranked"]:
            mo = r.get("model_only") or {}
            st = settings_text(r["policy"], r["params"])
            md.append(f"| {r['policy']} ({st}) | {r['ttl']} | {pct(r['saved_pct'])} | {interval_text(r['interval'])} | "
                      f"{money(r['saved'], fig)} | {pct(mo.get('saved_pct'))} | {interval_text(mo.get('interval'))} | "
                      f"{'yes' if r['distinguishable'] else 'no'} |" + (f" {_share(r.get('bound'))} |" if has_bound else ""))
        md.append("")
    return md


def dropped_runs(dropped: list[dict], top: int = 8) -> list[str]:
    """The configurations the risk filter dropped, each with the counters over their limit."""
    if not dropped:
        return []
    md = [f"Dropped by the risk filter ({len(dropped)} configuration(s); saving before the filter):", ""]
    for d in dropped[:top]:
        md.append(f"- {d['name']} ({pct(d['saved_pct'])}): " + ", ".join(
            f"{o['counter']} {o['value']:,.0f} > {o['limit']:g}" for o in d["over"]))
    if len(dropped) > top:
        md.append(f"- and {len(dropped) - top} more (the leaderboard and risk tables list every run)")
    first = dropped[0]["over"][0]  # the best saving the filter removed: the limit a reader most likely questions
    return md + ["", "A counter's limit is raised with `--max-risk COUNTER=VALUE`; "
                 f"`--max-risk {first['counter']}={first['value']:g}` would keep {dropped[0]['name']}"
                 + ("" if len(dropped[0]["over"]) == 1 else " if its other counters were within their limits") + ".", ""]


def _share_pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:z.0f}%"


def _share(b: dict | None) -> str:
    if not b or b.get("share") is None:
        return "-"
    return f"{100 * b['share']:z.0f}% of {b['bound']}"


def bounds(rows: list[dict]) -> list[str]:
    """Each configuration's cost saving as a share of the offline-optimal bound of its kind
    (same dataset, cache and price settings); empty without bound runs."""
    found = bound_runs(rows)
    if not found:
        return []
    md = ["## Offline-optimal bounds", "",
          "What a policy that knew the whole log in advance could save (`ctxreplay bound`; docs/bound.md), priced by "
          "the same engine and cache model. **Insert-time** (`bound_insert`), the bound of every insert-time lossless "
          "policy: every byte-identical repeat of a block still in context, and every file read whose lines an earlier "
          "read of the same file still in context covers with no write in between, is removed as it arrives; no "
          "busts. **Lossless** (`bound_retro`), the bound of every lossless policy, retroactive ones too: in addition, "
          "every read that a later read of the same file covers is removed as it arrives (a relaxation no policy can "
          "reach). Insert-time policies are measured against the insert-time bound, policies that rewrite history "
          "against the lossless one. Lossy policies "
          "(compaction, clearing old tool results) remove what the lossless bound keeps, so they can exceed 100%.", "",
          "| bound | TTL | variant | cost saved | $ saved | context saved | run |", sep("lllrrrr")]
    for key in found:
        for bname, b in sorted(found[key].items()):
            s = b.get("saved_pct") or {}
            md.append(f"| {bname} ({BOUNDS[bname]}) | {b['cache_config'].get('ttl')} | "
                      f"{VARIANT_NAME.get(b['variant'], b['variant'])} | {pct(s.get('cost'))} | "
                      f"{money(-(b.get('delta') or {}).get('cost', 0.0), 'cost')} | {pct(s.get('context_tokens'))} | "
                      f"{b['run_id']} |")
    md += ["", "| policy | settings | TTL | variant | cost saved | bound | bound's cost saved | share of bound |",
           sep("llllrlrr")]
    from .compare import configuration_key

    latest = {configuration_key(r): r for r in rows if not r.get("sweep_id")}
    lines = []
    for r in latest.values():
        b = bound_share(r, found)
        if b is None:
            continue
        lines.append(((r["policy"], r["variant"], -(b["share"] if b["share"] is not None else -1e18)),
                      f"| {r['policy']} | {settings_text(r['policy'], r['params'])} | {r['cache_config'].get('ttl')} | "
                      f"{VARIANT_NAME.get(r['variant'], r['variant'])} | {pct((r.get('saved_pct') or {}).get('cost'))} | "
                      f"{b['bound']} | {pct(b['saved_pct'])} | "
                      f"{_bound_share_text(b, (r.get('saved_pct') or {}).get('cost', 0))} |"))
    md += [line for _, line in sorted(lines)]
    return md + ["", "Runs outside sweeps, the latest of each configuration; share = the policy's dollars saved / "
                 "the bound's (both against the same no-op baseline); \"costs more\": the policy costs more than the "
                 "baseline.", ""]


def breaks(s: dict[str, Any], img: str) -> list[str]:
    """Cache breaks of the recorded logs (`replay.experiments.breaks`): re-billed tokens and dollars by cause."""
    md = ["## Cache breaks", "",
          "Requests of the recorded logs whose cache read is shorter than the prefix the stream had cached "
          "(`ctxreplay breaks`; rules in docs/replay-model.md, \"Cache breaks\"): the tokens paid again as cache writes "
          "or uncached input, and their dollars above what a cache read of them would have cost. "
          f"{s['breaks']:,} breaks in {s['sessions_with_breaks']:,} sessions ({s['requests']:,} requests classified"
          + (f", {s['not_classified']:,} not: automatic caching (OpenAI, Gemini) promises no hit" if s.get("not_classified")
             else "") + f"): {count(s['tokens'])} tokens re-billed, {money(s['cost'], 'cost')}.", ""]
    if not s["breaks"]:
        return md
    inferred = [b["cause"] for b in s["by_cause"] if b["evidence"] == "inferred"]
    md += [f"Causes marked *(inferred)* ({', '.join(inferred)}) are not seen in the log: it shows where the read "
           "stopped, within the TTL, not why; the cause is the presumed reason. Share of re-billed tokens with a named "
           f"cause: {_pts(s['named_share'])}; without first_message_rewritten: "
           f"{_pts(s['named_share_without_first_message'])}; direct evidence only: {_pts(s['named_share_direct'])}.", "",
           "| cause | evidence | breaks | tokens re-billed | $ re-billed | share of tokens | rule |",
           sep("llrrrrl")]
    for b in s["by_cause"]:
        if b["count"]:
            md.append(f"| {b['label']} | {b['evidence']} | {b['count']:,} | {count(b['tokens'])} | "
                      f"{money(b['cost'], 'cost')} | {_pts(b['share'])} | {cell(b['rule'])} |")
    md += ["", img, "", "Sessions with the most re-billed dollars:", "",
           "| session | agent | breaks | tokens re-billed | $ re-billed | main cause |", sep("llrrrl")]
    labels = {b["cause"]: b["label"] for b in s["by_cause"]}
    for t in s["top_sessions"]:
        md.append(f"| `{t['session']}` | {t.get('agent') or '-'} | {t['breaks']:,} | {count(t['tokens'])} | "
                  f"{money(t['cost'], 'cost')} | {labels.get(t['main_cause'], t['main_cause'])} |")
    return md + [""]


def _abs_pct(v: float | None) -> str:
    return "-" if v is None else f"±{100 * abs(v):.2f}%"


def _pts(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:z.2f}%"


def both_variants(rows: list[dict]) -> list[str]:
    """Each configuration that has runs under both variants: its saving under each."""
    seen, lines = set(), []
    def order(r):
        cal = (((r.get("variants") or {}).get("calibrated") or {}).get("saved_pct") or {}).get("cost")
        return r["policy"], str(r["cache_config"].get("ttl")), -(cal if cal is not None else -1e18)

    for r in sorted(rows, key=order):
        v = r.get("variants") or {}
        if r["policy"] == "noop" or "calibrated" not in v or "model_only" not in v:
            continue
        key = (v["calibrated"]["run_id"], v["model_only"]["run_id"])
        if key in seen:
            continue
        seen.add(key)
        c, m = v["calibrated"], v["model_only"]
        gap = (r.get("calibrated_minus_model_only") or {}).get("cost")
        lines.append(f"| {r['policy']} | {settings_text(r['policy'], r['params'])} | {r['cache_config'].get('ttl')} | "
                     + " | ".join(f"{pct((x['saved_pct'] or {}).get('cost'))} | "
                                  f"{interval_text((x['interval'] or {}).get('cost'))} | "
                                  f"{money(x['saved_usd'], 'cost')}"
                                  + ("" if (x["distinguishable"] or {}).get("cost") else " (n.d.)") for x in (c, m))
                     + f" | {'-' if gap is None else f'{100 * gap:+z.2f}'} |")
    if not lines:
        return []
    return ["## Savings under both cache-model variants", "",
            "Each configuration replayed with the calibrated cache model (cache misses the log records are replayed) "
            "and with the model alone; each against the no-op baseline of its own variant. The last column is how "
            "many points of the cost saving rest on the calibration. n.d. = not distinguishable.", "",
            "| policy | settings | TTL | calibrated: cost saved | 95% interval | $ saved | model only: cost saved | "
            "95% interval | $ saved | calibrated - model only (points) |",
            sep("lllrcrrcrr"), *lines, ""]


def fidelity(fid: dict[str, Any], img: str) -> list[str]:
    """The baseline against the recorded usage, calibrated and model only side by side."""
    vf = variant_fidelity(fid)
    names = [n for n in ("calibrated", "model_only") if n in vf]
    o = fid["overall"]
    md = ["## Baseline fidelity", "",
          "The no-op replay against the usage the logs recorded (`ctxreplay validate`); every saving is measured against "
          "this baseline. Calibrated: the cache misses the log records are replayed (the default); model only: what the "
          "TTL/breakpoint model predicts on its own.", "",
          "| figure | recorded | " + " | ".join(f"{NAMES[n]}: simulated | {NAMES[n]}: error" for n in names) + " |",
          sep("lr" + "rr" * len(names))]
    for f in ("input_total", "cache_read", "cache_write", "cost"):
        nd = 2 if f == "cost" else 0
        md.append(f"| {f} | {num(o['recorded'][f], nd)} | " + " | ".join(
            f"{num(vf[n]['simulated'][f], nd)} | {pct(vf[n]['rel_error'][f])}" for n in names) + " |")
    md.append("| sessions within targets | | " + " | ".join(
        f" | {'?' if vf[n]['sessions_within_targets'] is None else vf[n]['sessions_within_targets']} of "
        f"{vf[n]['sessions']}" for n in names) + " |")
    md += ["", "Targets per session: input 1%, reads 1%, writes 5%, cost 2%; "
           f"{o['sessions_without_usage']} session(s) without recorded input usage.", "", img, ""]
    return md


def _bound_share_text(b: dict, saved: float | None) -> str:
    """The share of the bound's saving, "costs more" for a policy that costs more, "-" for one
    without a cost (a run priced with NaN rates)."""
    if saved is None:
        return "-"
    return _share_pct(b["share"]) if saved >= 0 else "costs more"


def leaderboard(rows: list[dict], img: str) -> list[str]:
    md = ["## Leaderboard", "",
          "Every finished run, with its saving against its no-op baseline (same dataset, cache and price settings) and "
          "the 95% interval of the cost saving. Hit rate = reads / (reads + writes + uncached). Run ids in the last "
          "column; each run's risk counters are in section *Risk*.", "",
          "| policy | settings | TTL | variant | cost $ | cost saved | 95% interval | distinguishable | context tokens |"
          " context saved | tokens delivered | delivered saved | hit rate | busts | run |",
          sep("llllrrcrrrrrrrl")]
    # a cache what-if priced by the calibrated variant alone is listed last, unranked: that variant
    # copies the log's recorded misses, which the setting would change (`ctxreplay whatif` measures it)
    # a run without a cost (NaN rates from an older price file) sorts last
    for r in sorted(rows, key=lambda r: (calibrated_whatif(r), r["figures"]["cost"] is None,
                                         r["figures"]["cost"] or 0.0)):
        f = r["figures"]
        s = r.get("saved_pct") or {}
        dist = (r.get("distinguishable") or {}).get("cost")
        ttl = str(r["cache_config"].get("ttl")) + (" (what-if, calibrated: not ranked)" if calibrated_whatif(r) else "")
        md.append(
            f"| {r['policy']} | {settings_text(r['policy'], r['params'])} | {ttl} | "
            f"{VARIANT_NAME.get(r['variant'], r['variant'])} | {num(f['cost'], 2)} | {pct(s.get('cost'))} | "
            f"{interval_text((r.get('interval') or {}).get('cost'))} | "
            f"{'-' if r['policy'] == 'noop' else 'yes' if dist else 'no'} | "
            f"{count(f['context_tokens'])} | {pct(s.get('context_tokens'))} | {count(f['tokens_delivered'])} | "
            f"{pct(s.get('tokens_delivered'))} | {pct(f['hit_rate']).lstrip('+')} | {count(f['busts'])} | "
            f"{r['run_id']} |")
    return md + ["", img, ""]


def per_agent(rows: list[dict]) -> list[str]:
    agents = sorted({a for r in rows for a in r.get("by_agent", {})})
    runs = sorted((r for r in rows if not r.get("sweep_id")), key=lambda r: (r["policy"], r["variant"], r["run_id"]))
    if not agents or not runs:
        return []
    md = ["## Per agent", "", "Cost and cost saved vs the baseline, per agent that wrote the logs (runs outside sweeps).",
          "", "| policy | settings | TTL | variant | " + " | ".join(f"{a}: cost $ | {a}: saved" for a in agents) + " |",
          sep("llll" + "rr" * len(agents))]
    for r in runs:
        cells = []
        for a in agents:
            fa = r["by_agent"].get(a)
            cells += [num(fa["cost"], 2) if fa else "-", pct(fa.get("cost_saved_pct")) if fa else "-"]
        md.append(f"| {r['policy']} | {settings_text(r['policy'], r['params'])} | {r['cache_config'].get('ttl')} | "
                  f"{VARIANT_NAME.get(r['variant'], r['variant'])} | " + " | ".join(cells) + " |")
    return md + [""]


def risk(rows: list[dict]) -> list[str]:
    from .rules import BASE_RISK_COUNTERS

    md = ["## Risk", "", "Risk counters (docs/report.md, \"The rules\"): dangling refs, stale refs, trimmed then re-read, "
          "and each policy's own (e.g. unseen_write_risk); the recommendation drops a run whose counter exceeds its "
          "limit.", "",
          "| policy | settings | TTL | variant | busts | rewritten tokens | dangling refs | stale refs |"
          " trimmed, re-read | policy's own risk counters | hints | mean hint distance (turns) |",
          sep("llll" + "r" * 5 + "l" + "rr")]
    for r in rows:
        f = r["figures"]
        if r["policy"] == "noop":
            continue
        own = {k: v for k, v in (r.get("risk") or {}).items() if k not in BASE_RISK_COUNTERS}
        md.append(f"| {r['policy']} | {settings_text(r['policy'], r['params'])} | {r['cache_config'].get('ttl')} | "
                  f"{VARIANT_NAME.get(r['variant'], r['variant'])} | {count(f['busts'])} | {count(f['bust_tokens'])} | "
                  f"{count(f['dangling_refs'])} | {count(f['stale_refs'])} | {count(f['trimmed_reread'])} | "
                  f"{cell(', '.join(f'{k} {count(v)}' for k, v in sorted(own.items())) or '-')} | "
                  f"{count(f['hints'])} | {num(f['mean_hint_distance'], 1)} |")
    return md + [""]


__all__ = ["both_variants", "bounds", "breaks", "dropped_runs", "fidelity", "leaderboard", "levers", "levers_chart", "name", "per_agent",
           "recommendation", "risk", "ttl_text"]


SWITCHES = ("price", "provider")  # what-if families that change the model or provider, not the cache
TOP_LEVERS = 5  # the levers the report leads with; the rest is one line (the answer stays near the top)


def levers(brk: dict[str, Any], wi: dict[str, Any] | None, ans: dict[str, Any]) -> list[str]:
    """The answer first (issue 26 item 5): what the cache breaks cost, then the levers, biggest
    saving first — the cache what-ifs (`ctxreplay whatif`, model-only), the cache bound and the
    best deduplication policy — each with dollars and its 95% interval; a lever that is not
    distinguishable, or below the practical threshold per session, is said not worth acting on.
    Kept short: the recommendation and its chart follow within the first screen."""
    md = ["## The levers, biggest first", ""]
    setting = advice.first_line((wi or {}).get("advice"))
    recorded = (wi or {}).get("baseline", {}).get("recorded_cost")
    share = f" ({brk['cost'] / recorded:z.1%} of the recorded cost, {money(recorded, 'cost')})" if recorded else ""
    # the first screen names the client setting to change (issue 36), before the diagnosis
    head = (setting + " " if setting else "") + \
        f"Cache breaks re-billed **{money(brk['cost'], 'cost')}**{share} in {brk['breaks']:,} breaks."
    items: list[tuple[float, str]] = []
    idle: list[str] = []
    switches: list[str] = []
    if wi:
        n = wi["sessions"] or 1
        thr = wi.get("practical_threshold_per_session", 0.01)
        # a client behaviour of some versions that these logs never show is no lever to mention
        idle = [r["name"] for r in wi["scenarios"] if not r["sessions_changed"] and r["family"] != "client"]
        for r in wi["scenarios"]:
            if not r["sessions_changed"] or r["family"] == "client":
                # a client behaviour of some versions explains past breaks (`breaks`); it is no lever
                continue
            if r["family"] in SWITCHES:  # another model or provider is a switch, not a cache setting: said apart
                switches.append(f"`{r['name']}` {money(r['saved']['cost'], 'cost')} ({r['saved_pct']['cost']:+z.2f}%)")
                continue
            iv_ = r["interval_pct"]["cost"]
            ivt = "-" if iv_ is None else f"{iv_['low']:+z.2f}% to {iv_['high']:+z.2f}%"
            verdict = ("" if r["worth_acting_on"] else "; not distinguishable" if not r["distinguishable"]
                       else f"; below {money(thr, 'cost')} per session: not worth acting on"
                       if r["saved"]["cost"] / n < thr else "; costs more")
            # named apart from the policy bounds of `ctxreplay bound` (section *Offline-optimal bounds*)
            what = "cache bound, hindsight" if r["name"] == "bound_offline" else r["family"]
            items.append((r["saved"]["cost"], f"- `{r['name']}` ({what}): {money(r['saved']['cost'], 'cost')} "
                          f"({r['saved_pct']['cost']:+z.2f}%, 95% interval {ivt}){verdict}"))
        head += " What each lever would have saved (`ctxreplay whatif`):"
    items.sort(key=lambda x: -x[0])
    more = len(items) - (TOP_LEVERS - 1)
    items = items[:TOP_LEVERS - 1]
    lead = ans.get("best") or ans.get("closest")
    if lead and ans.get("figure") == "cost":
        items.append((lead["saved"] or 0.0, f"- best deduplication policy, {lead['name']}: "
                      f"{money(lead['saved'], 'cost')} ({pct(lead['saved_pct'])}, 95% interval "
                      f"{interval_text(lead['interval'])}; {ans.get('verdict', '').replace('_', ' ')})"))
    md += [head, ""]
    md += [t for _, t in sorted(items, key=lambda x: -x[0])]
    rest = []
    if switches:
        rest.append("not cache settings, not ranked: another model's or provider's rates " + ", ".join(switches))
    if more > 0:
        rest.append(f"{more} more scenario(s) save less")
    if idle:
        rest.append("no session changes under " + ", ".join(f"`{x}`" for x in idle))
    groups = [(g, x) for g, x in wi["fidelity"].items() if x["sessions"]] if wi else []
    if groups:  # none when no session records usage: there is no error to state
        rest.append("model-only cost error against the recorded bill " + ", ".join(
            ("n/a" if x["rel_error"] is None else f"{x['rel_error'] * 100:+z.2f}%") + f" ({x['sessions']} sessions writing {g})"
            for g, x in groups) + "; a what-if smaller than that error on the sessions it changes is not distinguishable")
    if rest:
        md += ["", "; ".join(rest).capitalize() + " (chart: *Cost by cache scenario*)." if wi else
               "; ".join(rest).capitalize() + "."]
    return md + [""]


def levers_chart(img: str) -> list[str]:
    """The cost of every cache scenario with its interval, after the recommendation (whose chart
    comes first on the page)."""
    if not img:
        return []
    return ["## Cost by cache scenario", "", "Every `ctxreplay whatif` scenario's cost on the model-only variant, "
            "with the 95% interval of its saving; the dashed line is the recorded settings' replay.", "", img, ""]

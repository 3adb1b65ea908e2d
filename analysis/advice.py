"""From lever to setting (issue 36): each cache lever as the client setting that applies it, with
what it would have saved on these logs in dollars per month, its interval, both estimators'
agreement and how sure that is, in words.

The levers are the what-if scenarios of `analysis.whatif`; this module maps those that a client
setting applies to the setting (``SETTINGS``: the line to paste, the client versions that have
it, where that is documented and how sure we are of it), says whether the logs show the setting
in effect already (the share of cache writes at each TTL, main conversation and subagents
apart), and scales each saving to a month at the logs' own pace (the days from the first
session's start to the last one's end). Families stay apart and are never ranked together:
**settings** (a line to paste), **habits** (what the user does: idle gaps, mid-session model and
tool changes; a keep-alive needs a tool), **model choice** and **provider**. Client behaviours
of some versions (re-renders after task turns, skill loads, resumes, ToolSearch) explain past
breaks; they are not levers and are not listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.engine.calibration import version_tuple
from replay.model.arrays import Dataset

DAYS_PER_MONTH = 30.44


@dataclass(frozen=True)
class Setting:
    scenario: str
    name: str
    paste: str  # the line to paste
    since: str  # the first client version that has it
    source: str
    confidence: str  # "official" (changelog or docs), "reported" (third-party report)
    summary: str
    alt: str = ""  # the same setting in another place (settings.json for a variable)

    @property
    def line(self) -> str:
        return self.paste + (f"  (or {self.alt})" if self.alt else "")


SETTINGS = (
    Setting("ttl_1h", "ENABLE_PROMPT_CACHING_1H",
            'export ENABLE_PROMPT_CACHING_1H=1',
            "2.1.108", "Claude Code changelog 2.1.108: 1-hour prompt caching on API key, Bedrock, Vertex and Foundry",
            "official", "every cache write with a 1-hour TTL",
            'in ~/.claude/settings.json: {"env": {"ENABLE_PROMPT_CACHING_1H": "1"}}'),
    Setting("ttl_5m", "FORCE_PROMPT_CACHING_5M",
            'export FORCE_PROMPT_CACHING_5M=1',
            "2.1.108", "Claude Code changelog 2.1.108", "official", "every cache write with a 5-minute TTL",
            'in ~/.claude/settings.json: {"env": {"FORCE_PROMPT_CACHING_5M": "1"}}'),
    Setting("main_1h_sub_5m", "promptCacheTtl 1h, subagentPromptCacheTtl 5m",
            '~/.claude/settings.json: {"promptCacheTtl": "1h", "subagentPromptCacheTtl": "5m"}',
            "2.1.243", "reported for Claude Code 2.1.243 (third-party write-ups, October 2026; not yet in the official "
            "docs we read)", "reported", "the main conversation at 1 hour, subagents at 5 minutes"),
    Setting("main_5m_sub_1h", "promptCacheTtl 5m, subagentPromptCacheTtl 1h",
            '~/.claude/settings.json: {"promptCacheTtl": "5m", "subagentPromptCacheTtl": "1h"}',
            "2.1.243", "reported for Claude Code 2.1.243 (third-party write-ups, October 2026)", "reported",
            "the main conversation at 5 minutes, subagents at 1 hour"),
)
HABITS = {
    "keepalive_15m": ("a keep-alive ping every 270 s of idle time, for up to 15 minutes after a request",
                      "needs a tool or hook that sends the pings (no Claude Code setting does); every ping is "
                      "charged, also after the last request of a session"),
}
MODEL_CHOICE = ("rates_sonnet_4_5",)
PROVIDER = ("openai_caching",)
# break causes (`ctxreplay breaks`) that a habit avoids, and the habit
HABIT_BREAKS = {
    "model_switch": "choose the model at the start of a session, not in the middle (each model has its own cache)",
    "tools_changed": "keep the tool definitions fixed within a session: connect MCP servers before it starts (the "
                     "provider's tools_changed; in Claude Code 2.1.119+ also a stream's first ToolSearch call)",
}
SETTINGS_BY_SCENARIO = {s.scenario: s for s in SETTINGS}
# Every setting above sets the TTL of each cache write (main conversation and subagents): one
# applies at a time and their savings never add up. These pairs are outright opposites.
OPPOSITES = (("ttl_1h", "ttl_5m"), ("main_1h_sub_5m", "main_5m_sub_1h"))
OPPOSITE = {a: b for x, y in OPPOSITES for a, b in ((x, y), (y, x))}
# the TTLs a setting gives (main conversation, subagents)
TTLS = {"ttl_1h": ("1h", "1h"), "ttl_5m": ("5m", "5m"), "main_1h_sub_5m": ("1h", "5m"), "main_5m_sub_1h": ("5m", "1h")}


def logs_pace(con, dataset: str, keys: list[str] | None = None) -> dict[str, Any]:
    """The days the logs cover (first session's start to last session's end, at least one) and
    the client versions they name."""
    where = "dataset = ?"
    params: list = [dataset]
    if keys is not None:
        where += " AND session_key IN (SELECT unnest(?))"
        params.append(list(keys))
    lo, hi, n = con.execute(f"SELECT min(started_at), max(coalesce(ended_at, started_at)), count(*) FROM sessions "
                            f"WHERE {where}", params).fetchone()
    days = max(1.0, (hi - lo) / 86_400_000) if lo is not None and hi is not None else 1.0
    vers = [v for (v,) in con.execute(
        f"SELECT DISTINCT client_version FROM requests WHERE client_version IS NOT NULL AND session_key IN "
        f"(SELECT session_key FROM sessions WHERE {where})", params).fetchall()]
    known = sorted((t, v) for v in vers if (t := version_tuple(v)) is not None)
    return {"days": days, "sessions": n, "oldest_version": known[0][1] if known else None,
            "newest_version": known[-1][1] if known else None}


def ttl_shares(ds: Dataset) -> dict[str, Any]:
    """Cache-write tokens by TTL, main conversation and other streams apart: what the logs show in
    effect."""
    w = {"main": [0.0, 0.0], "subagents": [0.0, 0.0]}
    for s in ds.sessions:
        for st in s.streams:
            acc = w["main" if st.kind == "main" else "subagents"]
            acc[0] += sum(st.r_w5)
            acc[1] += sum(st.r_w1h)
    out = {}
    for k, (w5, w1h) in w.items():
        out[k] = {"written_5m": w5, "written_1h": w1h, "share_1h": w1h / (w5 + w1h) if w5 + w1h else None}
    return out


# Before this version an API key could not ask Claude Code for 1-hour writes (ENABLE_PROMPT_CACHING_1H
# came with it); subscriptions wrote the main conversation with 1 hour by default (reported).
ONE_HOUR_FOR_API_KEYS = (2, 1, 108)


def infer_plan(ds: Dataset) -> dict[str, Any]:
    """What the logs allow to say about who paid: main-conversation 1-hour writes in a client
    version before 2.1.108 mean a subscription (an API key could not ask for them then);
    anything else is "unknown" (5-minute writes are an API key's default and a subscription's on
    usage credits; later 1-hour writes may be ENABLE_PROMPT_CACHING_1H)."""
    early_1h = early = 0.0
    for s in ds.sessions:
        for st in s.streams:
            if st.kind != "main":
                continue
            for k in range(st.n_requests):
                v = version_tuple(st.r_version[k] if st.r_version else None)
                if v is not None and v < ONE_HOUR_FOR_API_KEYS:
                    early += st.r_w5[k] + st.r_w1h[k]
                    early_1h += st.r_w1h[k]
    if early and early_1h / early >= 0.5:
        return {"plan": "subscription", "evidence": f"{early_1h / early:.0%} of the main conversation's cache writes "
                "are 1-hour in client versions before 2.1.108, when an API key could not ask for them"}
    return {"plan": "unknown", "evidence": "the logs do not say whether a subscription or an API key paid"}


def _in_effect(scenario: str, shares: dict[str, Any], threshold: float = 0.9) -> tuple[bool | None, str]:
    """Whether the logs already show the setting's TTLs (at least ``threshold`` of the writes)."""
    m, sub = shares["main"]["share_1h"], shares["subagents"]["share_1h"]

    def at(share, ttl):
        if share is None:
            return None
        return share >= threshold if ttl == "1h" else 1 - share >= threshold

    want = TTLS[scenario]
    got = [at(m, want[0]), at(sub, want[1])]
    known = [g for g in got if g is not None]
    text = (f"main conversation {_pct_text(m)} of cache writes at 1 hour"
            + ("" if sub is None else f", subagents {_pct_text(sub)}"))
    if not known:
        return None, "the logs record no cache writes"
    return all(known), text


def _rest(scenario: str, shares: dict[str, Any]) -> str:
    """The cache writes of the logs not yet at the setting's TTLs, in words ("4% of the main
    conversation's cache writes and 9% of subagents'"); "" when there are none. What the figure
    of a setting already in effect prices: setting it again changes nothing the logs show."""
    parts = []
    for (who, label), ttl in zip((("main", "the main conversation's"), ("subagents", "subagents'")), TTLS[scenario]):
        share = shares[who]["share_1h"]
        rest = None if share is None else 1 - share if ttl == "1h" else share
        if rest:
            parts.append(f"{_pct_text(rest) if rest >= 0.005 else 'under 1%'} of {label}")
    if not parts:
        return ""
    return parts[0] + " cache writes" + (f" and {parts[1]}" if len(parts) > 1 else "")


def _pct_text(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _monthly(x: float | None, days: float) -> float | None:
    return None if x is None else x * DAYS_PER_MONTH / days


def _words(row: dict, in_effect: bool | None, rest: str = "") -> str:
    """How sure, in words: both estimators' intervals, their agreement. A setting already in
    effect saves nothing by being set: its figure prices the writes not yet at its TTLs
    (``rest``, `_rest`), said so."""
    if in_effect:
        return "already in effect in these logs" + (
            f"; its figure prices the other {rest} at its TTLs too, not a saving from setting it" if rest else "")
    iv = row["interval_pct"]["cost"]
    rec, pred = row.get("recorded_events"), row.get("predictive") or {}
    piv = pred.get("interval_pct")
    if iv is None:
        return "unknown: no interval"
    if iv["low"] > 0:
        if rec is None or (piv and piv["low"] > 0):
            return "saves money: both estimators agree and exclude no change" if rec is not None else \
                "likely saves money (the predictive replay alone)"
        return "probably saves money: the re-priced log excludes no change, the model-only replay cannot tell"
    if iv["high"] < 0:
        return "costs more: " + ("both estimators agree" if piv and piv["high"] < 0 else "the re-priced log says so")
    return "not distinguishable from no change on these logs"


def _money_row(row: dict, days: float) -> dict[str, Any]:
    base = row["baseline"]["cost"]
    iv = row["interval_pct"]["cost"]
    saved = row["saved"]["cost"]
    out = {"saved": saved, "saved_pct": row["saved_pct"]["cost"],
           "per_month": _monthly(saved, days),
           "per_month_interval": None if iv is None else [_monthly(base * iv["low"] / 100, days),
                                                         _monthly(base * iv["high"] / 100, days)],
           "interval_pct": iv, "estimator": row.get("headline")}
    pred = row.get("predictive")
    if pred is not None and row.get("headline") == "recorded_events":
        out["predictive_saved_pct"] = pred["saved_pct"]
        out["predictive_per_month"] = _monthly(pred["saved"], days)
    out["agreement"] = row.get("agreement")
    return out


def advise(con, dataset: str, ds: Dataset, wi: dict[str, Any], brk: dict[str, Any] | None = None,
           keys: list[str] | None = None) -> dict[str, Any]:
    """The advice for a dataset: ``wi`` is `analysis.whatif.whatif`'s result on ``ds``, ``brk`` the
    `breaks` summary (for the habits); ``keys``: the sessions ``ds`` holds (a slice)."""
    pace = logs_pace(con, dataset, keys)
    days = pace["days"]
    shares = ttl_shares(ds)
    rows = {r["name"]: r for r in wi["scenarios"]}
    newest = version_tuple(pace["newest_version"])
    plan = infer_plan(ds)
    plan_text = f"{plan['plan']} ({plan['evidence']})"
    settings = []
    for s in SETTINGS:
        r = rows.get(s.scenario)
        if r is None:
            continue
        effect, effect_text = _in_effect(s.scenario, shares)
        rest = _rest(s.scenario, shares) if effect else ""
        has = None if newest is None else newest >= version_tuple(s.since)
        settings.append({
            "lever": s.scenario, "setting": s.name, "line": s.line, "paste": s.paste, "what": s.summary,
            "client_versions": f"Claude Code {s.since} and later", "since": s.since,
            "your_client": pace["newest_version"], "your_client_has_it": has,
            "source": s.source, "confidence": s.confidence,
            "in_effect": effect, "in_effect_evidence": effect_text,
            "plan": plan_text,
            **_money_row(r, days), "distinguishable": r["distinguishable"], "how_sure": _words(r, effect, rest),
            "excludes": [x.name for x in SETTINGS if x.scenario != s.scenario],
            "opposite": SETTINGS_BY_SCENARIO[OPPOSITE[s.scenario]].name,
        })
    settings.sort(key=lambda x: (x["in_effect"] is True, -(x["per_month"] or 0.0)))
    alternatives = _alternatives(settings)
    habits = []
    for name, (what, caveat) in HABITS.items():
        r = rows.get(name)
        if r is not None:
            habits.append({"lever": name, "what": what, "caveat": caveat, **_money_row(r, days),
                           "distinguishable": r["distinguishable"], "how_sure": _words(r, None)})
    if brk:
        by_cause = {b["cause"]: b for b in brk.get("by_cause", [])}
        by_reason = {b["reason"]: b for b in (brk.get("provider") or {}).get("by_reason", [])}
        for cause, what in HABIT_BREAKS.items():
            b = by_cause.get(cause) or by_reason.get(cause)
            if b and b.get("breaks", b.get("count", 0)):
                n = b.get("count", b.get("breaks"))
                cost = b.get("cost")
                habits.append({"lever": f"avoid_{cause}", "what": what, "breaks": n, "tokens": b["tokens"],
                               "saved": cost, "per_month": _monthly(cost, days), "interval_pct": None,
                               "estimator": "recorded breaks (re-billed tokens at write minus read price)",
                               "how_sure": "what these breaks re-billed, as recorded"})
    apart = {fam: [{"lever": n, "summary": rows[n]["summary"], **_money_row(rows[n], days)}
                   for n in names if n in rows]
             for fam, names in (("model_choice", MODEL_CHOICE), ("provider", PROVIDER))}
    return {"dataset": dataset, "days": days, "sessions": pace["sessions"], "plan": plan,
            "client_versions": [pace["oldest_version"], pace["newest_version"]],
            "ttl_shares": shares, "settings": settings, "alternatives": alternatives, "habits": habits, **apart,
            "note": "dollars per month at the logs' pace: the saving on these logs times 30.44 / the days they "
                    "cover; settings, habits, model choice and provider are separate families, never ranked together"}


def saves(s: dict[str, Any]) -> bool:
    """Whether setting ``s`` would have saved money distinguishably: not in effect yet, and its
    interval above 0."""
    return not s["in_effect"] and (s["per_month"] or 0) > 0 and bool(s["interval_pct"]) and s["interval_pct"]["low"] > 0


def _alternatives(settings: list[dict[str, Any]]) -> dict[str, Any]:
    """The settings exclude each other (one TTL layout at a time): which pairs are opposites, and
    which to pick among those that would save money: the largest saving (the settings come
    sorted by it, so it is the first row), its interval beside the others'; ``pick`` None when
    none would."""
    names = {s["lever"]: s["setting"] for s in settings}
    pairs = [[names[a], names[b]] for a, b in OPPOSITES if a in names and b in names]
    note = ""
    if len(names) > 1:
        note = ("alternatives, set one only: each of these settings sets the TTL of every cache write, so their "
                "savings do not add up" + (" (" + "; ".join(f"{_short(a)} is the opposite of {_short(b)}"
                                                           for a, b in pairs) + ")" if pairs else ""))
    good = [s for s in settings if saves(s)]
    if len(good) > 1:
        best, rest = good[0], good[1:]
        iv = best["per_month_interval"]
        overlap = any(s["per_month_interval"] and iv and s["per_month_interval"][1] >= iv[0] for s in rest)
        note += (f"; of the {len(good)} that would save money, pick the one that saves most: {_short(best['setting'])} "
                 f"({_per_month(best)}) rather than "
                 + " or ".join(f"{_short(s['setting'])} ({_per_month(s)})" for s in rest)
                 + ("; its point estimate is the largest, but the intervals overlap" if overlap else ""))
        for s in rest:
            s["how_sure"] += "; an alternative to the first row, which saves more (set one only)"
    return {"opposites": pairs, "pick": good[0]["lever"] if good else None, "note": note}


def _short(name: str) -> str:
    """A setting's name where commas separate settings: `promptCacheTtl 1h + subagentPromptCacheTtl 5m`."""
    return name.replace(", ", " + ")


def _per_month(s: dict[str, Any]) -> str:
    iv = s.get("per_month_interval")
    return f"{_m(s['per_month'])} a month" + (f" [{_m(iv[0])}, {_m(iv[1])}]" if iv else "")


def _m(x: float | None) -> str:
    if x is None:
        return "-"
    return ("+" if x > 0 else "-" if x < 0 else "") + f"${abs(x):,.2f}"


def no_setting(adv: dict[str, Any], subject: str = "none") -> str:
    """Why no setting is to try, agreeing with the rows: a setting already in effect whose
    figure excludes 0 is named with what that figure prices (the writes not yet at its TTLs),
    since setting it saves nothing more."""
    on = [s for s in adv["settings"] if s["in_effect"]]
    sure = [s for s in on if s["interval_pct"] and (s["interval_pct"]["low"] > 0 or s["interval_pct"]["high"] < 0)]
    text = f"{subject} would have saved money distinguishably on these logs"
    if sure:
        return text + " beyond what is already in effect (" + "; ".join(
            f"`{s['setting']}`: {_per_month(s)} prices the other "
            f"{_rest(s['lever'], adv['ttl_shares']) or 'cache writes'} at its TTLs too, not a saving from setting it"
            for s in sure) + ")"
    names = ", ".join(f"`{s['setting']}`" for s in on)
    return text + (f" ({names} already in effect)" if on else "")


def first_line(adv: dict[str, Any] | None) -> str | None:
    """One sentence for the report's first screen: the setting to try, or why none."""
    if not adv or not adv["settings"]:
        return None
    best = next((s for s in adv["settings"] if saves(s)), None)
    if best is None:
        return f"**Cache settings:** {no_setting(adv)}; *Advice* below."
    iv = best["per_month_interval"]
    return (f"**Setting to try:** `{best['paste']}` ({best['client_versions']}): about "
            f"{_m(best['per_month'])} a month [{_m(iv[0])}, {_m(iv[1])}] at these logs' pace; {best['how_sure']}.")


def markdown(adv: dict[str, Any] | None) -> list[str]:
    """The report's *Advice* section: every setting with its line, versions, in-effect evidence,
    dollars per month and how sure; habits, model choice and provider apart."""
    if not adv:
        return []
    md = ["## Advice: the settings that apply the levers", "",
          f"Dollars per month at the pace of these logs ({adv['sessions']:,} sessions over {adv['days']:.1f} days; "
          f"client {adv['client_versions'][0] or '?'} to {adv['client_versions'][1] or '?'}): the recorded requests "
          "re-priced with only the lever's events changed, the predictive replay beside it (`ctxreplay advise`).", "",
          "| setting | line to paste | client versions (source) | in effect in these logs | per month [95%] | "
          "predictive | how sure |", "|---|---|---|---|---|---|---|"]
    for s in adv["settings"]:
        iv = s["per_month_interval"]
        md.append(f"| {s['setting']} | `{s['paste']}` | {s['client_versions']} ({s['confidence']}) | "
                  f"{'yes' if s['in_effect'] else 'no' if s['in_effect'] is False else '?'}: {s['in_effect_evidence']} | "
                  f"{_m(s['per_month'])} [{_m(iv[0]) if iv else '-'}, {_m(iv[1]) if iv else '-'}] | "
                  f"{_m(s.get('predictive_per_month'))} | {s['how_sure']} |")
    alt = (adv.get("alternatives") or {}).get("note")
    if alt:
        md += ["", alt[0].upper() + alt[1:] + "."]
    if adv["habits"]:
        md += ["", "Habits (what you do, not a setting): " + "; ".join(
            f"{h['what']}: {_m(h['per_month'])} a month ({h['how_sure']}"
            + (f"; {h['caveat']}" if h.get("caveat") else "") + ")" for h in adv["habits"]) + "."]
    apart = [x for fam in ("model_choice", "provider") for x in adv.get(fam, [])]
    if apart:
        md += ["", "Not cache settings, never ranked with them: " + "; ".join(
            f"{x['summary']}: {_m(x['per_month'])} a month" for x in apart) + "."]
    return md + ["", f"Plan: {adv['settings'][0]['plan'] if adv['settings'] else 'unknown'}.", ""]

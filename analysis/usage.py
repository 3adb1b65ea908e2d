"""Recorded usage and cost: what the logs say was used, grouped by day, week, month, session,
project, model or agent (`ctxreplay usage`, and the cost column of `ctxreplay sessions`).

Read-only over the trace's `requests` table; nothing is replayed. How it counts:

* one row per API response, as ingest stores it: output tokens from the response's final
  streamed line (earlier lines carry partial counts), usage once per message id;
* a response copied into a later session by a resume (same keyed message id) is counted once,
  in the session that recorded it first (the copy not flagged `resumed_copy`);
* every response is priced with its own model's rates (`PriceTable.rates(model).cost`):
  5-minute and 1-hour cache writes each at their own rate, long-context tiers per request;
* a model without a price is not priced at $0: its responses are counted, the group's cost
  is marked incomplete and the model is named (`unpriced_models`);
* fast mode: a response whose trace row says ``speed = 'fast'`` (a ``requests.speed`` column)
  is priced under ``MODEL (fast)`` at fast-mode rates; traces without the column price every
  response at standard rates;
* responses that record no input usage (Copilot CLI and Gemini CLI logs record output
  only, or nothing) count as `requests_without_usage`: their input is not in the totals.

Projects: a session's project is the `project` column of `sessions` (the keyed per-component
pseudonym of the session's working directory) when the database has one. Databases whose trace
stores no working directory have no project: `--by project` and `--project` say so.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import date, datetime
from typing import Any

# the filters are the slice options' (`replay.experiments.slices`); these names stay importable from here
from replay.experiments.slices import NO_PROJECT_MESSAGE, Filters, iso_in, local_time, no_project_message, tz_name  # noqa: F401
from replay.store.db import has_column

GROUPS = ("day", "week", "month", "session", "project", "model", "agent")
TIME_GROUPS = ("day", "week", "month")
TOKEN_FIELDS = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")
NO_TIME = "(no time)"
NO_PROJECT = "(no project)"
NO_MODEL = "(no model)"


class UsageError(ValueError):
    """A filter or grouping this database cannot answer; the message says why."""


def has_project_column(con, dataset: str | None = None) -> bool:
    """Whether the sessions (of ``dataset``, if named) record projects (`store.records_projects`)."""
    from replay.store import records_projects

    return records_projects(con, dataset)


def _fetch(con, dataset: str, with_project: bool):
    """Every counted response of ``dataset`` with its session's agent (and project): a list of tuples."""
    project = "s.project" if with_project else "NULL"
    speed = "r.speed" if has_column(con, "requests", "speed") else "NULL::VARCHAR"
    # a response's day: the time of the line whose usage it counts (schema 11), as ccusage dates it
    # (a response streamed across midnight), else its first line's
    when = "coalesce(r.usage_ts, r.ts)" if has_column(con, "requests", "usage_ts") else "r.ts"
    # one row per response: the original, not a resume's copy; then the fullest. A copy repeats the
    # original's lines verbatim (id, time, input counts), so two sessions that merely share message
    # ids (a generator's, or planted) are two responses each, as `sessions` counts them
    sql = f"""
        SELECT r.session_key, s.agent, {project} AS project, {when} AS ts, coalesce(r.model, '') AS model,
               coalesce(r.input_tokens, 0), coalesce(r.cache_write_5m, 0), coalesce(r.cache_write_1h, 0),
               coalesce(r.cache_read, 0), coalesce(r.output_tokens, 0), coalesce(r.has_usage, false),
               s.started_at, {speed} AS speed
        FROM requests r JOIN sessions s USING (session_key)
        WHERE s.dataset = $ds
        QUALIFY row_number() OVER (
            PARTITION BY coalesce(nullif(r.msg_key, ''), r.session_key || '/' || r.stream_id || '/' || r.req_idx),
                         r.ts, coalesce(r.input_tokens, 0), coalesce(r.cache_write_5m, 0),
                         coalesce(r.cache_write_1h, 0), coalesce(r.cache_read, 0)
            ORDER BY coalesce(r.resumed_copy, false), coalesce(r.has_usage, false) DESC,
                     coalesce(r.output_tokens, 0) DESC, s.started_at NULLS LAST, r.session_key, r.stream_id,
                     r.req_idx) = 1
    """
    return con.execute(sql, {"ds": dataset}).fetchall()


def _price_key(model: str, speed: str | None) -> str:
    """The name a response is priced under: ``MODEL (fast)`` for fast mode (``PriceTable`` has its rates)."""
    if speed is None:
        return model
    from replay.model.costs import price_key

    return price_key(model, speed)


def _in_project(project: str | None, wanted: tuple[str, ...]) -> bool:
    if not project:
        return False
    return any(project == p or project.startswith(p.rstrip("/") + "/") for p in wanted)


def _time_key(d: datetime | None, by: str) -> str:
    if d is None:
        return NO_TIME
    if by == "day":
        return d.date().isoformat()
    if by == "month":
        return f"{d.year:04d}-{d.month:02d}"
    y, w, _ = d.isocalendar()
    return f"{y:04d}-W{w:02d}"


def _week_start(key: str) -> str | None:
    if key == NO_TIME:
        return None
    return date.fromisocalendar(int(key[:4]), int(key[6:]), 1).isoformat()


# a group's accumulator, a list (indexed below: this loop runs once per recorded response)
_REQ, _U, _W5, _W1H, _RD, _OUT, _COST, _NOUSE, _SESS, _MODELS, _UNPRICED = range(11)


def _empty() -> list:
    return [0, 0, 0, 0, 0, 0, 0.0, 0, set(), set(), defaultdict(int)]


def _finish(g: list) -> dict[str, Any]:
    out = {"sessions": len(g[_SESS]), "requests": g[_REQ],
           **{f: int(g[i]) for f, i in zip(TOKEN_FIELDS, (_U, _W5, _W1H, _RD, _OUT))}}
    out["total_tokens"] = sum(out[f] for f in TOKEN_FIELDS)
    cost = float(g[_COST])
    out["cost"] = round(cost, 9) if math.isfinite(cost) else None
    out["cost_complete"] = not g[_UNPRICED]
    out["unpriced_models"] = sorted(g[_UNPRICED])
    out["requests_without_usage"] = g[_NOUSE]
    out["models"] = sorted(m or NO_MODEL for m in g[_MODELS])
    return out


def usage(con, dataset: str, by: str = "day", filters: Filters | None = None, prices=None) -> dict[str, Any]:
    """Recorded usage and cost of ``dataset`` grouped ``by`` one of GROUPS, over the responses
    ``filters`` select: {"dataset", "by", "filters", "rows", "totals", "unpriced_models", "notes"}."""
    from replay.model.costs import PriceError, PriceTable

    if by not in GROUPS:
        raise UsageError(f"--by {by!r}: expected one of {', '.join(GROUPS)}")
    f = filters or Filters()
    prices = (prices or PriceTable()).bind(dataset)
    with_project = has_project_column(con, dataset)
    if not with_project and (by == "project" or f.projects):
        raise UsageError(no_project_message(con, dataset))
    groups: dict[str, list] = {}
    total = _empty()
    meta: dict[str, dict[str, Any]] = {}
    rates: dict[tuple[str, str | None], Any] = {}  # (model, speed) -> its rates, None unpriced
    unpriced: dict[str, int] = defaultdict(int)
    excluded_no_time = 0
    models, agents = set(f.models), set(f.agents)
    dated = bool(f.since or f.until)
    for (skey, agent, project, ts, model, u, w5, w1h, rd, o, has_usage, started, speed) in _fetch(
            con, dataset, with_project):
        if agents and agent not in agents:
            continue
        if models and model not in models:
            continue
        if f.projects and not _in_project(project, f.projects):
            continue
        when = local_time(ts, f.tz) if ts is not None and ts >= 0 else None
        if dated:
            if when is None:
                excluded_no_time += 1
                continue
            if (f.since and when.date() < f.since) or (f.until and when.date() > f.until):
                continue
        if by in TIME_GROUPS:
            key = _time_key(when, by)
        elif by == "session":
            key = skey
            if key not in meta:
                meta[key] = {"agent": agent, "project": project, "started_at": started}
        elif by == "project":
            key = project or NO_PROJECT
        elif by == "model":
            key = (_price_key(model, speed) if model else model) or NO_MODEL
        else:
            key = agent
        cost, missing = 0.0, None
        if u or w5 or w1h or rd or o:
            r = rates.get((model, speed), False)
            if r is False:
                pk = _price_key(model, speed) if model else model
                try:
                    r = prices.rates(pk) if pk else None
                except PriceError:
                    r = None
                rates[(model, speed)] = r
            if r is None:
                missing = (_price_key(model, speed) if model else model) or NO_MODEL
                unpriced[missing] += 1
            else:
                cost = r.cost(u, w5, w1h, rd, o)
        g = groups.get(key)
        if g is None:
            g = groups[key] = _empty()
        for acc in (g, total):
            acc[_REQ] += 1
            acc[_U] += u
            acc[_W5] += w5
            acc[_W1H] += w1h
            acc[_RD] += rd
            acc[_OUT] += o
            acc[_COST] += cost
            acc[_SESS].add(skey)
            acc[_MODELS].add(model)
            if not has_usage:
                acc[_NOUSE] += 1
            if missing is not None:
                acc[_UNPRICED][missing] += 1
    rows = []
    for key, g in groups.items():
        row = {"key": key, **_finish(g)}
        if by == "week":
            row["week_start"] = _week_start(key)
        if by == "session":
            m = meta[key]
            row.update(agent=m["agent"], project=m["project"], started_at=m["started_at"],
                       started_at_local=iso_in(m["started_at"], f.tz))  # in the filters' zone, with its offset
        if by in ("project", "session") and (row.get("project") or key) in f.project_names:
            row["project_path"] = f.project_names[row.get("project") or key]
        rows.append(row)
    if by in TIME_GROUPS:
        rows.sort(key=lambda r: (r["key"] == NO_TIME, r["key"]))
    else:
        rows.sort(key=lambda r: (-r["cost"], r["key"]))
    notes = []
    if unpriced:
        notes.append("no price for " + ", ".join(f"{m} ({n} responses)" for m, n in sorted(unpriced.items()))
                     + ": their cost is not included (add them with --prices FILE)")
    if total[_NOUSE]:
        notes.append(f"{total[_NOUSE]} responses record no input usage (their agent's log "
                     "records output only, or nothing): their input is not counted")
    if excluded_no_time:
        notes.append(f"{excluded_no_time} responses without a timestamp are outside any --since/--until range")
    if not f.active():
        stored = con.execute("SELECT count(*) FROM requests r JOIN sessions s USING (session_key) WHERE s.dataset = ?",
                             [dataset]).fetchone()[0]
        counted = _finish(total)["requests"]
        if stored > counted:  # the same response in two stored sessions (a fork, a resume's copy)
            notes.append(f"{stored - counted} of the {stored:,} stored requests repeat a response of another stored "
                         "session (a resume's copy or a fork): counted once here, as billed; replay, validate and "
                         "whatif replay each session whole, so their recorded bill counts them in each")
    return {"dataset": dataset, "by": by, "filters": f.describe(), "prices": prices.describe(), "rows": rows,
            "totals": _finish(total), "unpriced_models": dict(sorted(unpriced.items())), "notes": notes}


def session_costs(con, dataset: str, filters: Filters | None = None, prices=None) -> dict[str, dict[str, Any]]:
    """Recorded usage and cost per session key (the `usage --by session` rows)."""
    return {r["key"]: r for r in usage(con, dataset, "session", filters, prices)["rows"]}

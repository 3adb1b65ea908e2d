"""Slices: what a replay (or a usage count) runs on — a dataset, days, projects, models, agents
and the time zone the days are in — built once here for every command.

The slice options' values (``--since`` ... ``--key-file``, parsed by `replay.cli`) become a
`Filters` (`make_filters`; `ctxreplay usage` and `sessions` count the responses it selects) or,
stored, a slice (`make_slice`: a plain dict kept in a run's configuration), whose sessions
`slice_session_keys` finds and `load` loads. A value this cannot use raises `SliceError` (a
`StoreError` and a `ValueError`) with the one line to print; a key file that cannot be read
raises `KeyFileError` or `OSError`. Nothing here prints: `note` receives what is worth saying.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from replay import store
from replay.store.db import has_column

FAST_SUFFIX = " (fast)"  # `replay.model.costs.FAST_SUFFIX` (not imported: the price tables load with it)

if TYPE_CHECKING:  # the arrays (pandas) are loaded by the commands that replay, not by `usage`'s filters
    from replay.model.arrays import Dataset

PSEUDONYM = re.compile(r"^/?[0-9a-f]{10}(\.[a-z0-9]{1,6})?(/[0-9a-f]{10}(\.[a-z0-9]{1,6})?)*/?$")
RELATIVE = re.compile(r"^(\d{1,5})\s*([dw])$")
FORMS = ("YYYY-MM-DD, YYYYMMDD, Nd or Nw (N days or weeks before today), today or yesterday")
SLICE_KEYS = ("since", "until", "timezone", "projects", "models", "agents")
NO_PROJECT_MESSAGE = ("this database records no project for its sessions: their trace keeps no working directory "
                      "(sessions ingested before ctxreplay recorded projects, or logs that keep none), so usage "
                      "cannot be grouped or filtered by project; re-ingest the logs into a new database, or group "
                      "by session, model, agent or date instead")
# agents whose logs keep no working directory: their sessions never have a project, and re-ingesting cannot give one
NO_PROJECT_AGENTS = {"gemini-cli": "Gemini CLI"}
ELLIPSIS = ("\u2026/", ".../")  # how `usage --by session` shortens a project pseudonym to its last component(s)


class SliceError(store.StoreError, ValueError):
    """A slice option this dataset cannot be sliced by; the message is the line to print."""


@dataclass
class Filters:
    """Which recorded responses count. Dates are inclusive days in ``tz``; empty tuples mean all."""

    since: date | None = None
    until: date | None = None
    projects: tuple[str, ...] = ()  # project pseudonyms (a session matches one or a folder under one)
    models: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    tz: tzinfo = timezone.utc
    project_names: dict[str, str] = field(default_factory=dict)  # pseudonym -> raw path given on this machine

    def active(self) -> bool:
        return bool(self.since or self.until or self.projects or self.models or self.agents)

    def describe(self) -> dict[str, Any]:
        return {"since": self.since.isoformat() if self.since else None,
                "until": self.until.isoformat() if self.until else None,
                "projects": [self.project_names.get(p, p) for p in self.projects], "models": list(self.models),
                "agents": list(self.agents), "timezone": tz_name(self.tz)}


def tz_name(tz: tzinfo) -> str:
    return getattr(tz, "key", None) or ("UTC" if tz == timezone.utc else str(tz))


def local_time(ms: int | None, tz: tzinfo) -> datetime | None:
    """The time of ``ms`` (epoch milliseconds) in ``tz``; in UTC when the local date is past
    year 9999 (or before year 1); None when there is none or even UTC cannot hold it."""
    if ms is None:
        return None
    try:
        utc = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, ValueError, OSError):
        return None
    try:
        return utc.astimezone(tz)
    except (OverflowError, ValueError):
        return utc


def iso_in(ms: int | None, tz: tzinfo) -> str | None:
    """``ms`` as ISO 8601 in ``tz`` with its offset (`2026-01-05T05:54:12-08:00`), for JSON."""
    d = local_time(ms, tz)
    return None if d is None else d.isoformat(timespec="seconds")


# --- the options' values ----------------------------------------------------------------------

def resolve_day(text: str, tz: tzinfo, at: datetime | None = None) -> date:
    """The calendar day ``text`` names, relative forms counted back from today in ``tz`` (today:
    the day of ``at``, the current time by default).

    ``Nd`` is the day N days before today (``0d`` is today), so ``--since 7d`` covers the
    seven days before today and today itself, as `git log --since=7.days` reaches back.
    Raises ValueError naming the accepted forms.
    """
    t = text.strip().lower()
    today = (at or datetime.now(timezone.utc)).astimezone(tz).date()
    if t == "today":
        return today
    if t == "yesterday":
        return today - timedelta(days=1)
    m = RELATIVE.match(t)
    if m:
        # at most 99999 weeks: about 1,900 years, so the day stays after year 1
        return today - timedelta(days=int(m[1]) * (7 if m[2] == "w" else 1))
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(t, fmt).date()
        except ValueError:
            pass
    raise ValueError(f"{text!r} is not a date; expected {FORMS}")


def zone(name: str) -> tzinfo:
    """The time zone of --timezone: UTC, `local` (`local_zone`) or an IANA name."""
    if name.upper() == "UTC":
        return timezone.utc
    if name.lower() == "local":
        return local_zone()
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SliceError(f"--timezone {name!r}: unknown time zone; give an IANA name such as Europe/Paris, UTC or "
                         "`local`") from None


def local_zone():
    """This machine's time zone as ccusage counts days in it: the IANA zone of $TZ or of
    /etc/localtime (so that a day across a daylight-saving change keeps its own offset), else the
    current fixed offset; UTC when the zone is UTC."""
    import os
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    names = []
    tz = os.environ.get("TZ")
    if tz:
        names.append(tz.lstrip(":"))
    try:
        link = os.readlink("/etc/localtime")
        if "zoneinfo/" in link:
            names.append(link.split("zoneinfo/", 1)[1])
    except OSError:
        pass
    for n in names:
        if n.upper() in ("UTC", "UTC0", "ETC/UTC", "GMT", "ETC/GMT", "UCT", "ZULU"):
            return timezone.utc
        try:
            return ZoneInfo(n)
        except (ZoneInfoNotFoundError, ValueError, OSError):
            continue
    here = datetime.now().astimezone().tzinfo
    return timezone.utc if here is not None and here.utcoffset(None) == timezone.utc.utcoffset(None) else here


def project_pseudonyms(con, dataset: str, paths: tuple[str, ...], key_file: Path | None) -> dict[str, str]:
    """pseudonym -> what the user typed, for each --project (raw paths pseudonymized with the key).
    Raises `KeyFileError` or `OSError` when the key cannot be read, `SliceError` when it is not
    the key the dataset was ingested with."""
    import os

    from replay.ingest.keys import Keyring, default_key_path, load_or_create_master_key

    found: dict[str, str] = {}
    shown = [p for p in paths if p.startswith(ELLIPSIS) and PSEUDONYM.match(p.split("/", 1)[1])]
    raw = [p for p in paths if not PSEUDONYM.match(p) and p not in shown]
    for p in paths:
        if PSEUDONYM.match(p):
            found["/" + p.strip("/")] = p
    for p in shown:
        found[_shown_project(con, dataset, p)] = p
    if raw:
        path = Path(key_file).expanduser() if key_file else default_key_path()
        master = load_or_create_master_key(path, create=False, named_by="--key-file" if key_file else
                                           "$CTXREPLAY_KEY_FILE or the default key path")
        keys = Keyring.for_dataset(master, dataset)
        known = con.execute("SELECT key_fingerprint FROM datasets WHERE name = ?", [dataset]).fetchone()
        if known and known[0] != keys.fingerprint:
            raise SliceError(f"the key in {path} is not the key dataset {dataset!r} was ingested with, so --project "
                             f"{raw[0]!r} cannot be matched; pass that key with --key-file, or give the project's "
                             "pseudonym (`ctxreplay usage --by project`)")
        for p in raw:
            full = os.path.abspath(os.path.expanduser(p))
            found[keys.path(full)] = p
    return found


def dataset_projects(con, dataset: str) -> list[str]:
    """The project pseudonyms the sessions of ``dataset`` record."""
    return [p for (p,) in con.execute("SELECT DISTINCT project FROM sessions WHERE dataset = ? AND project IS NOT NULL",
                                      [dataset]).fetchall()]


def dataset_models(con, dataset: str) -> set[str]:
    """The models the responses of ``dataset`` name, as stored ('' for none)."""
    return {m for (m,) in con.execute("SELECT DISTINCT coalesce(r.model, '') FROM requests r JOIN sessions s "
                                      "USING (session_key) WHERE s.dataset = ?", [dataset]).fetchall()}


def _shown_project(con, dataset: str, shown: str) -> str:
    """The project pseudonym a displayed `…/c504243265` stands for: the one project of the
    dataset that ends with those components (``shown`` itself, matching nothing, when none
    does). Raises `SliceError` when several do."""
    tail = "/" + shown.split("/", 1)[1].strip("/")
    hits = sorted(p for p in dataset_projects(con, dataset) if p == tail or p.endswith(tail))
    if len(hits) > 1:
        listed = ", ".join(hits[:3]) + (f" and {len(hits) - 3} more" if len(hits) > 3 else "")
        raise SliceError(f"--project {shown!r} is ambiguous: {len(hits)} projects of {dataset} end with it "
                         f"({listed}); give the whole pseudonym, as `ctxreplay usage --by project --wide` lists "
                         "them, or more of its last folders")
    return hits[0] if hits else shown


def no_project_message(con, dataset: str) -> str:
    """Why ``dataset`` cannot be grouped or filtered by project: its agents' logs keep no working
    directory (nothing to re-ingest), or its sessions predate projects (`NO_PROJECT_MESSAGE`)."""
    agents = {a for (a,) in con.execute("SELECT DISTINCT agent FROM sessions WHERE dataset = ?",
                                        [dataset]).fetchall()}
    if agents and agents <= set(NO_PROJECT_AGENTS):
        names = ", ".join(NO_PROJECT_AGENTS[a] for a in sorted(agents))
        return (f"the sessions of {dataset} record no project: {names} logs keep no working directory, so usage "
                "cannot be grouped or filtered by project; group by session, model, agent or date instead")
    return NO_PROJECT_MESSAGE


def _in_projects(project: str | None, wanted) -> bool:
    return bool(project) and any(project == p or project.startswith(p.rstrip("/") + "/") for p in wanted)


def unmatched(con, dataset: str, projects=(), models=(), agents=()) -> dict[str, list[str]]:
    """kind -> the given values no session (project, agent) or recorded response (model) of
    ``dataset`` has, for each of project, model and agent."""
    out: dict[str, list[str]] = {}
    if projects:
        have = dataset_projects(con, dataset) if store.records_projects(con) else []
        out["project"] = [p for p in projects if not any(_in_projects(h, (p,)) for h in have)]
    if models:
        have = dataset_models(con, dataset)
        out["model"] = [m for m in models if m not in have]
    if agents:
        have = {a for (a,) in con.execute("SELECT DISTINCT agent FROM sessions WHERE dataset = ?",
                                          [dataset]).fetchall()}
        out["agent"] = [a for a in agents if a not in have]
    return {k: v for k, v in out.items() if v}


def _unmatched_text(dataset: str, kinds: dict[str, list[str]], names: dict[str, str] | None = None) -> str:
    names = names or {}
    said = "; ".join(f"no {k} of {dataset} matches {', '.join(names.get(v, v) for v in vs)}"
                     for k, vs in kinds.items())
    return said + "; " + " / ".join(f"`ctxreplay usage --by {k}`" for k in kinds) + (
        " lists them" if len(kinds) == 1 else " list them")


def no_match_text(con, dataset: str, projects=(), models=(), agents=(), tz: tzinfo = timezone.utc,
                  names: dict[str, str] | None = None) -> str:
    """Why a slice or filter selected nothing, for the line that says so: the project, model
    or agent no session has (when every value given of it is unknown), else the days the logs
    cover (`coverage_text`). ``names``: pseudonym -> what the user typed."""
    given = {"project": tuple(projects), "model": tuple(models), "agent": tuple(agents)}
    missing = {k: v for k, v in unmatched(con, dataset, projects, models, agents).items()
               if len(v) == len(given[k])}  # one value that matches, and its kind is not why nothing did
    if missing:
        return _unmatched_text(dataset, missing, names)
    return coverage_text(con, dataset, tz)


def make_filters(con, dataset: str, since: str | None = None, until: str | None = None, projects=(), models=(),
                 agents=(), tz_name: str = "UTC", key_file: Path | None = None, *, at: datetime | None = None,
                 note: Callable[[str], None] | None = None) -> Filters:
    """The `Filters` of the slice options' values (relative days counted back from ``at``, the
    current time by default). ``note`` receives what the caller should say (sessions that
    record no project, left out by --project)."""
    tz = zone(tz_name)
    fast = [m for m in models if m.endswith(FAST_SUFFIX)]
    if fast:  # `--by model`'s price key, not a recorded model: fast mode is no filter of its own
        raise SliceError(f"--model {fast[0]}: give the model without{FAST_SUFFIX} (--model "
                         f"{fast[0][:-len(FAST_SUFFIX)]}): a model's fast-mode responses count under it, and "
                         "`--by model` shows them apart")
    s = _day("--since", since, tz, at) if since else None
    u = _day("--until", until, tz, at) if until else None
    if s and u and s > u:
        raise SliceError(f"--since {since} ({s}) is after --until {until} ({u})")
    if projects and not store.records_projects(con, dataset):
        raise SliceError(no_project_message(con, dataset))
    names = project_pseudonyms(con, dataset, tuple(projects), key_file) if projects else {}
    if note is not None:
        _notes(con, dataset, tuple(names), names, tuple(models), tuple(agents), note)
    return Filters(since=s, until=u, projects=tuple(names), models=tuple(models), agents=tuple(agents),
                   tz=tz, project_names=names)


def _notes(con, dataset: str, projects: tuple, names: dict[str, str], models: tuple, agents: tuple,
           note: Callable[[str], None]) -> None:
    """The notes of `make_filters`: values that match nothing beside others that match (when none
    matches, the empty answer says so), and the sessions --project leaves out for having no project."""
    given = {"project": projects, "model": models, "agent": agents}
    missing = unmatched(con, dataset, projects, models, agents)
    partial = {k: v for k, v in missing.items() if len(v) < len(given[k])}
    if partial:
        note("note: " + _unmatched_text(dataset, partial, names))
    if not projects or "project" in missing and "project" not in partial:
        return
    skip = tuple(NO_PROJECT_AGENTS)
    stale = con.execute(f"SELECT count(*) FROM sessions WHERE dataset = ? AND project IS NULL AND agent NOT IN "
                        f"({', '.join('?' * len(skip))})", [dataset, *skip]).fetchone()[0]
    if stale:  # sessions of agents whose logs do record a project: ingested before ctxreplay kept it
        note(f"note: {stale:,} session(s) of {dataset} record no project (ingested before ctxreplay recorded "
             "projects, or from logs without a working directory) and are left out by --project; re-ingest them "
             "into a new database to include them")


def _day(flag: str, text: str, tz: tzinfo, at: datetime | None) -> date:
    try:
        return resolve_day(text, tz, at)
    except ValueError as e:
        raise SliceError(f"{flag}: {e}") from None


def make_slice(con, dataset: str, *args, **kw) -> dict[str, Any] | None:
    """The dataset slice the slice options select (`make_filters`' arguments), as a run stores
    it in its configuration (None: the whole dataset); see `slice_session_keys`."""
    return slice_of(make_filters(con, dataset, *args, **kw))


def load_slice(con, dataset: str, *args, **kw) -> tuple[dict[str, Any] | None, Dataset]:
    """(the slice of `make_slice`, the arrays of its sessions): what a replay runs on, in one step."""
    slc = make_slice(con, dataset, *args, **kw)
    return slc, load(con, dataset, slc)


def slice_of(f: Filters) -> dict[str, Any] | None:
    """`Filters` as a stored slice: ISO days, the time zone (an IANA name or a fixed offset
    `+HH:MM`, only with a date bound), sorted project pseudonyms (never a raw path), models and agents."""
    if not f.active():
        return None
    out: dict[str, Any] = {}
    if f.since:
        out["since"] = f.since.isoformat()
    if f.until:
        out["until"] = f.until.isoformat()
    if f.since or f.until:
        out["timezone"] = _zone_text(f.tz)
    for name in ("projects", "models", "agents"):
        v = sorted(set(getattr(f, name)))
        if v:
            out[name] = v
    return out


def _zone_text(tz: tzinfo) -> str:
    if tz == timezone.utc:
        return "UTC"
    key = getattr(tz, "key", None)
    if key:
        return key
    off = tz.utcoffset(datetime.now())
    minutes = int(off.total_seconds() // 60)
    return f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def slice_text(slc: dict[str, Any] | None) -> str:
    """A stored slice as options (`--since 2026-01-05 --agent codex`); '' for the whole dataset."""
    import shlex

    if not slc:
        return ""
    parts = []
    for key, flag in (("since", "--since"), ("until", "--until")):
        if slc.get(key):
            parts += [flag, slc[key]]
    for key, flag in (("projects", "--project"), ("models", "--model"), ("agents", "--agent")):
        for v in slc.get(key) or ():
            parts += [flag, v]
    if slc.get("timezone", "UTC") != "UTC":
        parts += ["--timezone", slc["timezone"]]
    return " ".join(shlex.quote(p) for p in parts)


# --- a stored slice's sessions ----------------------------------------------------------------

def load(con, dataset: str, slice: dict[str, Any] | None = None) -> Dataset:
    """The dataset's arrays: all its sessions, or those of ``slice`` (``slice_session_keys``)."""
    from replay.model.arrays import load_dataset

    if dataset not in store.dataset_names(con):
        known = ", ".join(store.dataset_names(con)) or "none (run `ctxreplay ingest` first)"
        raise store.StoreError(f"no dataset {dataset!r}; known: {known}")
    if not slice:
        return load_dataset(con, dataset)
    return load_dataset(con, dataset, session_keys=slice_session_keys(con, dataset, slice))


def _stored_zone(name: str) -> tzinfo:
    if name.upper() == "UTC":
        return timezone.utc
    m = re.fullmatch(r"([+-])(\d\d):(\d\d)", name)
    if m:
        off = timedelta(hours=int(m[2]), minutes=int(m[3]))
        return timezone(-off if m[1] == "-" else off)
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def slice_session_keys(con, dataset: str, slice: dict[str, Any]) -> list[str]:
    """The sessions of a dataset slice, sorted. A session is in the slice when its agent is one
    of ``agents`` (if given), its project is one of ``projects`` or a folder below one (if
    given), and it has at least one recorded request (any row of ``requests``, a resume's
    copies included) that is both of one of ``models`` (if given) and timestamped on a day in
    [``since``, ``until``] (inclusive, days in ``timezone``, UTC by default; with a date bound,
    requests without a timestamp do not count). Every request of a session in the slice is
    replayed, not only the matching ones. Raises ``StoreError`` when no session matches."""
    unknown = set(slice) - set(SLICE_KEYS)
    if unknown:
        raise store.StoreError(f"unknown slice key(s) {', '.join(sorted(unknown))}")
    since = date.fromisoformat(slice["since"]) if slice.get("since") else None
    until = date.fromisoformat(slice["until"]) if slice.get("until") else None
    tz = _stored_zone(slice.get("timezone") or "UTC")
    models, agents = set(slice.get("models") or ()), set(slice.get("agents") or ())
    projects = tuple(slice.get("projects") or ())
    has_project = store.records_projects(con)
    if projects and not store.records_projects(con, dataset):
        raise store.StoreError("this database records no project for its sessions, so it cannot be sliced by "
                               "project")
    rows = con.execute(
        # a request's day is its usage's, as `usage` dates it (schema 11: a response streamed across midnight)
        f"""SELECT s.session_key, s.agent, {'s.project' if has_project else 'NULL'},
                   {'coalesce(r.usage_ts, r.ts)' if has_column(con, 'requests', 'usage_ts') else 'r.ts'},
                   coalesce(r.model, '')
            FROM sessions s JOIN requests r USING (session_key) WHERE s.dataset = ?""", [dataset]).fetchall()
    keys: set[str] = set()
    for key, agent, project, ts, model in rows:
        if key in keys or (agents and agent not in agents) or (models and model not in models):
            continue
        if projects and not _in_projects(project, projects):
            continue
        if since or until:
            if ts is None or ts < 0:
                continue
            try:
                utc = datetime.fromtimestamp(ts / 1000, tz=timezone.utc)
            except (OverflowError, ValueError, OSError):
                continue  # no date: outside every date range
            try:
                day = utc.astimezone(tz).date()
            except (OverflowError, ValueError):  # a local date past year 9999: its UTC date
                day = utc.date()
            if (since and day < since) or (until and day > until):
                continue
        keys.add(key)
    if not keys:
        asked = ", ".join(f"{k} {', '.join(v) if isinstance(v, list) else v}" for k, v in sorted(slice.items())
                          if v and k != "timezone")
        why = no_match_text(con, dataset, projects, tuple(models), tuple(agents), tz)
        sep = ": " if why != coverage_text(con, dataset, tz) else "; "  # ": " a project, model or agent none has
        raise store.StoreError(f"no session of dataset {dataset!r} matches {asked or 'this slice'}{sep}{why}")
    return sorted(keys)


def coverage(con, dataset: str, tz: tzinfo = timezone.utc) -> tuple[str, str] | None:
    """(first, last) day (in ``tz``, UTC by default) the dataset's sessions cover, or None when
    it has no dated session."""
    lo, hi = con.execute("SELECT min(started_at), max(coalesce(ended_at, started_at)) FROM sessions "
                         "WHERE dataset = ?", [dataset]).fetchone()
    if lo is None or hi is None:
        return None

    def day(ms: int) -> str:
        utc = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
        try:
            return utc.astimezone(tz).date().isoformat()
        except (OverflowError, ValueError):  # a local date past year 9999: its UTC date
            return utc.date().isoformat()

    return day(lo), day(hi)


def coverage_text(con, dataset: str, tz: tzinfo = timezone.utc) -> str:
    """What the logs cover (days in ``tz``) and how to ask for it, for a filter that matched nothing."""
    got = coverage(con, dataset, tz)
    if got is None:
        return "its sessions carry no dates"
    return f"the logs span {got[0]} to {got[1]} ({tz_name(tz)}): ask for those days, e.g. --since {got[0]}"

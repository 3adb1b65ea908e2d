"""The system prefix a cold stream borrows from other sessions (``CacheConfig.system_prefix``).

A stream whose first request read nothing from cache does not show where Claude Code's first
breakpoint (tools + system prompt) ends; other streams of the same model and client version do,
through their first warm read. ``"dataset"`` takes the most frequent such read over the whole
dataset; ``"earlier"`` (the default) over the sessions that started before the stream's own, so
that ingesting later sessions never changes a replay (docs/replay-model.md, "System prefix").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from replay.model.costs import price_key
from replay.store.db import has_column

if TYPE_CHECKING:
    from replay.model.stream import Stream


def shared_system_prefixes(con, dataset: str) -> dict[tuple[str, str, bool], float]:
    """(model, client version, main stream?) -> the system prefix that streams of the whole
    dataset (not only the sessions loaded) show for them: the most frequent cache read of a
    stream's first request of the model where that read stopped inside the overhead (a warm
    system prompt and tools, cached by another session), ties to the shorter. Claude Code's
    tools and system prompt are the same for one client version and model, up to a few tokens
    of environment (git status, date), and this is where its first breakpoint ends
    (docs/replay-model.md, "System prefix"); a subagent or sidechain has its own, so main
    streams and the others are kept apart. A read that stopped inside the overhead is one
    shorter than the request's input total less the BPE size of its transcript blocks (an
    estimate of the overhead that needs no anchoring, so that a subset of sessions sees the
    same figures as the whole)."""
    return _modes(r[1:] for r in _first_warm_reads(con, dataset))


def _first_warm_reads(con, dataset: str) -> list[tuple[str, tuple[str, str, bool], int]]:
    """(session key, (price key, client version, main stream?), read) of every stream's first
    request of a model whose cache read stopped inside the overhead (see
    :func:`shared_system_prefixes`)."""
    if not has_column(con, "requests", "client_version"):
        return []
    rows = con.execute(
        """WITH f AS (
               SELECT r.session_key, r.stream_id, r.model, coalesce(r.speed = 'fast', false) AS fast,
                      r.client_version, r.position, r.partition, r.cache_read,
                      r.input_tokens + r.cache_write_5m + r.cache_write_1h + r.cache_read AS total,
                      row_number() OVER (PARTITION BY r.session_key, r.stream_id, r.model,
                                         coalesce(r.speed = 'fast', false) ORDER BY r.req_idx) AS rn
               FROM requests r JOIN sessions s USING (session_key)
               WHERE s.dataset = $ds AND r.has_usage AND r.model IS NOT NULL)
           SELECT f.session_key, f.model, f.fast, f.client_version, st.kind = 'main' AS main, f.cache_read
           FROM f JOIN streams st ON st.session_key = f.session_key AND st.stream_id = f.stream_id
                  LEFT JOIN blocks b ON b.session_key = f.session_key AND b.stream_id = f.stream_id
                                    AND b.partition = f.partition AND b.pos < f.position
           WHERE f.rn = 1 AND f.cache_read > 0 AND f.client_version IS NOT NULL
           GROUP BY f.session_key, f.stream_id, f.model, f.fast, f.client_version, st.kind, f.cache_read, f.total
           HAVING f.cache_read < f.total - coalesce(sum(b.tokens), 0)
           ORDER BY f.session_key, f.stream_id, f.model, f.fast""",
        {"ds": dataset}).fetchall()
    return [(key, (price_key(model, "fast" if fast else None), version, bool(main)), int(read))
            for key, model, fast, version, main, read in rows]


def _modes(rows) -> dict[tuple[str, str, bool], float]:
    """Per key, the most frequent read (ties to the shorter)."""
    counts: dict[tuple[str, str, bool], dict[int, int]] = {}
    for k, read in rows:
        c = counts.setdefault(k, {})
        c[read] = c.get(read, 0) + 1
    return {k: float(min(c, key=lambda v: (-c[v], v))) for k, c in counts.items()}


def _prior_modes(con, dataset: str, rows: list, by_session: dict) -> dict[str, dict]:
    """Per loaded session, :func:`_modes` over the sessions of the dataset that started before
    it (strictly: sessions with the same start see none of each other's reads), so that what a
    session's replay takes from other sessions is what its user could have known when it ran,
    and ingesting sessions that started later never changes it."""
    if not rows:
        return {}
    start = dict(con.execute("SELECT session_key, started_at FROM sessions WHERE dataset = $ds",
                             {"ds": dataset}).fetchall())
    never = 1 << 62  # a session without a start time sees nothing and is seen by nothing
    ordered = sorted(rows, key=lambda r: start.get(r[0]) if start.get(r[0]) is not None else never)
    out: dict[str, dict] = {}
    i = 0
    counts: dict[tuple, dict[int, int]] = {}
    modes: dict[tuple, float] = {}
    for key in sorted(by_session, key=lambda k: start.get(k) if start.get(k) is not None else never):
        t = start.get(key)
        if t is None:
            out[key] = {}
            continue
        while i < len(ordered) and start.get(ordered[i][0]) is not None and start[ordered[i][0]] < t:
            _, k, read = ordered[i]
            c = counts.setdefault(k, {})
            c[read] = c.get(read, 0) + 1
            modes[k] = float(min(c, key=lambda v: (-c[v], v)))
            i += 1
        out[key] = dict(modes)
    return out


def _assign_shared_prefix(st: Stream, shared: dict[tuple[str, str, bool], float], models: list[str],
                          into: dict[int, float], near: dict[int, float] | None = None) -> None:
    """Give each model whose first request in the stream read nothing the system prefix
    ``shared`` holds for its model, client version and stream kind, where that is shorter
    than the stream's overhead (written to ``into``); where ``shared`` has none for that
    version, the one of the nearest version it has for the model and stream kind, the closest
    earlier one first (written to ``near``: ``CacheConfig.prefix_versions = "nearest"``)."""
    seen: set[int] = set()
    for k in range(st.n_requests):
        m = st.r_model[k]
        if m in seen or not st.r_has_usage[k]:
            continue
        seen.add(m)
        if st.r_read[k] != 0 or not st.r_version or not 0 <= m < len(models):
            continue
        v = shared.get((models[m], st.r_version[k], st.kind == "main"))
        target = into
        if v is None and near is not None:
            v, target = _nearest_version(shared, models[m], st.r_version[k], st.kind == "main"), near
        if v is not None and v < st.overhead.get(m, 0.0):
            target[m] = v


def _version_tuple(v: str) -> tuple[int, ...]:
    """"2.1.37" -> (2, 1, 37); a part's non-digits are ignored."""
    out = []
    for part in v.split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def _nearest_version(shared: dict, model: str, version: str | None, main: bool) -> float | None:
    """The prefix ``shared`` holds for the version nearest ``version`` (same model and stream
    kind): the closest earlier version, else the closest later one."""
    if not version:
        return None
    mine = _version_tuple(version)
    best = None
    for (mod, ver, mn), v in shared.items():
        if mod != model or mn != main or not ver:
            continue
        t = _version_tuple(ver)
        rank = (t > mine, abs(_flat(t) - _flat(mine)))
        if best is None or rank < best[0]:
            best = (rank, v)
    return None if best is None else best[1]


def _flat(t: tuple[int, ...]) -> int:
    """A version as one number, for distances (up to 999 per part)."""
    return sum(x * 1000 ** (3 - i) for i, x in enumerate(t[:4]))

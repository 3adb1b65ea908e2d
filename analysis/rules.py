"""The two rules the recommendation applies before it names a configuration.

**Risk filter.** A *risk counter* counts an event after which the agent's context may not be
what the log shows it saw, so the counterfactual (the agent acts the same) may not hold:

* ``dangling_refs``: a reference hint pointing at content no longer in context;
* ``stale_refs``: a hint pointing at content that has changed since;
* ``trimmed_reread``: content a policy removed lossily (no copy of it left in context) that
  the agent read again later; a lossless removal cannot cause a re-read and never counts;
* every policy-specific figure a run stores (``run_sessions.extra``) whose name ends in
  ``_risk`` or ``_refs``, e.g. ``unseen_write_risk`` (read_range_dedup: a hint a shell
  command the trace could not attribute may have invalidated).

Every counter is treated alike: a run is dropped from the recommendation when any counter
exceeds its limit, and the default limit of every counter is 0. ``--max-risk NAME=N``
raises (or sets) the limit of one counter, or adds a limit on any other stored figure
(``busts``, ``hints``, ...). Not risk counters: ``hints``, ``hint_distance``,
``blocks_changed`` and ``tokens_saved`` (activity), ``range_unproven`` (hints whose identity
rests on an unbroken read range; the ones a write could have broken are ``unseen_write_risk``)
and ``busts`` (priced in the cost already).

**Too small to act on.** A saving is worth acting on when it is distinguishable (its 95%
interval excludes 0 and it exceeds the baseline's own error against the recorded bill; see
``analysis.intervals``) *and* it is at least ``MIN_SAVING_PER_SESSION`` per replayed session:
a cent of cost, or 1,000 context tokens (summed over a session's requests). Below that,
changing the agent's set-up costs more attention than it returns, so "no policy saves
enough to act on" is the recommendation.
"""

from __future__ import annotations

import json
from typing import Any

BASE_RISK_COUNTERS = ("dangling_refs", "stale_refs", "trimmed_reread")
RISK_SUFFIXES = ("_risk", "_refs")
MIN_SAVING_PER_SESSION = {"cost": 0.01, "context_tokens": 1000.0}
UNIT_TEXT = {"cost": "a cent ($0.01) of cost", "context_tokens": "1,000 context tokens"}


def is_risk_counter(name: str) -> bool:
    return name in BASE_RISK_COUNTERS or (":" not in name and name.endswith(RISK_SUFFIXES))


def extra_totals(con, dataset: str | None = None) -> dict[str, dict[str, float]]:
    """run_id -> the risk counters a policy stores beyond the fixed columns, summed over sessions."""
    where = "r.status = 'finished'" + (" AND r.dataset = $ds" if dataset else "")
    rows = con.execute(
        f"""SELECT rs.run_id, rs.extra FROM run_sessions rs JOIN runs r USING (run_id)
            WHERE {where} AND rs.extra IS NOT NULL AND rs.extra NOT IN ('{{}}', 'null')""",
        {"ds": dataset} if dataset else {}).fetchall()
    out: dict[str, dict[str, float]] = {}
    for run_id, text in rows:
        try:
            extra = json.loads(text)
        except (TypeError, ValueError):
            continue  # a damaged cell holds no counter: the fixed columns still apply
        if not isinstance(extra, dict):
            continue
        acc = out.setdefault(run_id, {})
        for k, v in extra.items():
            if is_risk_counter(k) and isinstance(v, (int, float)) and not isinstance(v, bool):
                acc[k] = acc.get(k, 0.0) + float(v)
    return out


def risk_of(row: dict) -> dict[str, float]:
    """Every risk counter of a compare row (the fixed ones, then the policy's own)."""
    if row.get("risk") is not None:
        return dict(row["risk"])
    f = row.get("figures") or {}
    return {k: float(f.get(k) or 0.0) for k in BASE_RISK_COUNTERS}


def known_figures() -> tuple[str, ...]:
    from replay.engine.loop import SESSION_FIGURES

    return tuple(SESSION_FIGURES)


def parse_limits(items: tuple[str, ...] | list[str]) -> dict[str, float]:
    """``NAME=N`` items as limits; NAME is a risk counter (by the rule above) or a stored figure."""
    from replay.policies.base import did_you_mean

    known = known_figures()
    out: dict[str, float] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--max-risk {item!r}: expected NAME=VALUE, e.g. unseen_write_risk=0")
        k, v = (s.strip() for s in item.split("=", 1))
        if k not in known and not is_risk_counter(k):
            raise ValueError(f"--max-risk: unknown figure {k!r}{did_you_mean(k, [*known, 'unseen_write_risk'])}; "
                             f"a risk counter is one of {', '.join(BASE_RISK_COUNTERS)} or a name ending in "
                             f"{' or '.join(RISK_SUFFIXES)}")
        try:
            out[k] = float(v)
        except ValueError:
            raise ValueError(f"--max-risk {item!r}: {v!r} is not a number") from None
    return out


def over_limits(row: dict, limits: dict[str, float] | None) -> list[dict[str, Any]]:
    """The counters (and limited figures) of ``row`` above their limit: [{counter, value, limit}].
    Every risk counter the row has is limited (default 0); ``limits`` overrides or adds."""
    limits = limits or {}
    values = risk_of(row)
    f = row.get("figures") or {}
    for k in limits:
        if k not in values:
            values[k] = float(f.get(k) or 0.0)
    out = []
    for k, v in values.items():
        lim = limits.get(k, 0.0) if is_risk_counter(k) else limits.get(k)
        if lim is not None and v > lim:
            out.append({"counter": k, "value": v, "limit": lim})
    return out


def limits_text(limits: dict[str, float] | None) -> str:
    """'every risk counter <= 0 (dangling_refs, ...); unseen_write_risk <= 80'."""
    limits = limits or {}
    changed = {k: v for k, v in limits.items() if not (is_risk_counter(k) and v == 0)}
    text = (f"every risk counter <= 0 ({', '.join(BASE_RISK_COUNTERS)} and any policy counter named *{RISK_SUFFIXES[0]}"
            f" or *{RISK_SUFFIXES[1]}, e.g. unseen_write_risk)")
    if changed:
        text += " except " + ", ".join(f"{k} <= {v:g}" for k, v in changed.items())
    return text


def min_saving(fig: str, sessions: int, per_session: float | None = None) -> float:
    """The smallest total saving worth acting on over ``sessions`` replayed sessions."""
    per = MIN_SAVING_PER_SESSION[fig] if per_session is None else per_session
    return per * max(int(sessions or 0), 0)


def worth_acting(saved: float | None, distinguishable: bool, fig: str, sessions: int,
                 per_session: float | None = None) -> bool:
    return bool(distinguishable and saved is not None and saved > 0
                and saved >= min_saving(fig, sessions, per_session))

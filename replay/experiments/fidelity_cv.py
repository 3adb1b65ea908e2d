"""Rules earned on held folds: the predictive ("model only") replay's client rules, each
switched off in turn, scored on folds of sessions the rule's data were not taken from.

A corpus is split into ``k`` folds by a keyed hash of the session key (``fold_of``). Every
setting is the default cache configuration with one rule changed; each is replayed model-only
(no observed eviction copied) and scored per fold: sessions within the fidelity targets, the
per-request read match and the corpus cost error. A rule that is a fixed behaviour (the
thinking switch, resume, task and skill turns, the turn-end write, unknown times, the clock)
takes nothing from the data, so its held-fold score is its score on each fold; the verdict asks
that it help on every fold, so that a rule derived on one half must hold on the other. A rule
that takes figures from other sessions (``system_prefix = "dataset"``) is scored with those
figures derived on the other folds only (``dataset (held)``).

The default *helps* against an alternative on a fold when no fewer requests match and the
sessions' model-only cost errors, summed without cancelling, are no larger, one of them
strictly; it *hurts* when it is worse on either. A default is *earned* when it helps on some
fold and hurts on none. ``bench/fidelity_cv.py`` prints the tables; docs/replay-model.md shows them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Iterable

from replay.engine import ReplayOptions
from replay.model.arrays import load_dataset
from replay.experiments.validate import FIGURES, TARGETS, _simulate, recorded_cost

# each client rule and the values it can take (replay/model/cache.py, CacheConfig)
ALTERNATIVES = {
    "thinking_switch": ("invalidate", "ignore"),
    "resume": ("invalidate", "ignore"),
    "task_turns": ("invalidate", "ignore"),
    "skill_turns": ("earned", "invalidate", "ignore"),
    "tool_search": ("invalidate", "ignore"),
    "warm_prefix": ("ttl", "kept"),
    "turn_end_write": ("earned", "v2", "always", "none"),
    "unknown_times": ("log", "model"),
    "clock": ("end", "send", "response"),
    "system_prefix": ("earlier", "dataset", "log", "overhead"),
    "prefix_versions": ("nearest", "same"),
}


def fold_of(session_key: str, k: int) -> int:
    """The fold of a session: a hash of its (already keyed) session key, modulo ``k``."""
    h = hashlib.blake2b(session_key.encode(), digest_size=8, person=b"ctxreplay-cv").digest()
    return int.from_bytes(h, "big") % k


@dataclass
class Score:
    sessions: int = 0
    within: int = 0
    requests: int = 0
    matched: int = 0
    recorded: float = 0.0
    simulated: float = 0.0
    abs_error: float = 0.0  # sum over sessions of |simulated - recorded| cost

    @property
    def match(self) -> float | None:
        return self.matched / self.requests if self.requests else None

    @property
    def cost_error(self) -> float | None:
        return self.simulated / self.recorded - 1 if self.recorded else None

    @property
    def abs_cost_error(self) -> float | None:
        """Per-session cost errors without cancelling: sum |simulated - recorded| / recorded."""
        return self.abs_error / self.recorded if self.recorded else None

    def as_dict(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "within_targets": self.within, "requests": self.requests,
                "matched": self.matched, "request_match": self.match, "cost_error": self.cost_error,
                "abs_cost_error": self.abs_cost_error,
                "recorded_cost": self.recorded, "simulated_cost": self.simulated}


def _per_session(con, dataset: str, opts: ReplayOptions, overrides: dict, keys: list[str] | None = None,
                 prefix_from: Iterable[str] | None = None, recorded: dict | None = None) -> dict[str, dict]:
    ds = load_dataset(con, dataset, session_keys=keys, prefix_from=prefix_from)
    cache = replace(opts.cache, observed_evictions="none", **overrides)
    sim = _simulate(ds, replace(opts, cache=cache))
    out = {}
    for key, s in sim.items():
        rec = recorded.get(key)
        if not rec or not rec["requests_with_usage"]:
            continue
        f = s["figures"]
        rel = {x: (f[x] - rec[x]) / rec[x] if rec[x] else (0.0 if f[x] == 0 else None) for x in FIGURES}
        out[key] = {"within": all(rel[x] is not None and abs(rel[x]) <= TARGETS[x] for x in FIGURES),
                    "requests": s["match"]["requests"], "matched": s["match"]["matched"],
                    "recorded": rec["cost"], "simulated": f["cost"]}
    return out


def _score(rows: dict[str, dict], keys: Iterable[str]) -> Score:
    sc = Score()
    for key in keys:
        r = rows.get(key)
        if r is None:
            continue
        sc.sessions += 1
        sc.within += r["within"]
        sc.requests += r["requests"]
        sc.matched += r["matched"]
        sc.recorded += r["recorded"]
        sc.simulated += r["simulated"]
        sc.abs_error += abs(r["simulated"] - r["recorded"])
    return sc


def compare(on: Score, off: Score) -> str:
    """"helps", "hurts" or "same": a setting (``on``) against another (``off``) on one fold, by
    the requests matched and the sessions' cost errors summed without cancelling
    (``abs_cost_error``: a corpus-wide net error can improve by adding an error of the other
    sign, so it is printed but does not decide)."""
    if on.requests == 0 or on.abs_cost_error is None or off.abs_cost_error is None:
        return "same"
    dm = on.matched - off.matched
    dc = off.abs_cost_error - on.abs_cost_error  # > 0: nearer the bill, session by session
    eps = 1e-6
    if dm < 0 or dc < -eps:
        return "hurts"
    if dm > 0 or dc > eps:
        return "helps"
    return "same"


SPLITS = ("fold", "time", "version")


def split_sessions(con, dataset: str, keys: list[str], split: str, train: float = 0.7) -> list[list[str]]:
    """[earlier, later] sessions: by start time (``time``: sorted by (started_at, key)) or by the
    newest client version a session's requests give (``version``: sessions of one version stay on
    one side; a session without a version counts as the oldest), the first ``train`` share
    earlier. What is derived on the earlier part is judged on the later one only."""
    rows = con.execute("SELECT session_key, coalesce(started_at, 0) FROM sessions WHERE dataset = ?",
                       [dataset]).fetchall()
    start = dict(rows)
    if split == "time":
        order = sorted(keys, key=lambda k: (start.get(k, 0), k))
        cut = int(round(train * len(order)))
        return [order[:cut], order[cut:]]
    from replay.engine.calibration import version_tuple
    vers: dict[str, tuple] = {}
    for key, v in con.execute("SELECT session_key, client_version FROM requests r JOIN sessions s USING "
                              "(session_key) WHERE s.dataset = ? AND client_version IS NOT NULL",
                              [dataset]).fetchall():
        t = version_tuple(v) or ()
        vers[key] = max(vers.get(key, ()), t)
    order = sorted(keys, key=lambda k: (vers.get(k, ()), start.get(k, 0), k))
    cut = int(round(train * len(order)))
    while 0 < cut < len(order) and vers.get(order[cut], ()) == vers.get(order[cut - 1], ()):
        cut += 1  # one version on one side
    return [order[:cut], order[cut:]]


def cross_validate(con, dataset: str, opts: ReplayOptions, k: int = 2, progress=None, split: str = "fold",
                   train: float = 0.7) -> dict[str, Any]:
    """Every setting scored on each of ``k`` folds (``split = "fold"``), or on the earlier and
    later sessions by start time or client version (``"time"``, ``"version"``: the verdicts are
    taken on the later part only, and the naive predictors are scored beside the default);
    rules' verdicts. ``opts.cache`` is the configuration the rules are toggled from (normally
    the defaults)."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r}; known: {', '.join(SPLITS)}")
    recorded = recorded_cost(con, dataset, opts.prices)["per_session"]
    keys = [key for key, r in recorded.items() if r["requests_with_usage"]]
    if split == "fold":
        folds = [[key for key in keys if fold_of(key, k) == f] for f in range(k)]
    else:
        folds, k = split_sessions(con, dataset, keys, split, train), 2
    base = opts.cache.as_dict()
    settings: dict[str, dict] = {"default": {}}
    for rule, values in ALTERNATIVES.items():
        for v in values:
            if v != base[rule]:
                settings[f"{rule}={v}"] = {rule: v}
    steps = len(settings) + k
    scores: dict[str, list[Score]] = {}
    for name, ov in settings.items():
        rows = _per_session(con, dataset, opts, ov, recorded=recorded)
        scores[name] = [_score(rows, fk) for fk in folds]
        if progress:
            progress(name, steps)
    # the dataset-wide system prefix derived on the other folds only
    held = []
    for f in range(k):
        train = [key for g in range(k) if g != f for key in folds[g]]
        rows = _per_session(con, dataset, opts, {"system_prefix": "dataset"}, keys=folds[f], prefix_from=train,
                            recorded=recorded)
        held.append(_score(rows, folds[f]))
        if progress:
            progress(f"dataset (held) fold {f}", steps)
    scores["system_prefix=dataset (held)"] = held
    if split != "fold":  # the naive predictors, beside the default on each part
        from replay.experiments.validate import NAIVE, naive_config
        for name in NAIVE:
            cfg = naive_config(opts.cache, name)
            rows = _per_session(con, dataset, replace(opts, cache=cfg), {}, recorded=recorded)
            scores[f"naive:{name}"] = [_score(rows, fk) for fk in folds]
    # the default against each alternative, fold by fold: "helps" where the default is better
    verdicts = {name: [compare(d, a) for d, a in zip(scores["default"], sc)]
                for name, sc in scores.items() if name != "default"}
    if split != "fold":  # earned on the later part: derived on the earlier one, judged on the later
        verdicts = {name: ["(earlier)", vs[1]] for name, vs in verdicts.items()}
    total = {name: _sum(sc) for name, sc in scores.items()}
    return {"dataset": dataset, "k": k, "split": split, "cache_config": base, "sessions": len(keys),
            "folds": [len(f) for f in folds],
            "scores": {name: [s.as_dict() for s in sc] for name, sc in scores.items()},
            "total": {name: s.as_dict() for name, s in total.items()},
            "verdicts": verdicts,
            "earned": {name: all(v != "hurts" for v in vs if v != "(earlier)") and any(v == "helps" for v in vs)
                       for name, vs in verdicts.items()}}


def _sum(scores: list[Score]) -> Score:
    t = Score()
    for s in scores:
        for f in ("sessions", "within", "requests", "matched", "recorded", "simulated", "abs_error"):
            setattr(t, f, getattr(t, f) + getattr(s, f))
    return t


def markdown(res: dict[str, Any]) -> str:
    """The table of one corpus: per setting, per fold and in total, sessions within targets,
    requests matched and the model-only cost error; then each rule's verdict per fold."""
    k = res["k"]
    names = [f"fold {f}" for f in range(k)] if res.get("split", "fold") == "fold" else \
        [f"earlier by {res['split']}", f"later by {res['split']}"]
    head = " | ".join(f"{name} ({n})" for name, n in zip(names, res["folds"]))
    lines = [f"| setting (model only) | {head} | all |", "|---|" + "---|" * (k + 1)]

    def cell(s: dict) -> str:
        m = "—" if s["request_match"] is None else f"{100 * s['request_match']:.2f}%"
        c = "—" if s["cost_error"] is None else f"{100 * s['cost_error']:+.2f}%"
        a = "—" if s["abs_cost_error"] is None else f"{100 * s['abs_cost_error']:.2f}%"
        return f"{s['within_targets']}/{s['sessions']}, {m}, {c} ({a})"

    for name, sc in res["scores"].items():
        lines.append(f"| {name} | " + " | ".join(cell(s) for s in sc) + f" | {cell(res['total'][name])} |")
    lines.append("")
    lines.append("| default against | " + " | ".join(names) + " | default earned |")
    lines.append("|---|" + "---|" * (k + 1))
    for name, vs in res["verdicts"].items():
        lines.append(f"| {name} | " + " | ".join(vs) + f" | {'yes' if res['earned'][name] else 'no'} |")
    return "\n".join(lines)

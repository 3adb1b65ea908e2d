"""The provider's own account of cache misses as labels for the cache model's predictions.

From Claude Code 2.1.119 a response may carry ``message.diagnostics.cache_miss_reason``: the
provider says the request missed the cache and why (``trace.MISS_REASONS``). In those client
versions a response without one is the provider saying nothing missed, so every request of a
reporting version is labelled. A replay *predicts a miss* at a request when its simulated read
falls short of the prefix the previous request cached as the log records it (its read plus its
writes; its uncached tail was never cached) by more than max(256 tokens, 1%), the tolerance
`breaks` uses. Per variant (or naive
predictor) the labels give a confusion table (both say miss; the provider only: a miss the
replay did not predict; the replay only: a predicted miss the provider did not report), per
reason the share of its misses the replay predicted, and per client version the same.

A miss whose reason is ``unavailable`` is the provider's own (no client change, no expiry); it
is counted as a miss like the others: a model cannot predict it, which is what the table shows.
"""

from __future__ import annotations

from typing import Any

from replay.engine.calibration import version_tuple
from replay.model.arrays import Dataset

# the first client version that writes the provider's reasons (docs/replay-model.md)
REASONS_FROM = (2, 1, 119)
MIN_TOLERANCE = 256.0
REL_TOLERANCE = 0.01


def reports_reasons(version: str | None) -> bool:
    v = version_tuple(version)
    return v is not None and v >= REASONS_FROM


def labelled_requests(ds: Dataset) -> list[tuple[str, int, int, int, str | None, str | None, float]]:
    """Per request of a reporting client version with usage and an earlier request with usage
    in its stream: (session key, flat index in the session's detail rows, stream id, request
    index, reason or None, client version, the prefix the previous request cached: its recorded
    read plus writes)."""
    out = []
    for s in ds.sessions:
        flat = 0
        for st in s.streams:
            prev = None
            for k in range(st.n_requests):
                i = flat + k
                if not st.r_has_usage[k]:
                    continue
                version = st.r_version[k] if st.r_version else None
                if prev is not None and reports_reasons(version):
                    total = float(st.r_w5[prev] + st.r_w1h[prev] + st.r_read[prev])
                    reason = st.r_miss[k] if st.r_miss else None
                    out.append((s.session_key, i, st.stream_id, k, reason, version, total))
                prev = k
            flat += st.n_requests
    return out


def _predicted_miss(sim_read: float, prev_cached: float) -> bool:
    return sim_read < prev_cached - max(MIN_TOLERANCE, REL_TOLERANCE * prev_cached)


def _confusion() -> dict[str, int]:
    return {"requests": 0, "provider_misses": 0, "both": 0, "provider_only": 0, "replay_only": 0}


def score(ds: Dataset, sims: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per variant name in ``sims`` (``validate._simulate`` results: per session a ``detail``
    with a ``cache_read`` row per request): the confusion table against the provider's
    reasons, per reason and per client version. Empty (``requests`` 0) when no request is of
    a reporting client version."""
    labels = labelled_requests(ds)
    res: dict[str, Any] = {"from_version": ".".join(map(str, REASONS_FROM)), "requests": len(labels),
                           "provider_misses": sum(1 for x in labels if x[4] is not None), "variants": {}}
    for name, sim in sims.items():
        total = _confusion()
        by_reason: dict[str, dict[str, int]] = {}
        by_version: dict[str, dict[str, int]] = {}
        for key, i, _sid, _k, reason, version, prev_cached in labels:
            predicted = _predicted_miss(sim[key]["detail"]["cache_read"][i], prev_cached)
            for c in (total, by_version.setdefault(version or "?", _confusion())):
                c["requests"] += 1
                c["provider_misses"] += reason is not None
                c["both"] += reason is not None and predicted
                c["provider_only"] += reason is not None and not predicted
                c["replay_only"] += reason is None and predicted
            if reason is not None:
                r = by_reason.setdefault(reason, {"misses": 0, "predicted": 0})
                r["misses"] += 1
                r["predicted"] += predicted
        for c in (total, *by_version.values()):
            _rates(c)
        res["variants"][name] = {**total, "by_reason": dict(sorted(by_reason.items())),
                                 "by_version": dict(sorted(by_version.items(),
                                                           key=lambda kv: version_tuple(kv[0]) or ()))}
    return res


def _rates(c: dict[str, Any]) -> None:
    """recall: the provider's misses the replay predicted; precision: the replay's predicted
    misses the provider reported; agreement: requests where both say the same."""
    predicted = c["both"] + c["replay_only"]
    c["recall"] = c["both"] / c["provider_misses"] if c["provider_misses"] else None
    c["precision"] = c["both"] / predicted if predicted else None
    c["agreement"] = 1 - (c["provider_only"] + c["replay_only"]) / c["requests"] if c["requests"] else None

"""The baseline's fidelity under each cache-model variant, side by side.

``calibrated`` (the default every run uses) replays the cache misses the log records;
``model_only`` leaves them out, so it shows what the TTL/breakpoint model predicts on its
own. Both come from one ``replay.experiments.validate.validate`` report.
"""

from __future__ import annotations

from typing import Any

FIGURES = ("input_total", "cache_read", "cache_write", "cost")
NAMES = {"calibrated": "calibrated", "model_only": "model only"}
SESSION_ERRORS = {"calibrated": "rel_error", "model_only": "rel_error_model_only"}


def _within(rel: dict | None, targets: dict[str, float]) -> bool:
    return bool(rel) and all(rel.get(f) is not None and abs(rel[f]) <= targets[f] for f in targets)


def variant_fidelity(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """variant -> {rel_error, recorded, simulated, sessions, sessions_within_targets} for the
    calibrated and model-only variants of a validate report (sessions without recorded usage
    are left out, as in the report's overall figures)."""
    targets = report.get("targets") or {}
    o = report["overall"]
    checked = [s for s in report.get("sessions", []) if s.get("usage_recorded", True)]
    out = {}
    for name in ("calibrated", "model_only"):
        v = (report.get("variants") or {}).get(name)
        if v is None:
            continue
        rel = v.get("rel_error", v) if isinstance(v, dict) else {}
        rel = {f: rel.get(f) for f in FIGURES}
        within = v.get("sessions_within_targets") if isinstance(v, dict) else None
        if within is None and targets:
            key = SESSION_ERRORS[name]
            if all(key in s for s in checked):
                within = sum(1 for s in checked if _within(s[key], targets))
        if name == "calibrated" and within is None:
            within = o.get("sessions_within_targets")
        recorded = o["recorded"]
        simulated = (o["simulated"] if name == "calibrated" else
                     {f: (recorded[f] * (1 + rel[f]) if rel.get(f) is not None else None) for f in FIGURES})
        out[name] = {"rel_error": rel, "recorded": recorded, "simulated": simulated,
                     "sessions": o.get("sessions", len(checked)), "sessions_within_targets": within}
    return out

"""A sweep spec's keys checked for their TOML types before anything reads them (`load_spec`)."""

from __future__ import annotations

import math
from pathlib import Path


class SpecError(ValueError):
    """A sweep spec that cannot be used; the message names the file and key."""


def check_shapes(path: Path, data: dict) -> None:
    """Each key of the right TOML type (a list or number where a name belongs ended in a
    traceback, a bad [random] range at the first sample)."""
    for k in ("name", "policy", "dataset", "prices"):
        if k in data and not isinstance(data[k], str):
            raise SpecError(f"{path}: {k} must be a string, got {data[k]!r}")
    for k in ("params", "grid", "cache", "random"):
        if k in data and not isinstance(data[k], dict):
            raise SpecError(f"{path}: {k} must be a table ([{k}]), got {data[k]!r}")
    rnd = data.get("random", {})
    for k in ("samples", "seed"):
        v = rnd.get(k, 0)
        if isinstance(v, bool) or not isinstance(v, int) or (k == "samples" and v < 0):
            raise SpecError(f"{path}: [random] {k} must be an integer{' >= 0' if k == 'samples' else ''}, got {v!r}")
    ranges = rnd.get("params", {})
    if not isinstance(ranges, dict):
        raise SpecError(f"{path}: [random.params] must be a table of NAME = {{low, high}} or {{choices}}")
    for name, r in ranges.items():
        where = f"{path}: [random.params] {name}"
        unknown = sorted(set(r) - {"choices", "low", "high", "int"}) if isinstance(r, dict) else []
        if unknown:
            raise SpecError(f"{where}: unknown key(s) {', '.join(unknown)}; a range is {{low = A, high = B}} "
                            "(int = true for integers) or {choices = [...]}")
        if not isinstance(r, dict) or not (set(r) <= {"choices"} or set(r) <= {"low", "high", "int"}):
            raise SpecError(f"{where} must be {{choices = [...]}} or {{low = A, high = B}} (int = true for integers)")
        if "choices" in r:
            if not isinstance(r["choices"], list) or not r["choices"]:
                raise SpecError(f"{where}: choices must be a non-empty list")
            continue
        lo, hi = r.get("low"), r.get("high")
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) for v in (lo, hi)) \
                or lo > hi:
            raise SpecError(f"{where}: low and high must be finite numbers with low <= high, got {lo!r} and {hi!r}")
        if r.get("int") and not all(float(v).is_integer() for v in (lo, hi)):
            raise SpecError(f"{where}: int = true needs whole numbers for low and high, got {lo!r} and {hi!r}")
        if not isinstance(r.get("int", False), bool):
            raise SpecError(f"{where}: int must be true or false")


def check_ranges(path: Path, policy: str, random: dict, params: dict | None = None) -> None:
    """A numeric [random.params] range for a parameter that takes words or true/false is named as
    such (it failed at a sampled value: "got 4.03181761176121")."""
    from replay.policies import build
    from replay.policies.base import ParamError

    from replay.policies import did_you_mean

    ranges = random.get("params", {})
    if not ranges:
        return
    try:
        defaults = vars(build(policy, params or {}).params)  # the spec's own [params]: a pipeline needs its steps
    except (ParamError, ValueError):  # the points, built next, say what is wrong with them
        return
    for name, r in ranges.items():
        if name not in defaults:  # `tune` samples them one trial at a time: it failed there, in a traceback
            raise SpecError(f"{path}: [random.params] {name}: {policy} has no such parameter"
                            f"{did_you_mean(name, sorted(defaults))}")
        if "choices" not in r and isinstance(defaults.get(name), (str, bool)):
            raise SpecError(f"{path}: [random.params] {name} takes {type(defaults[name]).__name__} values "
                            f"(its default: {defaults[name]!r}): give {{choices = [...]}}, not a numeric range")

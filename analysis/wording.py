"""How the report words a configuration and its figures: non-default settings and their
values, the TTL, money, percentages and intervals.

`analysis.answer`, `analysis.tables` and `analysis.sweep_best` all print these; they sit below
the three (which import nothing from each other for them), and `answer` and `tables` re-export
the names their importers use.
"""

from __future__ import annotations


def non_default(policy: str, params: dict) -> dict:
    """The parameters of a run that differ from the policy's source defaults."""
    import dataclasses

    from replay.policies import REGISTRY

    cls = REGISTRY.get(policy)
    if cls is None and policy in ("bound_insert", "bound_retro"):
        from replay.experiments.bound import InsertBound, LosslessBound

        cls = InsertBound if policy == "bound_insert" else LosslessBound
    if cls is None or policy == "pipeline":
        return params
    defaults = {f.name: f.default for f in dataclasses.fields(cls.Params)
                if f.default is not dataclasses.MISSING}
    out = {}
    for k, v in params.items():
        d = defaults.get(k, object())
        if (list(d) if isinstance(d, tuple) else d) != v:
            out[k] = v
    return out


# parameter values that read better as words (the policy's own docstring defines them)
VALUE_NAMES = {("devboy_lru", "capacity"): {0: "unbounded", None: "unbounded"}}


def show_value(policy: str, key: str, value) -> str:
    """A parameter value as the report prints it (e.g. devboy_lru capacity 0 -> unbounded)."""
    names = VALUE_NAMES.get((policy, key), {})
    try:
        if value in names:
            return names[value]
    except TypeError:  # unhashable (lists)
        pass
    return str(value)


def ttl_text(cache: dict) -> str:
    ttl = cache.get("ttl", "log")
    return "TTL as logged" if ttl == "log" else f"TTL {ttl}"


# One sign convention in the report, its charts and the notebooks: the ASCII hyphen-minus
# (`-$1.20`, `-0.64%`), never the Unicode minus beside it; a value that rounds to zero carries
# no minus (`$0.00`, `+0.00%`: the `z` of Python's format spec), so `-0.00` never shows.


def money(v: float | None, fig: str) -> str:
    if v is None:
        return "-"
    if fig == "cost":
        text = f"{abs(v):,.2f}"
        return f"-${text}" if v < 0 and float(text.replace(",", "")) != 0 else f"${text}"
    return f"{v:z,.0f} tokens"


def pct(v: float | None, nd: int = 2) -> str:
    return "-" if v is None else f"{100 * v:+z.{nd}f}%"


def interval_text(i: dict | None, nd: int = 2) -> str:
    return "-" if not i else f"{pct(i['low'], nd)} to {pct(i['high'], nd)}"

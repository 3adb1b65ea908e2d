"""The policy interface: a small class the engine drives block by block and request by request.

A policy has a name, a source, a one-sentence docstring (its ``summary``), a frozen ``Params``
dataclass (documented fields, source defaults) and may be
* insert-time: ``on_append(ctx, i, size) -> size`` decides what block ``i`` costs when it is
  appended (e.g. a reference hint instead of a repeated tool result); earlier blocks never
  change, so the cached prefix stays valid;
* retroactive: ``before_request(ctx, k)`` may shrink earlier blocks with ``ctx.set_size``;
  the engine tracks the first changed position and the cache model busts from there.
Sizes a policy inserts (stubs, hints, placeholders, summaries) are given in o200k tokens and
converted to the stream's units (provider tokens) with ``ctx.units``.
Hooks that a policy does not override cost nothing: the engine only calls what is overridden.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any, ClassVar

from replay.model.arrays import Stream, Vocab

METRICS = (
    "hints",             # reference hints emitted (insert-time dedup)
    "dangling_refs",     # hints pointing at content no longer in context
    "hint_distance",     # sum over hints of the distance in user turns to the original
    "trimmed_reread",    # blocks removed lossily (gone from context) whose resource the agent read again later
    "stale_refs",        # hints pointing at content that has since changed (must be 0)
    "blocks_changed",    # blocks whose size the policy changed
    "tokens_saved",      # tokens removed at the moment of each change (per change, not per request)
)


class ParamError(ValueError):
    """An unknown or invalid parameter; the message names it and suggests the closest one."""


def did_you_mean(name: str, choices: list[str] | tuple[str, ...]) -> str:
    m = difflib.get_close_matches(name, list(choices), n=1)
    return f"; did you mean {m[0]!r}?" if m else ""


class Context:
    """The engine's per-stream state exposed to a policy."""

    __slots__ = ("stream", "vocab", "eff", "running", "changed_from", "metrics", "state", "k", "side")

    def __init__(self, stream: Stream, vocab: Vocab, metrics: dict[str, float]):
        self.stream = stream
        self.vocab = vocab
        self.eff: list[float] = list(stream.tokens)
        self.running = 0.0
        self.changed_from: int | None = None
        self.metrics = metrics
        self.state: dict[str, Any] = {}
        self.k = -1
        # extra API calls the policy makes (a summarization request): (model code, uncached
        # input, cache read, output) each, priced by the engine after the stream's requests
        self.side: list[tuple[int, float, float, float]] = []

    def units(self, o200k_tokens: float) -> float:
        """A size given in o200k tokens (a stub, hint, placeholder or summary a policy inserts)
        in the stream's units: block sizes are provider tokens (anchored to the recorded
        usage), ``stream.bpe_ratio`` provider tokens per o200k token (the stream's median;
        1.0 when nothing was anchored). Every size a policy inserts goes through here, so that
        it is priced in the same units as the blocks it replaces."""
        r = self.stream.bpe_ratio
        return o200k_tokens * r if r > 0 else o200k_tokens

    def set_size(self, pos: int, size: float) -> None:
        """Retroactively change a block already in context (only blocks before the request)."""
        old = self.eff[pos]
        if size == old:
            return
        self.eff[pos] = size
        self.running += size - old
        if self.changed_from is None or pos < self.changed_from:
            self.changed_from = pos
        self.metrics["blocks_changed"] += 1
        self.metrics["tokens_saved"] += old - size


class Policy:
    """Base class. Subclasses set name, source, a docstring, Params and override the hooks they need."""

    name: ClassVar[str] = ""
    source: ClassVar[str] = ""
    # one line for listings: a named policy's class docstring, unless it sets a summary
    summary: ClassVar[str] = ""
    # block kinds (KIND_CODE values) on_append needs to see; None = every block. The engine
    # skips the call for other kinds, which matters in sweeps (it runs per block per config).
    append_kinds: ClassVar[frozenset[int] | None] = None

    @dataclass(frozen=True)
    class Params:
        pass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and "summary" not in cls.__dict__:
            cls.summary = " ".join((cls.__doc__ or "").split())

    def __init__(self, params: "Policy.Params | None" = None):
        self.params = params if params is not None else self.Params()

    # hooks -------------------------------------------------------------------------
    def start_stream(self, ctx: Context) -> None:
        """Called before the first block of each stream."""

    def on_compaction(self, ctx: Context, pos: int) -> None:
        """Called when a new compaction partition starts at block ``pos``."""

    def on_append(self, ctx: Context, i: int, size: float) -> float:
        """Insert-time: the size block ``i`` has in context from now on."""
        return size

    def append_filter(self, ctx: Context) -> tuple[Any, Any] | None:
        """Insert-time, optional: (a hashable key, a predicate on block positions) such that
        ``on_append`` returns the size unchanged and changes no state for every block of
        ``append_kinds`` the predicate rejects. The prefix-sum walker then never calls it there
        (the list of positions is built once per stream and key, and shared by every
        configuration with that key). None: every block of ``append_kinds``."""
        return None

    def before_request(self, ctx: Context, k: int) -> None:
        """Retroactive: change earlier blocks with ``ctx.set_size`` before request ``k``."""

    def overhead(self, ctx: Context, overhead: float) -> float:
        """The stream's fixed overhead (system prompt + tools) under this policy."""
        return overhead

    # introspection -------------------------------------------------------------------
    @classmethod
    def insert_time(cls) -> bool:
        return cls.on_append is not Policy.on_append

    @classmethod
    def retroactive(cls) -> bool:
        return cls.before_request is not Policy.before_request

    @classmethod
    def param_fields(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls.Params))

    @classmethod
    def make_params(cls, values: dict[str, Any]) -> "Policy.Params":
        names = [f.name for f in cls.param_fields()]
        for k in values:
            if k not in names:
                raise ParamError(f"policy {cls.name!r} has no parameter {k!r}{did_you_mean(k, names)} "
                                 f"(parameters: {', '.join(names) or 'none'})")
        types = {f.name: f.type for f in cls.param_fields()}
        coerced = {k: coerce(k, v, types[k]) for k, v in values.items()}
        try:
            return cls.Params(**coerced)
        except (TypeError, ValueError) as e:
            raise ParamError(f"policy {cls.name!r}: {e}") from e


# Params validation helpers, for a frozen Params dataclass's __post_init__ -----------------
def as_tuples(params: Any, *names: str) -> None:
    """Make the named fields tuples: a string is split at commas ("Read, Grep"), a list converted."""
    for f in names:
        v = getattr(params, f)
        if isinstance(v, str):
            object.__setattr__(params, f, tuple(x.strip() for x in v.split(",") if x.strip()))
        elif not isinstance(v, tuple):
            object.__setattr__(params, f, tuple(v))


def non_negative(params: Any, *names: str) -> None:
    """Reject a negative value in any of the named fields."""
    for f in names:
        if getattr(params, f) < 0:
            raise ValueError(f"{f} must be >= 0")


def one_of(params: Any, name: str, allowed: tuple[str, ...]) -> None:
    """Reject a value of the named field that is not one of ``allowed``."""
    v = getattr(params, name)
    if v not in allowed:
        raise ValueError(f"{name} = {v!r}; allowed: {', '.join(allowed)}")


def _typed(name: str, value: Any, t: str) -> Any:
    """A value given typed (a spec's TOML, a Python call) checked against the declared type: a
    bool is an int to Python, so `capacity = true` ran as capacity 1, and `mutation_aware = 1`
    as true. An int is a number where a float is declared."""
    if value is None and "None" in t:
        return None
    if t.startswith("bool"):
        if not isinstance(value, bool):
            raise ParamError(f"parameter {name!r} must be true or false, got {value!r}")
    elif t.startswith("int"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ParamError(f"parameter {name!r} must be an integer{' or none' if 'None' in t else ''}, got {value!r}")
    elif t.startswith("float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParamError(f"parameter {name!r} must be a number{' or none' if 'None' in t else ''}, got {value!r}")
    return value


def coerce(name: str, value: Any, typ: Any) -> Any:
    """Turn `--set key=value` strings into the parameter's declared type."""
    t = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    if not isinstance(value, str):
        if "tuple" in t and isinstance(value, list):
            return tuple(value)
        return _typed(name, value, t)
    v = value.strip()
    try:
        if t.startswith("bool"):
            if v.lower() in ("true", "1", "yes", "on"):
                return True
            if v.lower() in ("false", "0", "no", "off"):
                return False
            raise ValueError(v)
        if t.startswith(("int", "float")) and "None" in t and v.lower() in ("none", "null"):
            return None  # an empty value (`--set capacity=`) is a slip, not "no limit": int("") says so
        if t.startswith("int"):
            return int(v)
        if t.startswith("float"):
            return float(v)
        if "tuple" in t:
            return tuple(x.strip() for x in v.split(",") if x.strip())
    except ValueError:
        raise ParamError(f"parameter {name!r}: cannot read {value!r} as {t}"
                         + ("; give none for no limit" if "None" in t and not v else "")) from None
    return v

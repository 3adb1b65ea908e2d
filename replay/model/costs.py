"""Per-model token prices, built once per run from a pinned price library plus user overrides.

Rates come from genai-prices (its version is recorded with every run), resolved at a pinned
``price_date`` so a run is reproducible. A user TOML file may override or add models:

    [models."claude-opus-4-8"]          # $ per million tokens
    input = 5.0
    cache_write_5m = 6.25
    cache_write_1h = 10.0
    cache_read = 0.5
    output = 25.0
    min_cacheable = 4096                # optional: minimum cacheable prefix (tokens)

A model name the trace does not keep (not a public model id: `replay.ingest.identifiers.kept_model`)
is stored as its keyed pseudonym ``model-<8 hex>``. The price file still names the raw model:
its names are mapped through the dataset key when the table meets a pseudonym
(``PriceTable.for_dataset(keys)``, or ``bind(dataset, key_file)``, which every command that
prices calls once it knows its dataset; without either, the key of ``$CTXREPLAY_KEY_FILE`` or
``~/.config/ctxreplay/key``, never created here, for dataset ``default``), and ``describe()``,
which runs store, writes such a name as its pseudonym.

Long-context tiers (e.g. a higher price above 200k input tokens) are kept when the library
has them and applied to a whole request whose input exceeds the threshold.

Fast mode (Anthropic's ``speed: "fast"``): a request whose usage says ``"speed": "fast"`` is
priced at fast-mode rates. The trace keeps it as a price key, ``price_key(model, "fast")`` =
``"MODEL (fast)"``, which is a model of its own for the replay (its own rates, and its own
cache entries: Claude Code's prompt-caching docs list toggling fast mode among the actions
that invalidate the cache). Fast rates come from, in order: a ``fast`` table under the model
in the price file (``[models."claude-opus-4-6".fast]`` with the five rates), the price
library's conditional ``speed = "fast"`` price (genai-prices has it for Opus 4.8 and later),
then ``FAST_MODE_RATES`` below; a fast request of any other model is an error that shows
the TOML to add. Every request, recorded or simulated, is priced on its own
(``PriceTable.rates(key).cost``), so tiers apply per request.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import tomllib
from dataclasses import asdict, dataclass, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from replay.ingest.identifiers import kept_model, model_pseudonym
from replay.model.rate_limits import MAX_RATE  # also imported from here by `replay.cli.usage`

DEFAULT_PRICE_DATE = "2026-11-01"
RATE_FIELDS = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")

FAST_SUFFIX = " (fast)"

# Fast-mode rates the price library (genai-prices 0.2.3) lacks, $ per million tokens, by model
# name prefix. Source: Anthropic, "Speed up responses with fast mode" (Claude Code docs,
# https://code.claude.com/docs/en/fast-mode): "Fast mode pricing is $10/$50 MTok on Opus 4.8 and
# $30/$150 MTok on Opus 4.7 and Opus 4.6"; the API's fast-mode page
# (https://platform.claude.com/docs/en/build-with-claude/fast-mode): 6x standard Opus rates
# across the full context window, and fast-mode pricing stacks with the other pricing
# modifiers, so the prompt-caching multipliers apply on top (5m write 1.25x, 1h write 2x,
# read 0.1x of the fast input rate). Opus 4.8 and later are in the library.
FAST_MODE_RATES: dict[str, dict[str, float]] = {
    prefix: {"input": 30.0, "cache_write_5m": 37.5, "cache_write_1h": 60.0, "cache_read": 3.0, "output": 150.0}
    for prefix in ("claude-opus-4-6", "claude-opus-4-7", "claude-opus-4.6", "claude-opus-4.7")
}
FAST_MODE_SOURCE = ("fast-mode rates of code.claude.com/docs/en/fast-mode (Opus 4.6/4.7: $30/$150, 6x; "
                    "cache multipliers on top)")


def price_key(model: str, speed: str | None = None) -> str:
    """The name a request is priced (and cached) under: the model, or ``"MODEL (fast)"`` for a
    request whose usage says ``speed: "fast"``."""
    return model + FAST_SUFFIX if speed == "fast" else model


def split_price_key(key: str) -> tuple[str, bool]:
    """(model, fast?) of a price key."""
    if key.endswith(FAST_SUFFIX):
        return key[: -len(FAST_SUFFIX)], True
    return key, False


# what a price-file entry holds, for the one-line "no price" errors
RATES_HINT = "input, cache_write_5m, cache_write_1h, cache_read and output in $ per million tokens"

class PriceError(Exception):
    """No price for a model: the message says how to add one."""


_PSEUDONYM_RX = re.compile(r"model-[0-9a-f]{8}")


def _default_keys(dataset: str = "default", key_file: Path | None = None) -> Any:
    """The Keyring of ``dataset`` from ``key_file`` (else the default key file), or None (never created here)."""
    from replay.ingest.keys import KeyFileError, Keyring, default_key_path, load_or_create_master_key

    try:
        return Keyring.for_dataset(load_or_create_master_key(key_file or default_key_path(), create=False), dataset)
    except (KeyFileError, OSError):
        return None


@dataclass(frozen=True)
class Rates:
    """$ per million tokens for one model; tier_* apply above tier_threshold input tokens."""

    model: str
    input: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float
    output: float
    min_cacheable: int
    source: str
    tier_threshold: int | None = None
    tier_input: float | None = None
    tier_cache_write_5m: float | None = None
    tier_cache_write_1h: float | None = None
    tier_cache_read: float | None = None
    tier_output: float | None = None

    def cost(self, uncached: float, w5: float, w1h: float, read: float, output: float) -> float:
        """Dollar cost of one request."""
        total_in = uncached + w5 + w1h + read
        if self.tier_threshold is not None and total_in > self.tier_threshold:
            r = (self.tier_input, self.tier_cache_write_5m, self.tier_cache_write_1h, self.tier_cache_read,
                 self.tier_output)
        else:
            r = (self.input, self.cache_write_5m, self.cache_write_1h, self.cache_read, self.output)
        return (uncached * r[0] + w5 * r[1] + w1h * r[2] + read * r[3] + output * r[4]) / 1e6


def min_cacheable_for(model: str) -> int:
    """Minimum cacheable prefix: 4,096 tokens for Opus 4.5+ and Haiku 4.5, 1,024 for other Claude 4.x.

    OpenAI caches automatically from 1,024 tokens; Gemini 2.5 implicitly from 2,048, later
    Gemini models from 4,096.
    """
    m = model.lower()
    if "gemini" in m:
        # implicit caching minimums (ai.google.dev caching docs, updated 2026-10-13)
        return 2048 if "2.5" in m or "2-5" in m else 4096
    if "haiku-4-5" in m or "haiku-4.5" in m:
        return 4096
    for v in ("opus-4-5", "opus-4-6", "opus-4-7", "opus-4-8", "opus-4-9", "opus-5"):
        if v in m:
            return 4096
    return 1024


def _has_fast_variant(info: Any, when: datetime) -> bool:
    """Does the library's model carry a ``speed = "fast"`` price active at ``when``?"""
    for v in getattr(info, "price_variants", None) or ():
        c = getattr(v, "constraint", None)
        if v.when.get("speed") == "fast" and (c is None or c.active(when)):
            return True
    return False


def provider_of(model: str) -> str | None:
    m = split_price_key(model)[0].lower()
    if "claude" in m:
        return "anthropic"
    if m.startswith(("gpt", "o1", "o3", "o4", "codex")):
        return "openai"
    if "gemini" in m:
        return "google"
    return None


def _split(v: Any) -> tuple[float | None, int | None, float | None]:
    """(base, tier threshold, tier price) of a genai-prices price (Decimal or TieredPrices)."""
    if v is None:
        return None, None, None
    base = getattr(v, "base", None)
    if base is None:
        return float(v), None, None
    tiers = getattr(v, "tiers", None) or []
    if tiers:
        return float(base), int(tiers[0].start), float(tiers[0].price)
    return float(base), None, None


@functools.lru_cache(maxsize=1)
def library_version() -> str:
    try:
        return "genai-prices " + importlib.metadata.version("genai-prices")
    except importlib.metadata.PackageNotFoundError:
        return "genai-prices (not installed)"


_RESOLVED: dict[tuple, Rates] = {}


def _sorted(v: Any) -> Any:
    """``v`` with its tables' keys sorted (two files listing the same rates in another order are one setting)."""
    return {k: _sorted(v[k]) for k in sorted(v)} if isinstance(v, dict) else v


def _price_day(value: Any, source: str | None) -> date:
    """The price date as a day; PriceError naming where it came from when it is not one."""
    try:
        return date.fromisoformat(value)
    except (TypeError, ValueError) as e:
        where = f"{source}: price_date" if source else "--price-date"
        raise PriceError(f"{where} {value!r} is not a date (YYYY-MM-DD: {e})") from None


def _check_rates(path: Path, where: str, rates: dict) -> None:
    """Each rate a number from 0 to ``MAX_RATE`` ($ per million tokens), min_cacheable a count: a
    negative, NaN, infinite or astronomical rate (1e308 overflows a sum to infinity) would price
    every request it touches without a word."""
    for f in RATE_FIELDS:
        if f in rates:
            v = rates[f]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= MAX_RATE):
                raise PriceError(f"{path}: {where}.{f} = {v!r}; a rate is a number >= 0 and at most "
                                 f"{MAX_RATE:,.0f} ($ per million tokens)")
    if "min_cacheable" in rates:
        v = rates["min_cacheable"]
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise PriceError(f"{path}: {where}.min_cacheable = {v!r}; a token count (an integer >= 0)")


class PriceTable:
    """Rates per model, resolved once and cached; overrides win over the library."""

    def __init__(self, price_date: str = DEFAULT_PRICE_DATE, overrides: dict[str, dict[str, float]] | None = None,
                 override_file: str | None = None, keys: Any = None):
        self.price_date = price_date
        self.overrides = overrides or {}
        self.override_file = override_file
        self.keys = keys  # the dataset's Keyring: raw model names of the price file -> the trace's pseudonyms
        self.dataset, self.key_file = "default", None  # where `keys` comes from when not given (`bind`)
        self._aliases: dict[str, str] | None = None
        self._cache: dict[str, Rates] = {}
        self._when = datetime.combine(_price_day(price_date, override_file), datetime.min.time(), tzinfo=timezone.utc)

    def for_dataset(self, keys: Any) -> "PriceTable":
        """This table with its model names mapped through ``keys`` (a dataset's `Keyring`): a
        price for a raw name the trace pseudonymizes reaches its ``model-<hash>``."""
        return PriceTable(self.price_date, self.overrides, self.override_file, keys=keys)

    def bind(self, dataset: str, key_file: Path | None = None) -> "PriceTable":
        """Map the price file's raw model names through ``dataset``'s key (read from ``key_file``, else
        the key file bound before, else the default one) unless the table was given its keys; returns
        the table. A command calls it once it knows which dataset it prices: a name hidden as
        ``model-<hash>`` is keyed per dataset."""
        key_file = key_file if key_file is not None else self.key_file
        if self.keys is None and (dataset, key_file) != (self.dataset, self.key_file):
            self.dataset, self.key_file = dataset, key_file
            self._aliases = None
            self._cache.clear()
        return self

    def _keys(self) -> Any:
        return self.keys or _default_keys(self.dataset, self.key_file)

    def _raw_name(self, model: str) -> str | None:
        """The price file's raw name whose pseudonym ``model`` is, if any."""
        if not _PSEUDONYM_RX.fullmatch(model) or model in self.overrides:
            return None
        if self._aliases is None:
            hidden = [n for n in self.overrides if not kept_model(n)]
            keys = self._keys() if hidden else None
            self._aliases = {model_pseudonym(keys, n): n for n in hidden} if keys is not None else {}
        return self._aliases.get(model)

    def unused_overrides(self, models) -> list[str]:
        """The price file's model names that none of ``models`` (as the trace stores them, hidden
        names as pseudonyms, fast mode with its suffix) is priced by: a typo'd name was ignored
        without a word."""
        used = set()
        for m in models:
            base, _ = split_price_key(m or "")
            for name in (base, self._raw_name(base) if base else None):
                if name in self.overrides:
                    used.add(name)
        return sorted(set(self.overrides) - used)

    def _override(self, model: str) -> dict | None:
        ov = self.overrides.get(model)
        if ov is None:
            raw = self._raw_name(model)
            ov = self.overrides.get(raw) if raw else None
        return ov

    @classmethod
    def from_toml(cls, path: Path, price_date: str = DEFAULT_PRICE_DATE, given_date: str | None = None) -> "PriceTable":
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise PriceError(f"{path}: cannot read price overrides: {e}") from e
        unknown = set(data) - {"models", "price_date"}
        if unknown:
            raise PriceError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; expected [models.\"NAME\"] tables")
        models = data.get("models", {})
        if not isinstance(models, dict):
            raise PriceError(f"{path}: models must be tables, [models.\"NAME\"] with {RATES_HINT}")
        for name, rates in models.items():
            if not isinstance(rates, dict):
                raise PriceError(f"{path}: models.{name} must be a table with {RATES_HINT}, not {rates!r}")
            bad = set(rates) - set(RATE_FIELDS) - {"min_cacheable", "fast"}
            if bad:
                raise PriceError(f"{path}: models.{name}: unknown key(s) {', '.join(sorted(bad))}; "
                                 f"allowed: {', '.join(RATE_FIELDS)}, min_cacheable, fast")
            _check_rates(path, f"models.{name}", rates)
            missing = [f for f in RATE_FIELDS if f not in rates]
            if missing and (len(missing) < len(RATE_FIELDS) or "fast" not in rates):
                # said here, once, naming the file: found while pricing, a partial table read as a missing
                # price ("add them with --prices") or a '?' cost in the commands that tolerate one
                raise PriceError(f"{path}: models.{name} lacks {', '.join(missing)}: a model's table gives every "
                                 f"one of {', '.join(RATE_FIELDS)} (or only `fast`, adding fast-mode rates to the "
                                 "library's)")
            fast = rates.get("fast")
            if fast is not None:
                if not isinstance(fast, dict) or set(fast) - set(RATE_FIELDS) or set(RATE_FIELDS) - set(fast):
                    raise PriceError(f"{path}: models.{name}.fast: a table with exactly "
                                     f"{', '.join(RATE_FIELDS)} ($ per million tokens at fast-mode rates)")
                _check_rates(path, f"models.{name}.fast", fast)
        when = data.get("price_date", price_date)
        if isinstance(when, date) and not isinstance(when, datetime):
            when = when.isoformat()  # a TOML date (price_date = 2026-01-01) as well as a string
        if given_date is not None and "price_date" in data and str(when) != str(given_date):
            # the file's date used to win over --price-date without a word
            raise PriceError(f"{path}: price_date = {when} and --price-date {given_date} disagree; give one of them")
        return cls(when, models, Path(path).name)

    def describe(self) -> dict[str, Any]:
        """The price setting as stored with a run, and compared as text between runs (a run is
        measured against the baseline of the same setting): the file's content (its date and
        overrides, keys sorted) and its name, never its folder, so the same file given by a
        relative and an absolute path is one setting and no report or export shows where it is."""
        hidden = [n for n in self.overrides if not kept_model(n)]
        keys = self._keys() if hidden else None
        overrides = {model_pseudonym(keys, n) if keys is not None and n in hidden else n: v
                     for n, v in self.overrides.items()}  # a raw name the trace hides is not stored either
        return {"price_date": self.price_date, "library": library_version(),
                "override_file": Path(self.override_file).name if self.override_file else None,
                "overrides": _sorted(overrides)}

    def rates(self, model: str) -> Rates:
        r = self._cache.get(model)
        if r is None:
            # resolved rates are shared by every table with the same date and overrides, so a
            # sweep building one table per configuration resolves each model once per process
            key = (model, self.price_date, json.dumps(self.overrides, sort_keys=True), self.override_file,
                   self._raw_name(split_price_key(model)[0]))
            r = _RESOLVED.get(key)
            if r is None:
                r = _RESOLVED[key] = self._resolve_cached(model)
            self._cache[model] = r
        return r

    def _resolve_cached(self, key: str) -> Rates:
        """`_resolve`, through the on-disk cache of library rates (`replay.model.rates_cache`)
        when no price file overrides the model."""
        if self._override(split_price_key(key)[0]) is not None:
            return self._resolve(key)
        from replay.model import rates_cache

        k = rates_cache.key(library_version(), key, self.price_date)
        hit = rates_cache.get(k)
        if hit is not None:
            try:
                return Rates(**hit)
            except TypeError:  # written by another layout of Rates: resolve again
                pass
        r = self._resolve(key)
        rates_cache.put(k, asdict(r))
        return r

    def _resolve(self, key: str) -> Rates:
        model, fast = split_price_key(key)
        if fast:
            return self._resolve_fast(model)
        ov = self._override(model)
        if ov is not None and (any(f in ov for f in RATE_FIELDS) or "fast" not in ov):
            missing = [f for f in RATE_FIELDS if f not in ov]
            if missing:
                raise PriceError(f"price override for {model!r} lacks {', '.join(missing)}")
            return Rates(model, *(float(ov[f]) for f in RATE_FIELDS),
                         min_cacheable=int(ov.get("min_cacheable", min_cacheable_for(model))),
                         source=f"override ({self.override_file or 'config'})")
        try:
            from genai_prices import Usage, calc_price

            calc = calc_price(Usage(input_tokens=1), model, provider_id=provider_of(model),
                              genai_request_timestamp=self._when)
        except Exception as e:
            if not model:
                raise PriceError(
                    "no price for responses whose log names no model (none in their session either); give "
                    f"them rates in a TOML file, [models.\"\"] with {RATES_HINT}, and pass --prices FILE") from e
            if _PSEUDONYM_RX.fullmatch(model):
                raise PriceError(
                    f"no price for model {model!r}, the keyed pseudonym of a model name that is no public model id; "
                    f"give the model's own name in a TOML file, [models.\"NAME\"] with {RATES_HINT}, and pass "
                    "--prices FILE (its names are mapped through the dataset key)") from e
            raise PriceError(
                f"no price for model {model!r} ({library_version()}: {e}); add its rates to a TOML file, "
                f"[models.\"{model}\"] with {RATES_HINT}, and pass --prices FILE"
            ) from e
        return self._from_library(model, model, calc)

    def _from_library(self, key: str, model: str, calc: Any, variant: str = "") -> Rates:
        mp = calc.model_price
        inp, thr, t_inp = _split(mp.input_mtok)
        w5, _, t_w5 = _split(mp.cache_write_mtok)
        w1h, _, t_w1h = _split(getattr(mp, "cache_write_1h_mtok", None))
        rd, _, t_rd = _split(mp.cache_read_mtok)
        out, _, t_out = _split(mp.output_mtok)
        if inp is None or out is None:
            raise PriceError(f"{library_version()} has no input/output price for {model!r}; add it with --prices FILE")
        # A provider without cache writes (OpenAI) bills them as input; without reads, as input.
        has_writes = w5 is not None
        w5 = inp if w5 is None else w5
        if w1h is None:
            w1h = w5 * 1.6 if has_writes else inp  # Anthropic: 1h write is 2x input where 5m is 1.25x
        rd = inp if rd is None else rd
        tier = {}
        if thr is not None:
            tier = dict(tier_threshold=thr, tier_input=t_inp, tier_cache_write_5m=t_w5 or w5,
                        tier_cache_write_1h=t_w1h or w1h, tier_cache_read=t_rd or rd, tier_output=t_out or out)
        where = f"{calc.provider.id}/{calc.model.id}" + (f" [{variant}]" if variant else "")
        return Rates(key, inp, w5, w1h, rd, out, min_cacheable=min_cacheable_for(model),
                     source=f"{library_version()} {where} @ {self.price_date}", **tier)

    def _resolve_fast(self, model: str) -> Rates:
        """Fast-mode rates: the price file's ``fast`` table, the library's ``speed = "fast"``
        price, or ``FAST_MODE_RATES``; else an error."""
        key = model + FAST_SUFFIX
        ov = self._override(model) or {}
        fast = ov.get("fast")
        min_c = int(ov.get("min_cacheable", min_cacheable_for(model)))
        if fast is not None:
            return Rates(key, *(float(fast[f]) for f in RATE_FIELDS), min_cacheable=min_c,
                         source=f"override ({self.override_file or 'config'}), fast mode")
        try:
            from genai_prices import Usage, calc_price

            calc = calc_price(Usage(input_tokens=1), model, provider_id=provider_of(model),
                              genai_request_timestamp=self._when, price_context={"speed": "fast"})
        except Exception:
            calc = None
        if calc is not None and _has_fast_variant(calc.model, self._when):
            return replace(self._from_library(key, model, calc, "speed=fast"), min_cacheable=min_c)
        m = model.lower()
        for prefix, r in FAST_MODE_RATES.items():
            if m.startswith(prefix):
                return Rates(key, *(r[f] for f in RATE_FIELDS), min_cacheable=min_c, source=FAST_MODE_SOURCE)
        raise PriceError(
            f"no fast-mode price for model {model!r} (the log says speed \"fast\"; {library_version()} has none). "
            f"Add its rates to a TOML file, [models.\"{model}\".fast] with {RATES_HINT}, and pass --prices FILE")

    def table(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self._cache.values()]

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

Long-context tiers (e.g. a higher price above 200k input tokens) are kept when the library
has them and applied to a whole request whose input exceeds the threshold.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import tomllib
from dataclasses import asdict, dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

DEFAULT_PRICE_DATE = "2026-11-01"
RATE_FIELDS = ("input", "cache_write_5m", "cache_write_1h", "cache_read", "output")


class PriceError(Exception):
    """No price for a model: the message says how to add one."""


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


def provider_of(model: str) -> str | None:
    m = model.lower()
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


class PriceTable:
    """Rates per model, resolved once and cached; overrides win over the library."""

    def __init__(self, price_date: str = DEFAULT_PRICE_DATE, overrides: dict[str, dict[str, float]] | None = None,
                 override_file: str | None = None):
        self.price_date = price_date
        self.overrides = overrides or {}
        self.override_file = override_file
        self._cache: dict[str, Rates] = {}
        self._when = datetime.combine(date.fromisoformat(price_date), datetime.min.time(), tzinfo=timezone.utc)

    @classmethod
    def from_toml(cls, path: Path, price_date: str = DEFAULT_PRICE_DATE) -> "PriceTable":
        try:
            data = tomllib.loads(Path(path).read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise PriceError(f"{path}: cannot read price overrides: {e}") from e
        unknown = set(data) - {"models", "price_date"}
        if unknown:
            raise PriceError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}; expected [models.\"NAME\"] tables")
        models = data.get("models", {})
        for name, rates in models.items():
            bad = set(rates) - set(RATE_FIELDS) - {"min_cacheable"}
            if bad:
                raise PriceError(f"{path}: models.{name}: unknown key(s) {', '.join(sorted(bad))}; "
                                 f"allowed: {', '.join(RATE_FIELDS)}, min_cacheable")
        return cls(data.get("price_date", price_date), models, str(path))

    def describe(self) -> dict[str, Any]:
        return {"price_date": self.price_date, "library": library_version(), "override_file": self.override_file,
                "overrides": self.overrides}

    def rates(self, model: str) -> Rates:
        r = self._cache.get(model)
        if r is None:
            # resolved rates are shared by every table with the same date and overrides, so a
            # sweep building one table per configuration resolves each model once per process
            key = (model, self.price_date, json.dumps(self.overrides, sort_keys=True), self.override_file)
            r = _RESOLVED.get(key)
            if r is None:
                r = _RESOLVED[key] = self._resolve(model)
            self._cache[model] = r
        return r

    def _resolve(self, model: str) -> Rates:
        ov = self.overrides.get(model)
        if ov is not None:
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
            raise PriceError(
                f"no price for model {model!r} ({library_version()}: {e}). Add it to a price file and pass "
                f"--prices FILE:\n  [models.\"{model}\"]\n  input = ...\n  cache_write_5m = ...\n"
                f"  cache_write_1h = ...\n  cache_read = ...\n  output = ..."
            ) from e
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
        return Rates(model, inp, w5, w1h, rd, out, min_cacheable=min_cacheable_for(model),
                     source=f"{library_version()} {calc.provider.id}/{calc.model.id} @ {self.price_date}", **tier)

    def table(self) -> list[dict[str, Any]]:
        return [asdict(r) for r in self._cache.values()]

"""Library rates kept on disk between processes, so a command that prices does not import genai-prices.

Resolving a model's rates imports genai-prices and walks its price data: about 0.5 s of each
`ctxreplay usage` on a stored database, most of its time (`python -X importtime -m replay.cli
usage --json`). What a resolution returns depends only on the library's version, this
package's pricing code and the price date, so it is kept in one JSON file under the user's
cache folder (``$CTXREPLAY_CACHE_DIR``, else ``$XDG_CACHE_HOME/ctxreplay``, else
``~/.cache/ctxreplay``), keyed by all three and the model. A new library version or a change
to ``replay/model/costs.py`` misses the cache and resolves again. Overridden rates (a price
file) are never kept: they are read from the file each time. ``CTXREPLAY_RATES_CACHE=0``
turns the cache off.

A cache that cannot be read (missing, damaged, another format) is a miss, and so is an entry
whose rates are not numbers from 0 to ``rate_limits.MAX_RATE`` (an edited file cannot price a
request at infinity); one that cannot be written is left alone: the rates are the same either
way, only slower. With no home folder ($HOME unset, no passwd entry) and no absolute $XDG_CACHE_HOME or
$CTXREPLAY_CACHE_DIR there is no cache (never a ``~`` folder in the working directory).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from replay.model.rate_limits import MAX_RATE

FILE = "rates.json"
_COSTS_SOURCE = Path(__file__).with_name("costs.py")  # the pricing code whose results are kept
_FORMAT = 1
_memo: tuple[Path, dict[str, Any]] | None = None  # the cache file read, and what it held


def cache_file() -> Path | None:
    """Where the cache lives, None when it is turned off."""
    if os.environ.get("CTXREPLAY_RATES_CACHE", "1") == "0":
        return None
    base = os.environ.get("CTXREPLAY_CACHE_DIR")
    if base:
        return Path(base) / FILE
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):  # the XDG spec ignores a relative value
        return Path(xdg) / "ctxreplay" / FILE
    home = os.path.expanduser("~")
    if not os.path.isabs(home):  # no home folder: no cache
        return None
    return Path(home) / ".cache" / "ctxreplay" / FILE


def _code_hash() -> str:
    """The pricing code's own hash: a change to how rates are derived is a new cache key. The
    source of `replay.model.costs` is read as bytes beside this file, never imported: the price
    table imports this cache, not the other way round."""
    return hashlib.blake2b(_COSTS_SOURCE.read_bytes(), digest_size=8).hexdigest()


def key(library: str, model_key: str, price_date: str) -> str:
    return json.dumps([_FORMAT, library, _code_hash(), price_date, model_key])


def _load(path: Path) -> dict[str, Any]:
    global _memo
    if _memo is None or _memo[0] != path:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        _memo = (path, data if isinstance(data, dict) else {})
    return _memo[1]


def get(k: str) -> dict[str, Any] | None:
    """The stored fields of a Rates for key ``k``, None on a miss."""
    path = cache_file()
    if path is None:
        return None
    v = _load(path).get(k)
    return v if isinstance(v, dict) and _sane(v) else None


def _sane(fields: dict[str, Any]) -> bool:
    """Whether a cached entry's rates are numbers from 0 to ``MAX_RATE`` (None for an absent tier)."""
    for name, v in fields.items():
        if name in ("model", "source", "min_cacheable", "tier_threshold"):
            continue
        if v is None and name.startswith("tier_"):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= MAX_RATE):
            return False
    return True


def put(k: str, fields: dict[str, Any]) -> None:
    """Keep ``fields`` under ``k`` (the file is replaced whole, so a reader never sees half of it)."""
    path = cache_file()
    if path is None:
        return
    data = _load(path)
    data[k] = fields
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".rates-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(data, fh, sort_keys=True)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass


def reset() -> None:
    """Forget what was read (tests, or a process that changed the cache folder)."""
    global _memo
    _memo = None

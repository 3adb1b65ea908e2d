"""Keyed pseudonyms of the anonymizer for everything that is not free text.

``Pseudonyms`` holds the keyed primitives: format-preserving identifiers (uuids, typed ids
such as ``toolu_01...``), same-length opaque blobs (signatures, image payloads with their
header kept), branch names, shifted timestamps, and values kept verbatim after scrubbing.
Each is a pure function of the dataset key and the value, cached per run.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from replay.ingest.identifiers import id_prefix
from replay.ingest.keys import Keyring
from replay.privacy.scrub import scrub

if TYPE_CHECKING:
    import re2

    from replay.privacy.summary import AnonymizeSummary

UUID_RX = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
ISO_RX = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")

# Byte -> character tables: a keyed byte stream becomes characters of one class.
_OPAQUE_TABLE = bytes(b"0123456789ABCDEF+/"[i % 18] for i in range(256))
_HEX_TABLE = bytes(b"0123456789abcdef"[i % 16] for i in range(256))
_DIG_TABLE = bytes(b"0123456789"[i % 10] for i in range(256))
_LOW_TABLE = bytes(b"abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(256))
_UP_TABLE = bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26] for i in range(256))


def _uuid_like(body: str, stream: bytes) -> str:
    """Keyed hex digits in a uuid's layout: dashes, version nibble and case kept."""
    chars = list(stream.translate(_HEX_TABLE).decode()[: len(body)])
    for i, c in enumerate(body):
        if c == "-":
            chars[i] = "-"
    if body[14] in "0123456789abcdef":
        chars[14] = body[14].lower()  # keep the uuid version nibble
    new = "".join(chars)
    return new.upper() if body.isupper() else new


def _shaped_like(body: str, stream: bytes) -> str:
    """Keyed characters of the same class as each of ``body``'s (digit, lower, upper, other kept);
    an all-hex body stays hex."""
    is_hex = all(c in "0123456789abcdef-" for c in body)
    out_chars = []
    for c, r in zip(body, stream):
        if c.isdigit():
            out_chars.append(chr(_DIG_TABLE[r]))
        elif "a" <= c <= "z":
            out_chars.append(chr((_HEX_TABLE if is_hex else _LOW_TABLE)[r]))
        elif "A" <= c <= "Z":
            out_chars.append(chr(_UP_TABLE[r]))
        elif c.isalpha():
            out_chars.append(chr(_LOW_TABLE[r]))
        else:
            out_chars.append(c)
    return "".join(out_chars)


class Pseudonyms:
    """Keyed, cached pseudonyms of identifiers, blobs, branches and timestamps of one run."""

    def __init__(self, keys: Keyring, *, deny_rx: re2._Regexp | None, time_shift: bool,
                 summary: AnonymizeSummary):
        self.keys = keys
        self.kkey = keys.dataset_key
        self.deny_rx = deny_rx
        self.time_shift = time_shift
        self.s = summary
        self.ids: dict[str, str] = {}
        self.kept: dict[str, str] = {}
        off = int.from_bytes(self.prf(b"time-shift", b"", 8), "big")
        # one offset for the whole dataset: 1 to 4 years back, to the millisecond
        self.time_offset = -timedelta(milliseconds=365 * 86_400_000 + off % (3 * 365 * 86_400_000))

    def prf(self, label: bytes, value: bytes, n: int) -> bytes:
        """``n`` keyed pseudo-random bytes for ``value`` under ``label`` (one stream per use)."""
        return hashlib.shake_256(self.kkey + b"\0" + label + b"\0" + value).digest(n)

    def denied(self, s: str) -> bool:
        return bool(self.deny_rx and self.deny_rx.search(s))

    def ident(self, v: str) -> str:
        """Format-preserving keyed pseudonym of an identifier (same value, same pseudonym)."""
        got = self.ids.get(v)
        if got is not None:
            return got
        self.s.ids_replaced += 1
        is_uuid = bool(UUID_RX.match(v))
        # a known type prefix (toolu_01, msg_01, req_) says what the id is: kept; any other text is not
        # (an id made of words, "alice_notes_3", would otherwise keep "alice_notes_")
        prefix = "" if is_uuid else id_prefix(v)
        body = v[len(prefix):]
        out = v
        # re-drawn while it equals the input or spells a sensitive term
        for attempt in range(16):
            stream = self.prf(b"id", f"{v}#{attempt}".encode("utf-8", "surrogatepass"), len(body) + 8)
            out = prefix + (_uuid_like(body, stream) if is_uuid else _shaped_like(body, stream))
            if out != v and not self.denied(out):
                break
        self.ids[v] = out
        return out

    def opaque(self, v: str, keep_prefix: int = 0) -> str:
        """Same-length keyed pseudo-random base64 characters (signatures, image payloads, blobs).

        The body uses only ``0-9A-F+/`` (valid base64), so no word or name can appear in it
        by chance; a hit of a sensitive term made of those characters is re-drawn.
        """
        digest = hashlib.blake2b(v.encode("utf-8", "surrogatepass")).digest()
        out = v
        for attempt in range(4):
            body = self.prf(b"opaque", digest + bytes([attempt]), len(v))
            out = v[:keep_prefix] + body.translate(_OPAQUE_TABLE).decode()[keep_prefix:]
            if not self.denied(out[keep_prefix:]):
                break
        return out

    def image(self, data: str) -> str:
        """Keep a PNG/GIF header (the trace estimates image tokens from its dimensions)."""
        if data.startswith("iVBORw0KGgo"):
            return self.opaque(data, 32)  # signature + IHDR chunk start + width + height
        if data.startswith("R0lGOD"):
            return self.opaque(data, 16)
        return self.opaque(data, 4)  # the magic only (JPEG /9j/, WebP UklG)

    def branch(self, v: str) -> str:
        return "branch-" + self.keys.short("branch", v, 10)

    def timestamp(self, v: str) -> str:
        """An ISO timestamp moved by the dataset's offset (when asked), in its own format."""
        if not self.time_shift:
            return v
        m = ISO_RX.match(v)
        if not m:
            return v
        frac, tz = m.group(2) or "", m.group(3) or ""
        try:
            dt = datetime.fromisoformat(m.group(1) + (frac[:7] if frac else ""))
        except ValueError:
            return v
        dt += self.time_offset
        out = dt.strftime("%Y-%m-%dT%H:%M:%S")
        if frac:
            out += "." + f"{dt.microsecond:06d}"[: len(frac) - 1].ljust(len(frac) - 1, "0")
        return out + tz

    def keep(self, v: str) -> str:
        """A value kept verbatim (enum values, model and tool names), scrubbed of secrets."""
        got = self.kept.get(v)
        if got is None:
            clean, findings = scrub(v)
            self.s.secrets_removed += len(findings)
            got = self.kept[v] = clean
        return got

"""Anonymized Claude Code logs in the original format.

``anonymize_tree(src, dst, key)`` writes a copy of a tree of Claude Code logs (``.jsonl``
transcripts, Stop-hook ``.json`` dumps, ``subagents/agent-*.jsonl``) that any tool reading
Claude Code logs can read, with the structure and sizes kept and the contents gone:

* every text (prompts, answers, thinking, tool results, tool-input string values,
  attachments, compact summaries, ``toolUseResult``, system/progress contents) becomes
  *filler*: words drawn by a generator seeded with the text's keyed hash, with exactly the
  original's o200k token count and about its byte length. Equal texts give equal filler,
  different texts different filler (a collision is detected and re-drawn), so the
  equal-content structure that deduplication needs survives;
* file paths in tool inputs (``file_path``, ``notebook_path``, ``path``, ``cwd``, ...) become
  ``Keyring.path`` pseudonyms, resolved against the record's ``cwd`` exactly as ingest
  resolves them, so they equal the ``resource`` column of the trace ingested with the same
  key and dataset name;
* identifiers (uuids, session, message, request, tool_use, agent and prompt ids, slugs) get
  format-preserving keyed pseudonyms, so ``parentUuid`` chains, ``tool_use_id`` links and
  ``message.id`` shared by the lines of one response still work; ``gitBranch`` gets a keyed
  pseudonym; images keep their header (dimensions) and size with a keyed pseudo-random body;
* ``usage``, timestamps (optionally shifted by one keyed per-dataset offset), record types,
  roles, model names, ``isSidechain``, ``isCompactSummary``, ``compactMetadata``, numbers and
  booleans are kept, and so are tool names and tool-input argument names unless asked
  otherwise;
* every string is run through ``replay.privacy.scrub`` first: a secret never even seeds a filler,
  and strings that are kept verbatim are kept scrubbed.

Known limit: a path pseudonym (10 hex digits per component) has more tokens than most real
path components. A block's token count is checked as a whole and the difference is absorbed
by its other strings when they are long enough (an ``Edit``'s old/new strings); a ``Read`` or
``LS`` call has nothing else, and a ``Grep`` pattern is usually too short, so such blocks are
a few tokens larger than in the raw trace. Every other block matches its raw token count
exactly. ``path_style="words"`` replaces each path component by keyed words with the same
token count instead: every block then keeps its count (99.8% exactly on the shared corpus),
but the paths no longer equal the trace's pseudonyms.
"""

from __future__ import annotations

import hashlib
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson
import re2

from replay.ingest.blocktext import canonical_json, tool_result_parts, tool_use_text
from replay.ingest.keys import Keyring, load_or_create_master_key
from replay.ingest.readers.base import FileError, ReadReport, load_records
from replay.privacy.scrub import scrub
from replay.ingest.tokens import count_many

__all__ = ["AnonymizeSummary", "anonymize_tree", "filler_vocabulary", "collect_sensitive_terms"]

LOG_SUFFIXES = (".jsonl", ".json")
SKIP_NAMES = frozenset({"MANIFEST.json", "package.json", "package-lock.json", "tsconfig.json"})


@dataclass
class AnonymizeSummary:
    files: int = 0
    records: int = 0
    lines_dropped: int = 0  # lines that were not JSON records (cannot be anonymized safely)
    texts_replaced: int = 0  # string occurrences replaced by filler
    unique_texts: int = 0  # distinct texts per file, summed over files
    secrets_removed: int = 0  # scrub findings in the strings processed
    ids_replaced: int = 0
    paths_replaced: int = 0
    blocks_checked: int = 0  # composite context blocks whose token count was verified
    blocks_token_mismatch: int = 0  # ... that could not be brought to the raw count (path-only inputs)
    filler_mismatch: int = 0  # fillers whose token count could not be matched exactly
    bytes_in: int = 0
    bytes_out: int = 0
    seconds: float = 0.0
    skipped_files: list[str] = field(default_factory=list)  # non-log files, not copied
    failed: list[tuple[str, str]] = field(default_factory=list)
    # (input, output) relative paths; kept out of as_dict(): input names can identify people
    outputs: list[tuple[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d.pop("outputs")
        d["skipped_files"] = len(self.skipped_files)
        d["failed"] = [{"file": f, "reason": r} for f, r in self.failed]
        d["seconds"] = round(self.seconds, 3)
        return d


# --- filler vocabulary ------------------------------------------------------------------

# English words of all lengths (written here) plus syllable words; only those that are
# one o200k token with a leading space are used, so a filler of n words is n tokens.
_ENGLISH = """a b c d e f g h i j k l m n o p q r s t u v w x y z
able about above access account across action active actual address advance after again against
allow almost alone along already also always amount analysis another answer anything apply approach
area around article artist assume attention author available average award balance based basic
battery beautiful because become before begin behavior behind believe benefit better between beyond
billion board body border bottom break bring brother budget building business button camera campaign
cancel capital capture career carry catch category cause center central century certain chance change
chapter character charge check child choice choose church citizen claim class clear close coach
collection college color combine comfort command comment common community company compare complete
computer concern condition conference consider consumer contain content context continue contract
control corner correct country couple course court cover create credit culture current 
daughter debate decade decide decision defense degree deliver demand depend describe design detail
determine develop difference different difficult dinner direction director discover discuss 
display distance document double doubt dream drive during early economy edition editor education
effect effort eight either election element employee energy engine enjoy enough enter entire
environment equal escape especially establish evening every evidence exactly example exist expect
experience expert explain express factor family father feature federal feeling fight figure final
finally finance finger finish first floor flower follow force foreign forget former forward freedom
friend front function future garden general generation gentle government great ground growth guess
happen happy hardware health heart heavy height history holder hospital hotel house however human
hundred husband idea image impact important improve include increase indeed industry inside instead
interest interview island itself kitchen knowledge language large later launch lawyer leader learn
least leave legal length letter light listen little machine magazine major manage market matter maybe
measure media medical member memory mention method middle might military million minute mission
modern moment money month morning mother motion mountain movement music myself nation natural nature
nearly necessary never news night normal north nothing notice object obvious offer office officer
often option organization other outside owner paper parent particular partner party pattern people
percent perform perhaps period person phone physical picture piece place planet plant player please
police policy political popular position positive possible power practice prepare present president
pressure pretty prevent price print private problem produce product professor program property
protect prove provide public purpose quality question quickly quite radio range rather reach reader
ready reality reason receive recent reduce region relate remember represent require research resource
respond return reveal right river round rule safety scene school science screen season second
security select sense series serious seven several shadow shake share short should shoulder signal
silence simple simply since single sister situation skill small social society soldier somebody
someone something sometimes south space speak special speech spend sport spring staff standard
statement station still story strategy street strong structure student study style subject success
sudden suffer suggest summer surface table teacher technology television temperature theory thing
thought thousand through throughout together tonight total toward town trade traditional
training travel treatment trial trouble truth under understand union until upon usually various video
village visit voice wait walk wall watch water weather week weight western whatever
whether which while white whole window winter within without woman wonder world worry write writer
wrong yard year young yourself""".split()


@lru_cache(maxsize=1)
def filler_vocabulary() -> tuple[dict[int, tuple[str, ...]], tuple[int, ...]]:
    """Words that are one o200k token with a leading space, by byte length (space included),
    and the lengths of space runs that are one token before such a word.

    Deterministic: a fixed candidate list (English words and seeded syllable words) filtered
    by the tokenizer the trace uses.
    """
    consonants, vowels, finals = "bcdfghjklmnprstvwz", "aeiou", "lnrst"
    cv = [c + v for c in consonants for v in vowels]
    cvc = [c + v + f for c in consonants for v in vowels for f in finals]
    cands = set(_ENGLISH) | set(cv) | set(cvc)
    for a in cv:
        for b in cv + cvc:
            cands.add(a + b)
    rng = random.Random(20260101)
    for _ in range(60000):
        n = rng.choice((3, 3, 4))
        cands.add("".join(rng.choice(cv if i < n - 1 else cv + cvc) for i in range(n)))
    words = sorted(" " + w for w in cands)
    counts = count_many(words)
    by_len: dict[int, list[str]] = {}
    for w, c in zip(words, counts):
        if c == 1:
            by_len.setdefault(len(w), []).append(w)
    runs = [k for k, c in zip(range(1, 100), count_many(["x" + " " * k + " the" for k in range(1, 100)])) if c == 3]
    contiguous = []
    for k in runs:
        if k != len(contiguous) + 1:
            break
        contiguous.append(k)
    return {k: tuple(v) for k, v in sorted(by_len.items())}, tuple(contiguous)


# --- sensitive terms (defence for the filler and pseudonym alphabets) --------------------

_HOME_RX = re2.compile(rb"(?:/Users/|/home/|[A-Za-z]:(?:\\\\|\\)Users(?:\\\\|\\))([A-Za-z0-9._-]{2,64})")
_EMAIL_RX = re2.compile(rb"([A-Za-z0-9._%+-]{2,64})@([A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)")
_HOST_RX = re2.compile(rb"\b(?:https?|wss?|ssh|git|ftp|sftp)://(?:[^\s/@\"'<>]*@)?([A-Za-z0-9.-]{2,253})")
_BRANCH_RX = re2.compile(rb'"gitBranch"\s*:\s*"([^"\\]{1,200})"')


def collect_sensitive_terms(data: Iterable[bytes], min_len: int = 4) -> set[str]:
    """Words that identify the logs' owners: home-directory user names, e-mail local parts and
    domain labels, URL host labels, git branch names and their parts (lower case).

    The filler vocabulary drops words that contain one, and identifier pseudonyms that would
    contain one are re-drawn, so they cannot appear in the output by chance.
    """
    terms: set[str] = set()

    def add(raw: bytes | str, split: bool = False) -> None:
        s = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        s = s.lower()
        if len(s) >= min_len:
            terms.add(s)
        if split:
            for part in re.split(r"[/._\-@:+]", s):
                if len(part) >= min_len and not part.isdigit():
                    terms.add(part)

    for blob in data:
        for m in _HOME_RX.finditer(blob):
            add(m.group(1), split=True)
        for m in _EMAIL_RX.finditer(blob):
            add(m.group(1), split=True)
            add(m.group(2), split=True)
        for m in _HOST_RX.finditer(blob):
            add(m.group(1), split=True)
        for m in _BRANCH_RX.finditer(blob):
            add(m.group(1), split=True)
    return terms


# --- record schema ---------------------------------------------------------------------

# String values kept verbatim (after scrubbing) when they look like enum values.
KEEP_KEYS = frozenset({
    "type", "subtype", "role", "model", "stop_reason", "level", "trigger", "operation", "userType",
    "entrypoint", "permissionMode", "media_type", "service_tier", "inference_geo", "speed", "version",
    "hookEvent", "promptSource", "retrieval_status", "mode", "status", "kind", "encoding",
})
TOOL_NAME_KEYS = frozenset({"toolName", "serverName", "hookName"})  # kept with the tool names
ID_KEYS = frozenset({
    "uuid", "parentUuid", "logicalParentUuid", "leafUuid", "sessionId", "session_id", "requestId",
    "messageId", "message_id", "toolUseID", "toolUseId", "parentToolUseID", "tool_use_id",
    "sourceToolAssistantUUID", "promptId", "agentId", "agent_id", "taskId", "task_id",
    "backgroundTaskId", "slug", "id", "backupFileName", "nodeId",
})
PATH_KEYS = frozenset({
    "cwd", "file_path", "notebook_path", "path", "filePath", "paths", "filename", "filenames", "outputFile",
    "persistedOutputPath", "directory", "dir", "working_directory", "workdir", "projectPath",
})
TIME_KEYS = frozenset({"timestamp", "backupTime", "createdAt", "updatedAt", "startedAt", "endedAt",
                       "startTime", "endTime"})
KEEP_WHOLE = frozenset({"usage", "compactMetadata", "thinkingMetadata", "cache_creation"})
OPAQUE_KEYS = frozenset({"signature", "base64"})
TOOL_PATH_KEYS = frozenset({"file_path", "notebook_path", "path", "filePath", "paths", "cwd", "directory",
                            "dir", "working_directory", "workdir", "projectPath"})

_ENUM_RX = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-:]{0,63}$")  # no dots, slashes or @: not a host or path
_ENUM_SPECIAL = {
    "version": re.compile(r"^[0-9][0-9A-Za-z.+\-]{0,31}$"),
    "media_type": re.compile(r"^[a-z]+/[a-z0-9.+\-]{1,40}$"),
}
_IDENT_KEY_RX = re.compile(r"^[A-Za-z_$@][A-Za-z0-9_$\-]{0,63}$")
_UUID_RX = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_ID_PREFIX_RX = re.compile(r"^([a-z]+(?:_[a-z]+)*_(?:01)?)(?=[A-Za-z0-9])")
_SEP_RX = re.compile(r"([/\\])")
_RUN_RX = re.compile(r"[^\W\d_]+|\d+|[\W_]+")
PATH_STYLES = ("pseudonym", "words")
_FILENAME_RX = re.compile(r"^[\w.@-]+\.[A-Za-z0-9]{1,8}$")
_ISO_RX = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")
_B64_RX = re2.compile(r"^[A-Za-z0-9+/=\r\n]{64,}$")

_ONE_CHAR = "abcdefghijklmnopqrstuvwxyz0123456789"  # one byte, one token each
_OPAQUE_TABLE = bytes(b"0123456789ABCDEF+/"[i % 18] for i in range(256))
_HEX_TABLE = bytes(b"0123456789abcdef"[i % 16] for i in range(256))
_DIG_TABLE = bytes(b"0123456789"[i % 10] for i in range(256))
_LOW_TABLE = bytes(b"abcdefghijklmnopqrstuvwxyz"[i % 26] for i in range(256))
_UP_TABLE = bytes(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"[i % 26] for i in range(256))


class _Text:
    """A text awaiting its filler (resolved in one token-counting batch per file)."""

    __slots__ = ("raw", "override")

    def __init__(self, raw: str):
        self.raw = raw
        self.override: str | None = None


@dataclass
class _Block:
    """A model-context block whose canonical text is built from several strings (tool_use
    input, tool_result parts, attachment, ...): its token count is checked as a whole."""

    raw_text: str
    anon: Any
    render: Callable[[Any], str]


def _texts_in(obj: Any, out: list[_Text]) -> list[_Text]:
    if isinstance(obj, _Text):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _texts_in(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _texts_in(v, out)
    return out


class _Anonymizer:
    def __init__(self, keys: Keyring, *, keep_tool_names: bool, keep_arg_keys: bool, time_shift: bool,
                 deny: set[str], summary: AnonymizeSummary, path_style: str = "words"):
        if path_style not in PATH_STYLES:
            raise ValueError(f"path_style must be one of {', '.join(PATH_STYLES)}, not {path_style!r}")
        self.path_style = path_style
        self.comp_cache: dict[str, str] = {}
        self.comp_owner: dict[str, str] = {}
        self.word_tables: dict[tuple, dict[tuple[int, ...], list[str]]] = {}
        self.keys = keys
        self.kkey = keys.dataset_key
        self.keep_tool_names = keep_tool_names
        self.keep_arg_keys = keep_arg_keys
        self.time_shift = time_shift
        self.s = summary
        vocab, runs = filler_vocabulary()
        deny_l = sorted({d.lower() for d in deny if len(d) >= 3})
        self.deny_rx = re2.compile("(?i)" + "|".join(re2.escape(d) for d in deny_l)) if deny_l else None
        self.vocab = {L: tuple(w for w in ws if not (self.deny_rx and self.deny_rx.search(w))) for L, ws in vocab.items()}
        self.vocab = {L: ws for L, ws in self.vocab.items() if ws}
        self.lengths = tuple(sorted(self.vocab))
        self.lmin, self.lmax = self.lengths[0], self.lengths[-1]
        self.nearest = {L: min(self.lengths, key=lambda x: abs(x - L)) for L in range(self.lmin, self.lmax + 1)}
        self.gaps = any(self.nearest[L] != L for L in self.nearest)
        self.space_runs = runs
        self.kmax = runs[-1] if runs else 0
        # raw text -> filler, for the file being written (cleared per file: fillers are
        # deterministic, so the same text in another file gets the same filler again)
        self.fill: dict[str, str] = {}
        self.fill_secrets: dict[str, int] = {}  # raw text -> scrub findings
        # digest(filler) -> digest(raw text), for the whole run: different texts never share
        # a filler (16-byte digests keep memory small on large trees)
        self.used: dict[bytes, bytes] = {}
        self.ids: dict[str, str] = {}
        self.paths: dict[tuple[str, str | None], str] = {}
        self.kept: dict[str, str] = {}
        off = int.from_bytes(self._prf(b"time-shift", b"", 8), "big")
        # one offset for the whole dataset: 1 to 4 years back, to the millisecond
        self.time_offset = -timedelta(milliseconds=365 * 86_400_000 + off % (3 * 365 * 86_400_000))
        self.pending: list[_Text] = []
        self.blocks: list[_Block] = []
        self.block_owner: dict[bytes, bytes] = {}  # digest(adjusted block text) -> digest(raw block text)
        self.in_context = False  # inside a user/assistant message or attachment (model context)

    # --- keyed primitives ---------------------------------------------------------------
    def _prf(self, label: bytes, value: bytes, n: int) -> bytes:
        return hashlib.shake_256(self.kkey + b"\0" + label + b"\0" + value).digest(n)

    def _denied(self, s: str) -> bool:
        return bool(self.deny_rx and self.deny_rx.search(s))

    def ident(self, v: str) -> str:
        """Format-preserving keyed pseudonym of an identifier (same value, same pseudonym)."""
        got = self.ids.get(v)
        if got is not None:
            return got
        self.s.ids_replaced += 1
        prefix = ""
        m = _ID_PREFIX_RX.match(v)
        if m and not _UUID_RX.match(v):
            prefix = m.group(1)
        body = v[len(prefix):]
        out = v
        for attempt in range(16):
            stream = self._prf(b"id", f"{v}#{attempt}".encode("utf-8", "surrogatepass"), len(body) + 8)
            if _UUID_RX.match(v):
                hx = stream.translate(_HEX_TABLE).decode()
                chars = list(hx[: len(body)])
                for i, c in enumerate(body):
                    if c == "-":
                        chars[i] = "-"
                if v[14] in "0123456789abcdef":
                    chars[14] = v[14].lower()  # keep the uuid version nibble
                new = "".join(chars)
                if body.isupper():
                    new = new.upper()
            else:
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
                new = "".join(out_chars)
            out = prefix + new
            if out != v and not self._denied(out):
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
            body = self._prf(b"opaque", digest + bytes([attempt]), len(v))
            out = v[:keep_prefix] + body.translate(_OPAQUE_TABLE).decode()[keep_prefix:]
            if not self._denied(out[keep_prefix:]):
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

    def path(self, v: str, cwd: str | None) -> str:
        key = (v, cwd) if self.path_style == "pseudonym" else (v, None)
        got = self.paths.get(key)
        if got is None:
            self.s.paths_replaced += 1
            if not v:
                got = ""
            elif self.path_style == "words":
                got = "".join(self.comp_words(c) if i % 2 == 0 else c for i, c in enumerate(_SEP_RX.split(v)))
            elif "\n" in v or len(v) > 4096:
                got = self.keys.path(v.split("\n", 1)[0], cwd)
            elif not v.startswith(("/", "~", "\\")) and ".." not in _SEP_RX.split(v):
                # relative stays relative: per-component pseudonyms compose, so resolved
                # against the pseudonymized cwd it is the trace's pseudonym, and a path
                # written relative stays distinct from the same path written absolute
                got = self.keys.path(v)
            else:
                got = self.keys.path(v, cwd)
            self.paths[key] = got
        return got

    def comp_words(self, comp: str) -> str:
        """Token-preserving keyed pseudonym of one path component (``path_style="words"``).

        Each letter run becomes a vocabulary word with the same case pattern and the same
        token count in the same context (after the slash or punctuation that precedes it),
        digit runs become random digits, punctuation and the extension stay. The candidate
        is checked as a whole, alone and after a slash. Same component, same pseudonym, so
        equality and containment of paths survive.
        """
        if comp in ("", ".", "..", "~"):
            return comp
        got = self.comp_cache.get(comp)
        if got is not None:
            return got
        stem, dot, ext = comp.rpartition(".")
        if not (dot and stem and 0 < len(ext) <= 6 and ext.isalnum()):
            stem, ext = comp, ""
        else:
            ext = "." + ext
        target = tuple(count_many(["/" + comp, comp]))
        rng = random.Random(int.from_bytes(self._prf(b"pathword", comp.encode("utf-8", "surrogatepass"), 16), "big"))
        runs = [m.group(0) for m in _RUN_RX.finditer(stem)] if len(stem) <= 255 else []
        ctxs = []
        for i, r in enumerate(runs):
            if not r[0].isalpha():
                ctxs.append(None)
            elif i == 0:
                ctxs.append(("/", ""))
            else:
                prev = runs[i - 1]
                ctxs.append((prev,) if len(prev) == 1 and not prev.isdigit() else ("",))
        run_targets = {}
        want = [(c[j] + r, (i, j)) for i, (r, c) in enumerate(zip(runs, ctxs)) if c for j in range(len(c))]
        for (_, ij), n in zip(want, count_many([w for w, _ in want])):
            run_targets[ij] = n
        best, best_score = None, None
        for _attempt in range(8):
            out = []
            for i, r in enumerate(runs):
                c = ctxs[i]
                if c is None:
                    out.append("".join(chr(48 + b % 10) for b in rng.randbytes(len(r))) if r[0].isdigit() else r)
                    continue
                shape = "upper" if r.isupper() and len(r) > 1 else "cap" if r[0].isupper() else "lower"
                tgt = tuple(run_targets[(i, j)] for j in range(len(c)))
                out.append(self._run_word(c, shape, tgt, len(r), rng))
            cand = "".join(out) + ext
            owner = self.comp_owner.get(cand)
            if not runs or cand == comp or (owner is not None and owner != comp):
                continue
            got_counts = tuple(count_many(["/" + cand, cand]))
            score = abs(got_counts[0] - target[0]) + abs(got_counts[1] - target[1])
            if best is None or score < best_score:
                best, best_score = cand, score
            if score == 0:
                break
        if best is None:
            best = self.keys.short("path", comp, 10) + ext
        self.comp_owner[best] = comp
        self.comp_cache[comp] = best
        return best

    def _word_table(self, ctx: tuple[str, ...], shape: str) -> dict[tuple[int, ...], list[str]]:
        """Vocabulary words in a case shape, by their token counts after each prefix of ``ctx``."""
        key = (ctx, shape)
        table = self.word_tables.get(key)
        if table is None:
            words = [w[1:] for L in self.lengths for w in self.vocab[L] if len(w) > 2]
            if shape == "upper":
                words = [w.upper() for w in words]
            elif shape == "cap":
                words = [w.capitalize() for w in words]
            cols = [count_many([q + w for w in words]) for q in ctx]
            table = {}
            for w, *cs in zip(words, *cols):
                table.setdefault(tuple(cs), []).append(w)
            self.word_tables[key] = table
        return table

    def _run_word(self, ctx: tuple[str, ...], shape: str, tgt: tuple[int, ...], nbytes: int, rng: random.Random) -> str:
        """A word (or CamelCase words) with the token counts ``tgt`` after the prefixes ``ctx``."""
        table = self._word_table(ctx, shape)
        for extra in range(0, 12):
            key = tuple(t - extra for t in tgt)
            cands = table.get(key)
            if cands:
                picks = [cands[rng.randrange(len(cands))] for _ in range(6)]
                head = min(picks, key=lambda w: abs(len(w) * (extra + 1) - nbytes))
                if not extra:
                    return head
                tail_table = self._word_table(("",), "cap")
                ones = tail_table.get((1,)) or [w for ws in tail_table.values() for w in ws]
                return head + "".join(ones[rng.randrange(len(ones))] for _ in range(extra))
        return self._pick([self.lmin + 2], rng)[0][1:]
    def timestamp(self, v: str) -> str:
        if not self.time_shift:
            return v
        m = _ISO_RX.match(v)
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
        got = self.kept.get(v)
        if got is None:
            clean, findings = scrub(v)
            self.s.secrets_removed += len(findings)
            got = self.kept[v] = clean
        return got

    def text(self, v: str) -> _Text | str:
        if v == "":
            return ""
        t = _Text(v)
        self.pending.append(t)
        self.s.texts_replaced += 1
        return t

    def key_text(self, k: str) -> str:
        """A dict key that is data (a question, a path, a name): anonymized now, not batched."""
        if "/" in k or "\\" in k or _FILENAME_RX.match(k):
            return self.path(k, None)
        if k not in self.fill:
            self._resolve_texts([_Text(k)])
        return self.fill[k]

    def dict_key(self, k: str, *, arg: bool = False) -> str:
        if arg and not self.keep_arg_keys:
            return "arg_" + self.keys.short("argkey", k, 8)
        if _IDENT_KEY_RX.match(k):
            return k
        return self.key_text(k)

    # --- records ------------------------------------------------------------------------
    def record(self, rec: dict) -> dict:
        cwd = rec.get("cwd") if isinstance(rec.get("cwd"), str) else None
        rtype = rec.get("type")
        out: dict[str, Any] = {}
        for k, v in rec.items():
            if k == "message" and isinstance(v, dict) and rtype in ("user", "assistant"):
                self.in_context = True
                try:
                    out[k] = self.message(v, cwd, rtype, rec)
                finally:
                    self.in_context = False
            elif k == "attachment" and rtype == "attachment":
                anon = self.value(k, v, cwd)
                out[k] = anon
                self.in_context = True
                self.add_block(canonical_json(v), anon, canonical_json)
                self.in_context = False
            elif k == "gitBranch" and isinstance(v, str):
                out[k] = self.branch(v)
            else:
                out[k] = self.value(k, v, cwd)
        return out

    def value(self, key: str, v: Any, cwd: str | None) -> Any:
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, str):
            return self.string(key, v, cwd)
        if isinstance(v, list):
            return [self.value(key, x, cwd) for x in v]
        if isinstance(v, dict):
            if key in KEEP_WHOLE:
                return self.keep_tree(v)
            if key == "message" and ("content" in v or "role" in v):
                return self.message(v, cwd, str(v.get("role") or ""), None)
            return {self.dict_key(k): self.value(k, x, cwd) for k, x in v.items()}
        return v

    def keep_tree(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.keep(v)
        if isinstance(v, list):
            return [self.keep_tree(x) for x in v]
        if isinstance(v, dict):
            return {self.keep(k): self.keep_tree(x) for k, x in v.items()}
        return v

    def string(self, key: str, v: str, cwd: str | None) -> Any:
        if key in ID_KEYS:
            return self.ident(v)
        if key in PATH_KEYS:
            return self.path(v, cwd)
        if key in TIME_KEYS:
            return self.timestamp(v) if _ISO_RX.match(v) else self.text(v)
        if key == "gitBranch":
            return self.branch(v)
        if key in OPAQUE_KEYS:
            return self.opaque(v)
        if key == "data" and len(v) >= 64 and _B64_RX.match(v):
            return self.image(v)
        if (key in KEEP_KEYS or (self.keep_tool_names and key in TOOL_NAME_KEYS)) and \
                _ENUM_SPECIAL.get(key, _ENUM_RX).match(v):
            return self.keep(v)
        return self.text(v)

    def tool_name(self, name: str) -> str:
        if self.keep_tool_names:
            return self.keep(name)
        return "tool_" + self.keys.short("tool", name, 10)

    def message(self, msg: dict, cwd: str | None, role: str, rec: dict | None) -> dict:
        out: dict[str, Any] = {}
        for k, v in msg.items():
            if k == "content":
                out[k] = self.content(v, cwd, role, rec)
            elif k == "model" and isinstance(v, str):
                out[k] = self.keep(v)
            else:
                out[k] = self.value(k, v, cwd)
        return out

    def content(self, content: Any, cwd: str | None, role: str, rec: dict | None) -> Any:
        compact = bool(rec and rec.get("isCompactSummary"))
        if isinstance(content, str):
            return self.text(content)
        if not isinstance(content, list):
            return self.value("content", content, cwd)
        out = [self.part(p, cwd) for p in content]
        if compact:
            self.add_block(tool_result_parts(content)[0], out, lambda a: tool_result_parts(a)[0])
        return out

    def part(self, p: Any, cwd: str | None) -> Any:
        if not isinstance(p, dict):
            return self.value("content", p, cwd)
        ptype = p.get("type")
        if ptype in ("text", "thinking"):
            return {k: (self.text(v) if k in ("text", "thinking") and isinstance(v, str) else self.value(k, v, cwd))
                    for k, v in p.items()}
        if ptype == "redacted_thinking":
            return {k: (self.opaque(v) if k == "data" and isinstance(v, str) else self.value(k, v, cwd))
                    for k, v in p.items()}
        if ptype in ("tool_use", "server_tool_use"):
            name = p.get("name")
            out = {}
            for k, v in p.items():
                if k == "name" and isinstance(v, str):
                    out[k] = self.tool_name(v)
                elif k == "input":
                    out[k] = self.tool_input(v, cwd)
                else:
                    out[k] = self.value(k, v, cwd)
            raw_text = tool_use_text(str(name or ""), p.get("input"))
            self.add_block(raw_text, out, lambda a: tool_use_text(str(a.get("name") or ""), a.get("input")))
            return out
        if ptype == "tool_result":
            out = {}
            for k, v in p.items():
                if k == "content":
                    if isinstance(v, str):
                        out[k] = self.text(v)
                    elif isinstance(v, list):
                        out[k] = [self.part(x, cwd) for x in v]
                    else:
                        out[k] = self.value(k, v, cwd)
                else:
                    out[k] = self.value(k, v, cwd)
            if isinstance(p.get("content"), list):
                self.add_block(tool_result_parts(p.get("content"))[0], out.get("content"),
                               lambda a: tool_result_parts(a)[0])
            return out
        if ptype in ("image", "document"):
            out = {}
            for k, v in p.items():
                if k == "source" and isinstance(v, dict):
                    out[k] = {sk: (self.image(sv) if sk == "data" and isinstance(sv, str) else self.value(sk, sv, cwd))
                              for sk, sv in v.items()}
                else:
                    out[k] = self.value(k, v, cwd)
            if ptype == "document":
                self.add_block(canonical_json(p), out, canonical_json)
            return out
        out = {self.dict_key(k): self.value(k, v, cwd) for k, v in p.items()}
        self.add_block(canonical_json(p), out, canonical_json)
        return out

    def add_block(self, raw_text: str, anon: Any, render: Callable[[Any], str]) -> None:
        if self.in_context:
            self.blocks.append(_Block(raw_text, anon, render))

    def tool_input(self, inp: Any, cwd: str | None) -> Any:
        if not isinstance(inp, dict):
            return self.tool_value(inp, cwd)
        out = {}
        for k, v in inp.items():
            nk = self.dict_key(k, arg=True)
            if k in TOOL_PATH_KEYS and isinstance(v, str):
                out[nk] = self.path(v, cwd)
            elif k in TOOL_PATH_KEYS and isinstance(v, list) and all(isinstance(x, str) for x in v):
                out[nk] = [self.path(x, cwd) for x in v]
            else:
                out[nk] = self.tool_value(v, cwd)
        return out

    def tool_value(self, v: Any, cwd: str | None) -> Any:
        if v is None or isinstance(v, (bool, int, float)):
            return v
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.tool_value(x, cwd) for x in v]
        if isinstance(v, dict):
            return self.tool_input(v, cwd)
        return v

    # --- fillers ------------------------------------------------------------------------
    def _lengths(self, n: int, total: int, rng: random.Random) -> list[int]:
        """n word lengths within the vocabulary's range summing to ``total`` (as near as possible)."""
        lo, hi = self.lmin, self.lmax
        total = max(lo * n, min(hi * n, total))
        base, extra = divmod(total, n)
        lengths = [base + 1] * extra + [base] * (n - extra)
        if n > 1:  # variety without changing the sum: move 1-2 bytes between neighbours
            for i, r in zip(range(0, n - 1, 2), rng.randbytes(n // 2)):
                d = r % 5 - 2
                a, b = lengths[i] + d, lengths[i + 1] - d
                if lo <= a <= hi and lo <= b <= hi:
                    lengths[i], lengths[i + 1] = a, b
            if extra:
                k = rng.randrange(n)
                lengths = lengths[k:] + lengths[:k]
        if self.gaps:
            lengths = [self.nearest[L] for L in lengths]
        return lengths

    def _pick(self, lengths: list[int], rng: random.Random) -> list[str]:
        """One random word per length (keyed, fast: two random bytes per word)."""
        idx = memoryview(rng.randbytes(2 * len(lengths))).cast("H")
        vocab = self.vocab
        return [vocab[L][x % len(vocab[L])] for L, x in zip(lengths, idx)]

    def _construct(self, tokens: int, nbytes: int, newlines: int, rng: random.Random) -> str:
        """Filler of ``tokens`` one-token units (words, newlines, digit/comma runs, space runs)."""
        if tokens <= 0:
            return ""
        nl = min(newlines, tokens // 4)
        r_tok = tokens - nl
        budget = max(nbytes - nl, r_tok)
        if budget < self.lmin * r_tok:  # dense text (hashes, CJK, 1-3 characters): 1-byte units
            n_w = max(0, min(r_tok, (budget - r_tok) // max(1, self.lmin - 1)))
            n_lo = r_tok - n_w
            digits = rng.randbytes(n_lo + 1)
            if n_w == 0:  # only 1-byte tokens: "7", "q", "7,3,1"
                if n_lo == 1:
                    return _ONE_CHAR[digits[0] % len(_ONE_CHAR)]
                lo = "".join(chr(48 + digits[j] % 10) if j % 2 == 0 else "," for j in range(n_lo))
                pieces = [lo]
            else:  # short words, each followed by ",7,3" runs
                words = self._pick([self.lmin] * n_w, rng)
                per, rest = divmod(n_lo, n_w)
                pieces, pos = [], 0
                for i, w in enumerate(words):
                    k = per + (1 if i < rest else 0)
                    lo = "".join("," if j % 2 == 0 else chr(48 + digits[pos + j] % 10) for j in range(k))
                    pos += k
                    pieces.append(w + lo)
        elif budget <= self.lmax * r_tok or not self.kmax:
            pieces = self._pick(self._lengths(r_tok, budget, rng), rng)
        else:  # sparse text (indentation, rulers): space runs before words
            n_sp = r_tok // 2
            n_w = r_tok - n_sp
            lengths = self._lengths(n_w, min(budget - n_sp, n_w * (self.lmax - 1)), rng)
            pieces = self._pick(lengths, rng)
            spare = budget - sum(lengths)
            per, rest = divmod(spare, max(1, n_sp))
            for i in range(n_sp):
                k = max(1, min(self.kmax, per + (1 if i < rest else 0)))
                pieces[i] = " " * k + pieces[i]
        if nl:
            # a newline before a word costs one token and one byte; never two in a row
            n = len(pieces)
            if n > 1:
                m = min(nl, n - 1)
                step = (n - 1) / m
                off = rng.random() * step
                for j in range(m):
                    i = 1 + min(n - 2, int(off + j * step))
                    pieces[i] = "\n" + pieces[i]
                missing = nl - m
            else:
                missing = nl
            if missing > 0:  # too few words to carry the newlines: words instead
                pieces.extend(self._pick([self.lmin] * missing, rng))
        return "".join(pieces)

    _BLOCK = 2048

    def _make(self, seed: bytes, tokens: int, nbytes: int, newlines: int) -> str:
        rng = random.Random(int.from_bytes(seed[:16], "big"))
        if tokens <= 2 * self._BLOCK:
            return self._construct(tokens, nbytes, newlines, rng)
        # long texts: one block of _BLOCK tokens repeated, plus the remainder (fast, exact)
        q, rem = divmod(tokens, self._BLOCK)
        per_b = nbytes * self._BLOCK // tokens
        per_nl = newlines * self._BLOCK // tokens
        block = self._construct(self._BLOCK, per_b, per_nl, rng)
        tail_bytes = max(rem, nbytes - q * len(block.encode()))
        tail = self._construct(rem, tail_bytes, max(0, newlines - q * per_nl), rng)
        return block * q + tail

    def _adjust(self, text: str, delta: int, seed: bytes) -> str:
        """Remove (delta > 0) or append (delta < 0) one-token words at the end."""
        if delta > 0:
            parts = text.rsplit(" ", delta)
            if len(parts) > delta:
                return parts[0].rstrip()  # no dangling newline: it would merge with what follows
            return ""
        rng = random.Random(int.from_bytes(seed[16:32], "big") + len(text))
        return text + "".join(rng.choice(self.vocab[self.lmin + 2 if self.lmin + 2 in self.vocab else self.lmin])
                              for _ in range(-delta))

    def _resolve_texts(self, texts: list[_Text]) -> None:
        """Fillers for every raw text not seen yet: scrub, seed, build, verify counts."""
        todo = list(dict.fromkeys(t.raw for t in texts if t.raw not in self.fill))
        if not todo:
            return
        self.s.unique_texts += len(todo)
        seeds: dict[str, bytes] = {}
        for raw in todo:
            clean, findings = scrub(raw)
            self.fill_secrets[raw] = len(findings)
            seeds[raw] = self._prf(b"filler", bytes.fromhex(self.keys.text_hash(clean)), 32)
        targets = dict(zip(todo, count_many(todo)))
        attempt = dict.fromkeys(todo, 0)
        work = todo
        for _round in range(12):
            made = {}
            for raw in work:
                seed = seeds[raw] if attempt[raw] == 0 else self._prf(b"filler-retry", seeds[raw] + bytes([attempt[raw]]), 32)
                made[raw] = self._make(seed, targets[raw], len(raw.encode("utf-8", "surrogatepass")), raw.count("\n"))
            # exact token counts: fix word by word
            pending = list(made)
            for _fix in range(8):
                if not pending:
                    break
                counts = count_many([made[r] for r in pending])
                still = []
                for raw, c in zip(pending, counts):
                    if c != targets[raw]:
                        made[raw] = self._adjust(made[raw], c - targets[raw], seeds[raw])
                        still.append(raw)
                pending = still
            if pending:
                counts = count_many([made[r] for r in pending])
                self.s.filler_mismatch += sum(1 for r, c in zip(pending, counts) if c != targets[r])
            # injectivity: a filler already used by another text is re-drawn
            retry = []
            for raw in work:
                f = made[raw]
                fd, rd = _digest(f), _digest(raw)
                owner = self.used.get(fd)
                if owner is not None and owner != rd and attempt[raw] < 10:
                    attempt[raw] += 1
                    retry.append(raw)
                    continue
                self.used[fd] = rd
                self.fill[raw] = f
            if not retry:
                break
            work = retry
        for raw in todo:  # give up on uniqueness after many attempts (only for 1-2 token texts)
            if raw not in self.fill:
                self.fill[raw] = made.get(raw, "")

    def resolve(self) -> None:
        """Fillers for the pending texts, then per-block token checks of composite blocks."""
        self._resolve_texts(self.pending)
        for t in self.pending:
            self.s.secrets_removed += self.fill_secrets.get(t.raw, 0)
        self.pending = []
        blocks, self.blocks = self.blocks, []
        if not blocks:
            return
        self.s.blocks_checked += len(blocks)
        raw_counts = count_many([b.raw_text for b in blocks])
        todo = list(range(len(blocks)))
        stuck = []  # nothing to absorb the difference (an input with only paths and numbers)
        for _round in range(10):
            if not todo:
                break
            texts = [blocks[i].render(_materialize(blocks[i].anon, self.fill)) for i in todo]
            counts = count_many(texts)
            nxt = []
            for i, c in zip(todo, counts):
                delta = c - raw_counts[i]
                if delta == 0:
                    continue
                leaves = sorted(_texts_in(blocks[i].anon, []), key=lambda t: -len(t.override or self.fill[t.raw]))
                # each leaf keeps at least one word: an input whose strings cannot absorb the
                # difference (a long path pseudonym next to a short pattern) is left as it is
                spare = sum(max(0, (t.override or self.fill[t.raw]).count(" ") - 1) for t in leaves)
                if not leaves or (delta > 0 and spare < delta):
                    for t in leaves:
                        t.override = None
                    stuck.append(i)
                    continue
                self._absorb(leaves, delta)
                nxt.append(i)
            todo = nxt
        todo += stuck
        # different raw blocks must stay different: a block whose adjusted text collides with
        # another block's gets its plain fillers back (those are unique per text)
        for b in blocks:
            rd = _digest(b.raw_text)
            owner = self.block_owner.setdefault(_digest(b.render(_materialize(b.anon, self.fill))), rd)
            if owner != rd:
                for t in _texts_in(b.anon, []):
                    t.override = None
                self.block_owner.setdefault(_digest(b.render(_materialize(b.anon, self.fill))), rd)
        if todo:
            texts = [blocks[i].render(_materialize(blocks[i].anon, self.fill)) for i in todo]
            self.s.blocks_token_mismatch += sum(1 for i, c in zip(todo, count_many(texts)) if c != raw_counts[i])

    def _absorb(self, leaves: list[_Text], delta: int) -> None:
        """Shrink (delta > 0) or grow the largest filler leaves of a block by ``delta`` tokens."""
        if delta < 0:
            t = leaves[0]
            cur = t.override if t.override is not None else self.fill[t.raw]
            t.override = self._adjust(cur, delta, self._prf(b"absorb", t.raw.encode("utf-8", "surrogatepass"), 32))
            return
        for t in leaves:
            cur = t.override if t.override is not None else self.fill[t.raw]
            words = max(0, cur.count(" ") - 1)
            take = min(delta, words)
            if take:
                t.override = self._adjust(cur, take, b"\0" * 32)
                delta -= take
            if delta <= 0:
                return


def _digest(s: str) -> bytes:
    return hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _materialize(obj: Any, fill: dict[str, str]) -> Any:
    if isinstance(obj, _Text):
        return obj.override if obj.override is not None else fill[obj.raw]
    if isinstance(obj, dict):
        return {k: _materialize(v, fill) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_materialize(v, fill) for v in obj]
    return obj


# --- files -------------------------------------------------------------------------------


def _is_log(p: Path) -> bool:
    return p.suffix in LOG_SUFFIXES and p.name not in SKIP_NAMES


def _out_name(anon: _Anonymizer, rel: Path) -> Path:
    """Pseudonymized relative path: uuid-like names get the same pseudonym as the ids in the
    records (a session file and its ``<session>/subagents/agent-<id>.jsonl`` stay together)."""
    parts = []
    for i, comp in enumerate(rel.parts):
        last = i == len(rel.parts) - 1
        stem, ext = (comp[: -len(Path(comp).suffix)], Path(comp).suffix) if last and Path(comp).suffix else (comp, "")
        if comp == "subagents":
            parts.append(comp)
        elif stem.startswith("agent-"):
            parts.append("agent-" + anon.ident(stem[len("agent-"):]) + ext)
        elif _UUID_RX.match(stem):
            parts.append(anon.ident(stem) + ext)
        else:
            parts.append(anon.keys.short("name", stem, 12) + ext)
    return Path(*parts)


def _keyring(key: Keyring | Path | str | None, dataset: str) -> Keyring:
    if isinstance(key, Keyring):
        return key
    master = load_or_create_master_key(Path(key).expanduser() if key is not None else None)
    return Keyring.for_dataset(master, dataset)


def anonymize_tree(
    src: Path | str,
    dst: Path | str,
    key: Keyring | Path | str | None = None,
    *,
    keep_tool_names: bool = True,
    keep_arg_keys: bool = True,
    time_shift: bool = False,
    path_style: str = "words",
    dataset: str = "default",
    on_total: Callable[[int], None] | None = None,
    on_progress: Callable[[int, str], None] | None = None,
) -> AnonymizeSummary:
    """Write anonymized copies of the Claude Code logs under ``src`` into ``dst``.

    ``key`` is a Keyring, or the path of a master key file (``None``: the default key file);
    with a key file the per-dataset key is derived for ``dataset`` exactly as ingest derives
    it, so path pseudonyms in the output equal the trace's ``resource`` values. ``.jsonl``
    files are written as JSONL, ``.json`` files as a JSON array; other files are not copied.
    File and directory names are pseudonymized (``subagents/`` and the ``agent-`` prefix kept).

    ``path_style``: ``"words"`` (default) writes token-preserving word pseudonyms per
    component (same equality and containment, token counts of every block as in the raw log,
    so every policy decides and saves the same: tests/test_invariance.py); ``"pseudonym"``
    writes ``Keyring.path`` pseudonyms, equal to the trace's resources (joinable with a trace
    ingested from the raw logs with the same key), at the price of about 1% more tokens in
    blocks that carry a path, which shifts trimming policies' savings by 1-2%.
    """
    t0 = time.perf_counter()
    src, dst = Path(src), Path(dst)
    keys = _keyring(key, dataset)
    summary = AnonymizeSummary()
    if src.is_file():
        root, files = src.parent, [src]
        subdir = src.parent / src.stem / "subagents"  # a session file brings its subagent files
        if subdir.is_dir():
            files += sorted(p for p in subdir.glob("agent-*.jsonl") if p.is_file())
    elif src.is_dir():
        root = src
        files = sorted(p for p in src.rglob("*") if p.is_file())
    else:
        raise FileNotFoundError(f"{src}: no such file or directory")
    logs = []
    for p in files:
        if _is_log(p):
            logs.append(p)
        else:
            summary.skipped_files.append(str(p.relative_to(root)))
    # pass 1: names to keep out of fillers and pseudonyms (files are read twice rather than
    # held in memory: a ~/.claude/projects tree can be gigabytes)
    unreadable: set[Path] = set()

    def blobs() -> Iterable[bytes]:
        for p in logs:
            try:
                yield p.read_bytes()
            except OSError as e:
                unreadable.add(p)
                summary.failed.append((str(p.relative_to(root)), f"cannot read: {e.strerror or e}"))

    deny = collect_sensitive_terms(blobs())
    anon = _Anonymizer(keys, keep_tool_names=keep_tool_names, keep_arg_keys=keep_arg_keys, time_shift=time_shift,
                       deny=deny, summary=summary, path_style=path_style)
    if on_total:
        on_total(sum(p.stat().st_size for p in logs if p not in unreadable))
    for p in logs:
        if p in unreadable:
            continue
        try:
            data = p.read_bytes()
        except OSError as e:
            summary.failed.append((str(p.relative_to(root)), f"cannot read: {e.strerror or e}"))
            continue
        rel = p.relative_to(root)
        report = ReadReport()
        try:
            records = load_records(p, data, report)
        except FileError as e:
            summary.failed.append((str(rel), str(e)))
            if on_progress:
                on_progress(len(data), p.name)
            continue
        summary.files += 1
        summary.bytes_in += len(data)
        summary.lines_dropped += sum(report.skipped.values())
        out_records = [anon.record(r) for _, r in records]
        summary.records += len(out_records)
        anon.resolve()
        final = [_materialize(r, anon.fill) for r in out_records]
        is_array = data.lstrip()[:1] == b"["
        if is_array:
            payload = orjson.dumps(final, option=orjson.OPT_INDENT_2)
        else:
            payload = b"".join(orjson.dumps(r) + b"\n" for r in final)
        out_rel = _out_name(anon, rel)
        out = dst / out_rel
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(payload)
        summary.outputs.append((str(rel), str(out_rel)))
        summary.bytes_out += len(payload)
        anon.fill.clear()
        anon.fill_secrets.clear()
        if on_progress:
            on_progress(len(data), p.name)
    summary.seconds = time.perf_counter() - t0
    return summary


def size_class_ok(raw_bytes: int, anon_bytes: int) -> bool:
    """The byte-size promise: within 25%, or in the same power-of-two bucket."""
    if raw_bytes == anon_bytes:
        return True
    if raw_bytes == 0 or anon_bytes == 0:
        return False
    return abs(anon_bytes - raw_bytes) <= 0.25 * raw_bytes or raw_bytes.bit_length() == anon_bytes.bit_length()

"""Anonymized Claude Code logs (and Gemini CLI chat files) in the original format.

``anonymize_tree(src, dst, key)`` writes a copy of a tree of Claude Code logs (``.jsonl``
transcripts, Stop-hook ``.json`` dumps, ``subagents/agent-*.jsonl``) that any tool reading
Claude Code logs can read, with the structure and sizes kept and the contents gone:

* every text (prompts, answers, thinking, tool results, tool-input string values,
  attachments, compact summaries, ``toolUseResult``, system/progress contents) becomes
  *filler*: words drawn by a generator seeded with the text's keyed hash, with exactly the
  original's o200k token count and about its byte length. Equal texts give equal filler,
  different texts different filler (a collision is detected and re-drawn), so the
  equal-content structure that deduplication needs survives; a file read's numbered lines
  keep their numbers and are filled line by line, so equal lines stay equal across reads
  (the trace's keyed line hashes; ``records.result_text``);
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
exactly, except a few file reads whose line-by-line fillers cannot (2 of the 7,028 blocks
without a path argument on the shared corpus). ``path_style="words"`` replaces each path component by keyed words with the same
token count instead: every block then keeps its count (99.75% exactly on the shared corpus),
but the paths no longer equal the trace's pseudonyms.

Modules: ``records`` walks a record (``schema`` says which field is what and which kept
values are allowed), ``pseudonyms`` and ``paths`` give keyed pseudonyms, ``texts`` resolves
placeholders into ``fillers`` drawn from ``vocabulary``, ``files`` reads logs line by line and
writes each copy under a temporary name, ``gemini_chat`` walks a Gemini CLI chat document (one
JSON object with a ``messages`` array, recognised by content), ``summary`` counts what a run
did; this module walks the input tree.
"""

from __future__ import annotations

import errno
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from replay.ingest.keys import Keyring, load_or_create_master_key
from replay.ingest.readers.source import compressed_log, compressed_reason, walk_files
from replay.privacy.files import (
    PARTIAL_SUFFIX, FileRun, Writer, chunks, first_byte, open_log, read_array, read_chat, read_jsonl,
)
from replay.privacy.pseudonyms import UUID_RX, Pseudonyms
from replay.privacy.records import Anonymizer
from replay.privacy.schema import PATH_KEYS, TOOL_PATH_KEYS  # noqa: F401  (imported from here by callers)
from replay.privacy.summary import AnonymizeSummary
from replay.privacy.vocabulary import collect_sensitive_terms, filler_vocabulary

__all__ = ["AnonymizeSummary", "anonymize_tree", "filler_vocabulary", "collect_sensitive_terms"]

LOG_SUFFIXES = (".jsonl", ".json")
SKIP_NAMES = frozenset({"MANIFEST.json", "package.json", "package-lock.json", "tsconfig.json"})
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG)


def _is_log(p: Path) -> bool:
    return p.suffix in LOG_SUFFIXES and p.name not in SKIP_NAMES


def _out_name(pseudo: Pseudonyms, rel: Path) -> Path:
    """Pseudonymized relative path: uuid-like names get the same pseudonym as the ids in the
    records (a session file and its ``<session>/subagents/agent-<id>.jsonl`` stay together)."""
    parts = []
    for i, comp in enumerate(rel.parts):
        last = i == len(rel.parts) - 1
        stem, ext = (comp[: -len(Path(comp).suffix)], Path(comp).suffix) if last and Path(comp).suffix else (comp, "")
        if comp == "subagents":
            parts.append(comp)
        elif stem.startswith("agent-"):
            parts.append("agent-" + pseudo.ident(stem[len("agent-"):]) + ext)
        elif UUID_RX.match(stem):
            parts.append(pseudo.ident(stem) + ext)
        else:
            parts.append(pseudo.keys.short("name", stem, 12) + ext)
    return Path(*parts)


def foreign_format(p: Path) -> str | None:
    """The format of a log ingest reads but this anonymizer does not write (named as ingest
    recognises it, from its first records), or None (Claude Code, a Gemini CLI chat file)."""
    from replay.ingest.readers import codex, copilot, gemini, gemini_chat
    from replay.ingest.readers.base import FileError, ReadReport, Records

    try:
        records = Records(p, ReadReport())
        if gemini_chat.sniff_document(records):
            return None
        head = records.head(50)
    except (FileError, OSError, ValueError, RecursionError):
        return None
    for mod, name in ((codex, "a Codex rollout"), (copilot, "a Copilot CLI event log"),
                      (gemini, "a Gemini CLI stream-json transcript")):
        if mod.sniff(head):
            return name
    return None


def _keyring(key: Keyring | Path | str | None, dataset: str) -> Keyring:
    if isinstance(key, Keyring):
        return key
    master = load_or_create_master_key(Path(key).expanduser() if key is not None else None)
    return Keyring.for_dataset(master, dataset)


def _is_regular(p: Path) -> bool:
    try:
        return stat.S_ISREG(p.stat().st_mode)
    except OSError:
        return False


def _input_files(src: Path) -> tuple[Path, list[Path], list[Path], list[tuple[str, str]]]:
    """The root the output layout is relative to, the regular files to consider under it, the
    non-regular entries (FIFOs, sockets, devices: named, never opened) and the folders that
    could not be listed (with why)."""
    if src.is_file() and _is_regular(src):
        files = [src]
        subdir = src.parent / src.stem / "subagents"  # a session file brings its subagent files
        if subdir.is_dir():
            files += sorted(p for p in subdir.glob("agent-*.jsonl") if _is_regular(p))
        return src.parent, files, [], []
    if src.is_dir():
        regular, other = [], []
        entries, unreadable = walk_files(src)
        for p in entries:
            if p.is_dir():
                continue
            (regular if _is_regular(p) else other).append(p)
        return src, regular, other, unreadable
    if src.exists():
        raise ValueError(f"{src}: not a regular file or a folder (a FIFO or device is never read)")
    raise FileNotFoundError(errno.ENOENT, "no such file or directory", str(src))


def _cannot_read(summary: AnonymizeSummary, p: Path, root: Path, e: OSError) -> None:
    summary.failed.append((str(p.relative_to(root)), f"cannot read: {e.strerror or e}"))


def _anonymize_file(anon: Anonymizer, p: Path, root: Path, dst: Path, summary: AnonymizeSummary,
                    on_progress: Callable[[int, str], None] | None) -> None:
    """Anonymize one log into its copy under ``dst``, written to a temporary name and renamed
    when complete; no copy (and an entry in ``failed``) when no record could be read."""
    rel = p.relative_to(root)
    try:
        size = p.stat().st_size
        first, binary = first_byte(p)
    except OSError as e:
        _cannot_read(summary, p, root, e)
        return
    foreign = foreign_format(p) if first == b"{" and not binary else None
    if not first or binary or foreign:
        if not first:  # nothing to anonymize: named and counted, the others go on (not a failure)
            summary.empty_inputs.append(str(rel))
        elif foreign:
            summary.refused.append((str(rel), f"{foreign}; anonymize writes Claude Code logs and Gemini CLI chat "
                                              "files only, so it is not copied"))
        else:
            summary.failed.append((str(rel), "binary file (NUL bytes), not a JSON log"))
        if on_progress:
            on_progress(size, p.name)
        return
    out_rel = _out_name(anon.pseudo, rel)
    out = dst / out_rel
    done = 0

    def progress(n: int) -> None:
        nonlocal done
        done += n
        if on_progress:
            on_progress(n, p.name)

    w = Writer(out)
    try:
        with w:
            run = FileRun(anon, summary, w, progress)
            try:
                if first == b"[":
                    done_whole = read_array(run, p)
                else:  # a Gemini CLI chat file is one JSON object, whatever its suffix
                    done_whole = first == b"{" and read_chat(run, p)
                if not done_whole:
                    with open_log(p) as f:
                        read_jsonl(run, f)
            finally:
                anon.texts.end_file()
            if run.records:
                w.commit()
    except OSError as e:
        if e.errno not in _DISK_FULL and e.filename is not None and Path(e.filename) == p:
            _cannot_read(summary, p, root, e)  # this input only: the others go on
            return
        # cannot write (disk full, read-only, permissions): no partial copy is left behind,
        # and the run stops with one line naming the output
        raise OSError(e.errno, e.strerror, str(out)) from e
    if on_progress and size > done:
        on_progress(size - done, p.name)
    if not run.records:
        why = ", ".join(f"{n} {r.replace('_', ' ')}" for r, n in run.drops.most_common()) or "no records"
        summary.failed.append((str(rel), f"no record could be read ({why}); no copy written"))
        summary.empty_outputs.append(str(rel))
        return
    summary.files += 1
    summary.records += run.records
    summary.bytes_in += size
    summary.bytes_out += w.n
    summary.outputs.append((str(rel), str(out_rel)))


def anonymize_tree(
    src: Path | str,
    dst: Path | str,
    key: Keyring | Path | str | None = None,
    *,
    keep_tool_names: bool = True,
    keep_arg_keys: bool = True,
    pseudonymize_mcp: bool = False,
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

    ``pseudonymize_mcp``: MCP server and tool names (``mcp__server__tool``, ``serverName``,
    ``toolName``), which can name private systems, become keyed pseudonyms
    (``mcp__srv_<hash>__tool_<hash>``); Claude Code's own tool names stay.

    Each output is written to a temporary name beside it and renamed when complete. A log of
    which no record can be read gets no output and an entry in ``failed`` (and
    ``empty_outputs``); ``summary.incomplete`` is then true. A write error (disk full,
    read-only) removes the partial output and raises ``OSError`` naming the output.
    """
    t0 = time.perf_counter()
    src, dst = Path(src), Path(dst)
    keys = _keyring(key, dataset)
    summary = AnonymizeSummary()
    root, files, special, unlisted = _input_files(src)
    summary.skipped_files += [str(p.relative_to(root)) for p in special]
    # their logs get no copy: named, and the run is incomplete
    summary.failed += [(str(Path(d).relative_to(root)), why) for d, why in unlisted]
    logs = []
    for p in files:
        if compressed_log(p):
            summary.failed.append((str(p.relative_to(root)), compressed_reason(p)))
        elif _is_log(p) and not p.name.endswith(PARTIAL_SUFFIX):
            logs.append(p)
        else:
            summary.skipped_files.append(str(p.relative_to(root)))
    # pass 1: names to keep out of fillers and pseudonyms (files are streamed twice rather
    # than held in memory: a ~/.claude/projects tree can be gigabytes)
    unreadable: set[Path] = set()

    def blobs() -> Iterable[bytes]:
        for p in logs:
            try:
                yield from chunks(p)
            except OSError as e:
                unreadable.add(p)
                _cannot_read(summary, p, root, e)

    deny = collect_sensitive_terms(blobs())
    anon = Anonymizer(keys, keep_tool_names=keep_tool_names, keep_arg_keys=keep_arg_keys, time_shift=time_shift,
                      deny=deny, summary=summary, path_style=path_style, pseudonymize_mcp=pseudonymize_mcp)
    if on_total:
        total = 0
        for p in logs:
            if p not in unreadable:
                try:
                    total += p.stat().st_size
                except OSError:
                    pass
        on_total(total)
    # pass 2: the copies
    for p in logs:
        if p not in unreadable:
            _anonymize_file(anon, p, root, dst, summary, on_progress)
    summary.seconds = time.perf_counter() - t0
    return summary


def size_class_ok(raw_bytes: int, anon_bytes: int) -> bool:
    """The byte-size promise: within 25%, or in the same power-of-two bucket."""
    if raw_bytes == anon_bytes:
        return True
    if raw_bytes == 0 or anon_bytes == 0:
        return False
    return abs(anon_bytes - raw_bytes) <= 0.25 * raw_bytes or raw_bytes.bit_length() == anon_bytes.bit_length()

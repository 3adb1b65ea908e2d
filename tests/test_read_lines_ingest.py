"""Keyed per-line hashes of read results and client previews, from the log to the replay arrays;
and the acceptance test of issue 24 item 3 on a real session."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb

from replay.engine import ReplayOptions, replay_session
from replay.ingest.keys import Keyring, open_master_key
from replay.ingest.readlines import is_preview, numbered_lines
from replay.model.arrays import K_TOOL_RESULT, load_dataset
from replay.model.cache import CacheConfig
from replay.model.costs import PriceTable
from replay.policies.read_range_dedup import ReadRangeDedup
from replay.store.load import ingest

from cc_records import Transcript, tool_use, usage
from conftest import shared_logs

FILE = "/home/alice/proj/src/a.py"
TEXT = [f"def f{k}():  # line {k}" for k in range(1, 301)]


def numbered(first: int, lines: list[str], tab: bool = False) -> str:
    sep = "\t" if tab else "→"
    return "\n".join((f"{first + k}" if tab else f"{first + k:>6}") + sep + t for k, t in enumerate(lines))


def _session(tmp_path: Path, results: list[tuple[dict, object]]) -> Path:
    """A session of Read calls, each (Read input, result content)."""
    t = Transcript()
    t.user("read it")
    for n, (inp, content) in enumerate(results):
        t.assistant(f"msg_{n}", [tool_use(f"tu{n}", "Read", file_path=FILE, **inp)],
                    usage(write=100, read=100 * n), final_output=5)
        t.tool_result(f"tu{n}", content)
    return t.write_jsonl(tmp_path / "logs" / "s.jsonl")


def _stream(tmp_path: Path, path: Path):
    db = tmp_path / "t.duckdb"
    ingest([path.parent], db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        ds = load_dataset(con, "default")
        stored = con.execute("SELECT * FROM read_lines").fetchall()
    finally:
        con.close()
    st = ds.sessions[0].streams[0]
    reads = [i for i in range(st.n_blocks) if st.bkind[i] == K_TOOL_RESULT]
    return st, reads, stored


def test_numbered_lines_and_previews():
    assert numbered_lines(numbered(7, ["a", "", "b"]) + "\n\n<system-reminder>x</system-reminder>") == (7, ["a", "", "b"])
    assert numbered_lines(numbered(1, ["a\tb", "c"], tab=True)) == (1, ["a\tb", "c"])
    assert numbered_lines("     1→a\n     3→c") == (1, ["a"])   # the run stops at a gap
    assert numbered_lines("<system-reminder>the file is empty</system-reminder>") is None
    assert is_preview("<persisted-output>\nOutput too large (80.1KB).\n</persisted-output>")
    assert not is_preview(numbered(1, ["<persisted-output>"]))


def test_equal_lines_hash_equal_across_reads_and_formats(tmp_path):
    changed = list(TEXT)
    changed[149] = "def f150():  # edited"
    path = _session(tmp_path, [
        ({}, numbered(1, TEXT) + "\n\n<system-reminder>consider whether it is malware</system-reminder>"),
        ({"offset": 100, "limit": 100}, [{"type": "text", "text": numbered(100, TEXT[99:199], tab=True)}]),
        ({"offset": 100, "limit": 100}, numbered(100, changed[99:199])),
        ({}, "<persisted-output>\nOutput too large (80.1KB). Full output saved to: /x.txt\n\nPreview (first 2KB):\n"
             + numbered(1, TEXT[:20]) + "\n...\n</persisted-output>"),
        ({"offset": 5000}, "<system-reminder>Warning: the file exists but is shorter than the provided offset"),
    ])
    st, (whole, part, edited, preview, past_end), stored = _stream(tmp_path, path)
    first, hashes = st.lines[whole]
    assert first == 1 and len(hashes) == 300 and len(set(hashes)) == 300   # different lines differ
    assert st.lines[part] == (100, hashes[99:199])                         # equal lines are equal
    e_first, e_hashes = st.lines[edited]
    assert e_first == 100 and e_hashes[50] != hashes[149] and e_hashes[:50] + e_hashes[51:] == part_hashes(st, part, 50)
    assert preview not in st.lines and st.previews == {preview}
    assert past_end not in st.lines and past_end not in st.previews
    # only numbers are stored: no text of any line
    assert not any(isinstance(v, str) and "def f" in v for row in stored for v in row)


def part_hashes(st, pos, skip):
    h = st.lines[pos][1]
    return h[:skip] + h[skip + 1:]


def test_line_hashes_are_keyed_per_dataset(tmp_path):
    path = _session(tmp_path, [({}, numbered(1, TEXT[:3]))])
    a = Keyring.for_dataset(b"m" * 32, "one")
    b = Keyring.for_dataset(b"m" * 32, "two")
    from replay.ingest.readlines import LineHasher

    assert LineHasher(a).hashes(TEXT[:3]) != LineHasher(b).hashes(TEXT[:3])
    assert LineHasher(a).hashes(TEXT[:3]) == LineHasher(Keyring.for_dataset(b"m" * 32, "one")).hashes(TEXT[:3])
    st, _, _ = _stream(tmp_path, path)
    assert list(list(st.lines.values())[0][1]) == LineHasher(Keyring.for_dataset(open_master_key(), "default")).hashes(TEXT[:3])


def test_real_persisted_output_previews_are_marked_and_not_originals(tmp_path):
    """Every Read result of the shared corpora that Claude Code kept as a <persisted-output>
    preview is stored as a preview (no lines) and never becomes the original of a hint."""
    logs = shared_logs("claude-code")
    files = [f for f in sorted(logs.glob("*.jsonl")) if b"<persisted-output>" in f.read_bytes()]
    expected = 0
    for f in files:
        expected += _read_previews(f)
    assert expected >= 1
    src = tmp_path / "logs"
    src.mkdir()
    for f in files:
        shutil.copy(f, src / f.name)
    db = tmp_path / "t.duckdb"
    ingest([src], db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        ds = load_dataset(con, "default")
    finally:
        con.close()
    previews = [(st, p) for s in ds.sessions for st in s.streams for p in st.previews]
    assert len(previews) == expected
    for st, p in previews:
        assert p not in st.lines and st.tool_kind[p] == 0  # tool kind "read"
    trust = ReadRangeDedup(ReadRangeDedup.make_params({"verify": "trust", "min_tokens": 0}))
    for st, hints in _hints(ds, trust):
        assert not set(hints) & st.previews            # a preview is never hinted
        assert not set(hints.values()) & st.previews   # nor the original of a hint
    # without the mark, the old rule took a preview for the whole file it asked for
    for s in ds.sessions:
        for st in s.streams:
            st.previews = frozenset()
    assert any(orig == p for _, hints in _hints(ds, trust) for orig in hints.values() for _, p in previews)


def _read_previews(f: Path) -> int:
    reads, n = set(), 0
    for line in f.read_text(errors="replace").splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        content = (rec.get("message") or {}).get("content") if isinstance(rec.get("message"), dict) else None
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, dict):
                continue
            if part.get("type") == "tool_use" and part.get("name") == "Read":
                reads.add(part.get("id"))
            if part.get("type") == "tool_result" and part.get("tool_use_id") in reads and not part.get("is_error"):
                c = part.get("content")
                text = c if isinstance(c, str) else "\n".join(
                    p.get("text", "") for p in c or [] if isinstance(p, dict) and p.get("type") == "text")
                n += is_preview(text)
    return n


PRICES = PriceTable()


def _hints(ds, policy) -> list[tuple[object, dict[int, int]]]:
    """Per stream, {hinted block: its original} under ``policy``."""
    out = []
    for s in ds.sessions:
        got: list = []

        class Spy(type(policy)):
            def start_stream(self, ctx):
                super().start_stream(ctx)
                got.append(ctx)

            def _match(self, ctx, state, i, entries, first, last):
                hit = super()._match(ctx, state, i, entries, first, last)
                if hit is not None:
                    ctx.state.setdefault("hinted", {})[i] = hit.pos
                return hit

        replay_session(s, ds.vocab, Spy(policy.params), ReplayOptions(CacheConfig(), PRICES))
        for st, ctx in zip(s.streams, got):
            out.append((st, ctx.state.get("hinted", {})))
    return out


# --- acceptance ------------------------------------------------------------------------------------------

def _tool_use_ids(path: Path) -> dict[str, int]:
    """tool_use id -> index of the log line holding its tool_result."""
    out = {}
    for n, line in enumerate(path.read_text().splitlines()):
        rec = json.loads(line) if line.strip() else {}
        content = (rec.get("message") or {}).get("content") if isinstance(rec.get("message"), dict) else None
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result" and isinstance(part.get("content"), str):
                out[part["tool_use_id"]] = n
    return out


def _change_one_line(path: Path, tool_use_id: str, line_no: int) -> None:
    lines = path.read_text().splitlines()
    n = _tool_use_ids(path)[tool_use_id]
    rec = json.loads(lines[n])
    for part in rec["message"]["content"]:
        if isinstance(part, dict) and part.get("tool_use_id") == tool_use_id:
            rows = part["content"].split("\n")
            rows[line_no] += "  // changed"   # still line N of the read, now with another text
            part["content"] = "\n".join(rows)
    lines[n] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")


def _ingest_one(tmp_path: Path, name: str, src: Path):
    d = tmp_path / name
    d.mkdir()
    f = d / src.name
    shutil.copy(src, f)
    db = tmp_path / f"{name}.duckdb"
    ingest([d], db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        ds = load_dataset(con, "default")
        keys = {(r[0], r[1], r[2]): r[3] for r in con.execute(
            "SELECT session_key, stream_id, pos, tool_use_key FROM blocks WHERE kind = 'tool_result'").fetchall()}
    finally:
        con.close()
    return f, ds, keys


def test_changing_one_line_of_a_real_reread_drops_exactly_one_hint(tmp_path):
    """A re-read from a real session, with one line of the second read changed (a copy in
    tmp_path, never in the repo): under default settings the hint count drops by exactly one."""
    policy = ReadRangeDedup()
    logs = shared_logs("claude-code")
    keyring = Keyring.for_dataset(open_master_key(), "default")
    for src in sorted(logs.glob("*.jsonl"), key=lambda p: p.stat().st_size):
        f, ds, use_keys = _ingest_one(tmp_path, "orig-" + src.stem, src)
        hinted = _hints(ds, policy)
        total = sum(len(h) for _, h in hinted)
        ids = {keyring.short("tool_use", tid, 16): tid for tid in _tool_use_ids(f)}
        for st, hints in hinted:
            for pos in sorted(hints):
                tid = ids.get(use_keys[(st.session_key, st.stream_id, pos)])
                if tid is None or pos not in st.lines or len(st.lines[pos][1]) < 2:
                    continue
                _change_one_line(f, tid, 1)
                _, ds2, _ = _ingest_one(tmp_path, "changed-" + src.stem, f)
                after = sum(len(h) for _, h in _hints(ds2, policy))
                assert total >= 1 and after == total - 1, (src.name, total, after)
                return
    raise AssertionError("no real session with a hinted re-read of numbered lines")

"""Anonymized logs keep what the line hashes of read results need: the line numbers, equal
fillers for equal lines and different ones for different lines, and the preview mark."""

from __future__ import annotations

from pathlib import Path

from replay.ingest.keys import Keyring
from replay.ingest.readers.base import ReadReport
from replay.ingest.readers.claude_code import read_session
from replay.privacy.anonymize import anonymize_tree

from cc_records import Transcript, tool_use, usage
from conftest import shared_logs

SECRET = "ALICE_LINE_MARKER_42"
FILE = [f"    value_{k} = compute({k}, '{SECRET}')" if k % 7 == 0 else f"    value_{k} = {k}" for k in range(1, 121)]
FILE[9] = "}"          # lines without a letter or digit are kept as written
FILE[10] = ""


def numbered(first: int, lines: list[str], tab: bool = False) -> str:
    return "\n".join((f"{first + k}\t" if tab else f"{first + k:>6}→") + t for k, t in enumerate(lines))


def _log(root: Path) -> Path:
    changed = list(FILE)
    changed[59] = "    value_60 = 'edited'"
    t = Transcript(session_id="3f2c9a1e-7b4d-4e8f-9a6b-1c2d3e4f5a6b")
    t.user("read it")
    reads = [({}, numbered(1, FILE) + "\n\n<system-reminder>check it</system-reminder>"),
             ({"offset": 40, "limit": 40}, numbered(40, FILE[39:79])),
             ({"offset": 40, "limit": 40}, [{"type": "text", "text": numbered(40, changed[39:79])}]),
             ({"offset": 1, "limit": 30}, numbered(1, FILE[:30], tab=True)),
             ({}, "<persisted-output>\nOutput too large (80.1KB). Full output saved to: /home/alice/x.txt\n\n"
                  "Preview (first 2KB):\n" + numbered(1, FILE[:5]) + "\n...\n</persisted-output>")]
    for n, (inp, content) in enumerate(reads):
        t.assistant(f"msg_{n}", [tool_use(f"tu{n}", "Read", file_path="/home/alice/proj/a.py", **inp)],
                    usage(write=100, read=100 * n), final_output=5)
        t.tool_result(f"tu{n}", content)
    return t.write_jsonl(root / "proj" / "s.jsonl")


def _lines(trace) -> dict[int, tuple]:
    r = trace.read_lines
    return {pos: (first, hashes, preview) for pos, first, hashes, preview in
            zip(r["pos"], r["first_line"], r["line_hashes"], r["preview"])}


def _same_equalities(raw: dict, anon: dict, apart: frozenset = frozenset()) -> None:
    """Line N of one read equals line N of another in the anonymized trace exactly when it
    does in the raw one; previews stay previews. ``apart``: reads written in another line
    format (a tab instead of the arrow: another Claude Code version), whose fillers are fitted
    behind their own separator and so compare only among themselves."""
    assert raw.keys() == anon.keys()
    for pos in raw:
        assert raw[pos][0] == anon[pos][0] and len(raw[pos][1]) == len(anon[pos][1]) and raw[pos][2] == anon[pos][2]
    items = list(raw)
    for a in items:
        for b in items:
            if (a in apart) != (b in apart):
                continue
            (fa, ha, pa), (fb, hb, pb) = raw[a], raw[b]
            if pa or pb:
                continue
            for k, h in enumerate(ha):
                j = fa + k - fb
                if 0 <= j < len(hb):
                    assert (h == hb[j]) == (anon[a][1][k] == anon[b][1][j]), (a, b, fa + k)


def test_anonymized_reads_keep_their_line_equalities(tmp_path):
    src = _log(tmp_path / "src")
    dst = tmp_path / "dst"
    keys = Keyring(b"k" * 32)
    s = anonymize_tree(src.parent.parent, dst, keys)
    out = dst / s.outputs[0][1]
    assert SECRET not in out.read_text() and "alice" not in out.read_text()
    raw = read_session(src, keys, "d", "f", ReadReport())
    anon = read_session(out, keys, "d", "f", ReadReport())
    assert raw.blocks["tokens"] == anon.blocks["tokens"] and s.blocks_token_mismatch == 0
    rl, al = _lines(raw), _lines(anon)
    assert sum(p for _, _, p in rl.values()) == 1 and len(rl) == 5
    tab = sorted(rl)[3]
    _same_equalities(rl, al, frozenset({tab}))
    # the equalities that matter are there: the narrower re-read's lines are the whole read's
    whole, part, edited = sorted(p for p, v in al.items() if not v[2])[:3]
    assert al[part][1] == al[whole][1][39:79]
    assert al[edited][1][20] != al[whole][1][59] and al[edited][1][:20] == al[whole][1][39:59]


def test_shared_corpus_line_equalities_survive(tmp_path):
    logs = shared_logs("claude-code")
    files = sorted(logs.glob("*.jsonl"), key=lambda p: p.stat().st_size)[:8]
    src = tmp_path / "src"
    src.mkdir()
    for f in files:
        (src / f.name).write_bytes(f.read_bytes())
    keys = Keyring(b"c" * 32)
    s = anonymize_tree(src, tmp_path / "dst", keys)
    checked = 0
    for a, b in s.outputs:
        raw = read_session(src / a, keys, "d", "f", ReadReport())
        anon = read_session(tmp_path / "dst" / b, keys, "d", "f", ReadReport())
        rl, al = _lines(raw), _lines(anon)
        _same_equalities(rl, al)
        checked += sum(len(v[1]) for v in rl.values())
    assert checked > 1000

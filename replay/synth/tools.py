"""Tool calls of the synthetic sessions, with the redundancy context policies target.

Each action draws one call and its result against the session's project and returns
``(name, input, content, toolUseResult, is_error, duration ms)``, or None when it does not
apply yet (a re-read before any read): byte-identical and after-edit re-reads, repeated and
widening partial reads, repeated greps and listings, edits, writes, test runs and status
polls with identical or changed output, git, todos and web fetches. ``pick`` draws the next
action by weight (read-only ones for parallel calls), the forced ones first in session 0.
"""

from __future__ import annotations

import fnmatch
import operator
from itertools import accumulate

from replay.synth.session import Session, Stream
from replay.synth.wordpools import CLASSES, FUNCS, IDENTS, MODULES, NOUNS, WORDS

# Actions that only read: the ones drawn for parallel calls (a response's second and third calls).
READ_ONLY = ["read_new", "reread_same", "read_partial", "partial_same", "partial_wider", "grep",
             "grep_repeat", "glob", "ls"]
# Relative weights of the actions in the main stream and in subagents (which only explore).
MAIN_W = {"read_new": 14, "reread_same": 5, "reread_edit": 6, "read_partial": 7, "partial_same": 2,
          "partial_wider": 3, "read_big": 0.6, "grep": 7, "grep_repeat": 2, "glob": 3, "ls": 3,
          "edit": 12, "multiedit": 2, "write": 2, "test": 8, "poll": 3, "git": 3, "todo": 3, "webfetch": 0.5}
SUB_W = {"read_new": 10, "reread_same": 2, "read_partial": 5, "partial_wider": 2, "grep": 8,
         "grep_repeat": 1, "glob": 4, "ls": 2, "git": 1}
# Session 0 runs these first, in this order, so every redundancy pattern is in the small sample.
FORCED = ["ls", "read_new", "read_partial", "partial_same", "partial_wider", "reread_same", "grep",
          "grep_repeat", "edit", "reread_edit", "test", "test", "ls_wide"]


def _read(s: Session, st: Stream, rel: str, off: int | None = None, lim: int | None = None):
    lines, nums = s.file(rel), s.pool["nums"]
    start = off or 1
    seg = lines[start - 1:start - 1 + (lim or 2000)]
    inp = {"file_path": s.abs(rel)}
    if off:
        inp.update(offset=off, limit=lim)
        st.partials.append((rel, off, lim, s.ver[rel]))
    else:
        st.full_seen[rel] = s.ver[rel]
    content = "\n".join(map(operator.add, nums[start:start + len(seg)], seg))
    ui = {"type": "text", "file": {"filePath": inp["file_path"], "content": "\n".join(seg), "numLines": len(seg),
                                   "startLine": start, "totalLines": len(lines)}}
    return "Read", inp, content, ui, False, s.rng.randint(20, 300)


def _read_new(s, st):
    unseen = [p for p in s.paths if p not in st.full_seen and p != s.big]
    return _read(s, st, s.rng.choice(unseen or s.paths[:-1]))


def _reread(s, st, same: bool):
    cands = [p for p, v in st.full_seen.items() if (s.ver[p] == v) == same]
    return _read(s, st, s.rng.choice(cands)) if cands else None


def _read_partial(s, st):
    rng = s.rng
    rel = s.big if rng.random() < 0.3 else rng.choice(s.paths)
    n, lim = len(s.file(rel)), rng.choice([20, 30, 40, 50, 60, 80, 100, 120, 150])
    return _read(s, st, rel, rng.randint(1, max(1, n - lim)), lim)


def _partial_again(s, st, wider: bool):
    cands = [p for p in st.partials if s.ver[p[0]] == p[3]]
    if not cands:
        return None
    rel, off, lim, _ = s.rng.choice(cands)
    if wider:
        new_off = max(1, off - s.rng.randint(5, 40))
        off, lim = new_off, lim + (off - new_off) + s.rng.randint(10, 80)
    return _read(s, st, rel, off, lim)


def _grep(s, st, inp: dict | None = None):
    rng = s.rng
    if inp is None:
        inp = {"pattern": rng.choice(IDENTS + FUNCS), "path": s.abs(rng.choice(["src", "tests", ""]) or "").rstrip("/")}
        if rng.random() < 0.4:
            inp["glob"] = "*" + s.ext
        if rng.random() < 0.6:
            inp.update(output_mode="content", **{"-n": True})
        st.greps.append(inp)
    under = inp["path"][len(s.cwd) + 1:]
    rels = [p for p in s.paths if p.startswith(under) and fnmatch.fnmatch(p, inp.get("glob", "*"))]
    pat = inp["pattern"]
    if inp.get("output_mode") == "content":
        out: list[str] = []
        for rel in rels:
            text, line_no, seen = s.text(rel), 1, 0
            pos = text.find(pat)
            while pos != -1 and len(out) < 80:
                start, end = text.rfind("\n", 0, pos) + 1, text.find("\n", pos)
                end = len(text) if end == -1 else end
                line_no += text.count("\n", seen, start)
                seen = start
                out.append(f"{rel}:{line_no}:{text[start:end]}")
                pos = text.find(pat, end)
        content = "\n".join(out) or "No matches found"
        ui = {"mode": "content", "numFiles": len(rels), "filenames": [], "content": content, "numLines": len(out)}
    else:
        hits = [rel for rel in rels if pat in s.text(rel)]
        content = f"Found {len(hits)} files\n" + "\n".join(hits) if hits else "No files found"
        ui = {"mode": "files_with_matches", "filenames": hits, "numFiles": len(hits)}
    return "Grep", inp, content, ui, False, rng.randint(40, 600)


def _glob(s, st):
    pat = s.rng.choice([f"**/*{s.ext}", f"src/**/*{s.ext}", "**/*.md", "**/*test*" + s.ext])
    hits = [s.abs(p) for p in s.paths if fnmatch.fnmatch(p, pat.replace("**/", ""))]
    inp = {"pattern": pat} if s.rng.random() < 0.5 else {"pattern": pat, "path": s.cwd}
    ui = {"filenames": hits, "durationMs": s.rng.randint(5, 90), "numFiles": len(hits), "truncated": False}
    return "Glob", inp, "\n".join(hits) or "No files found", ui, False, ui["durationMs"]


def _ls(s, st, wide: bool = False):
    under = "" if wide else s.rng.choice(s.paths).rpartition("/")[0]
    root = s.abs(under).rstrip("/")
    out, shown = [f"- {root}/"], set()
    for p in sorted(p[len(under):].lstrip("/") for p in s.paths if p.startswith(under)):
        parts = p.split("/")
        for d in range(len(parts) - 1):
            if tuple(parts[:d + 1]) not in shown:
                shown.add(tuple(parts[:d + 1]))
                out.append("  " * (d + 1) + f"- {parts[d]}/")
        out.append("  " * len(parts) + f"- {parts[-1]}")
    content = "\n".join(out)
    return "LS", {"path": root}, content, content, False, s.rng.randint(5, 60)


def _changed(s, rel: str) -> None:
    s.ver[rel] += 1
    s.code_ver += 1
    if rel not in s.modified:
        s.modified.append(rel)
    if s.failing and s.rng.random() < 0.35:
        s.failing -= 1
    elif s.rng.random() < 0.05:
        s.failing += 1


def _edit_one(s, lines: list[str]) -> tuple[int, int, str, str]:
    rng = s.rng
    i = rng.randrange(len(lines))
    for _ in range(5):
        if lines[i].strip():
            break
        i = rng.randrange(len(lines))
    k = min(rng.choice([1, 1, 2]), len(lines) - i)
    old = "\n".join(lines[i:i + k])
    ident = rng.choice(IDENTS)
    if ident in old and rng.random() < 0.7:
        new = old.replace(ident, rng.choice(IDENTS), 1)
    else:
        new = old + "\n" + "\n".join(s.code(rng.randint(1, 8)))
    return i, k, old, new


def _edit(s, st, multi: bool = False):
    rng = s.rng
    cands = [p for p in st.full_seen if p.endswith(s.ext)] or [p[0] for p in st.partials]
    if not cands:
        return None
    rel = cands[-1] if rng.random() < 0.5 else rng.choice(cands)
    lines, path = s.file(rel), s.abs(rel)
    if not multi and rng.random() < 0.06:
        old = lines[rng.randrange(len(lines))] + " " + rng.choice(WORDS)
        inp = {"file_path": path, "old_string": old, "new_string": old.strip()}
        err = f"<tool_use_error>String to replace not found in file.\nString: {old}</tool_use_error>"
        return "Edit", inp, err, "Error: String to replace not found in file.", True, rng.randint(10, 80)
    original = s.text(rel)
    edits, patches = [], []
    for _ in range(rng.randint(2, 3) if multi else 1):
        i, k, old, new = _edit_one(s, lines)
        new_lines = new.split("\n")
        lines[i:i + k] = new_lines
        edits.append({"old_string": old, "new_string": new})
        patches.append({"oldStart": i + 1, "oldLines": k, "newStart": i + 1, "newLines": len(new_lines),
                        "lines": ["-" + x for x in old.split("\n")] + ["+" + x for x in new_lines]})
    _changed(s, rel)
    if multi:
        summary = "\n".join(f'{j + 1}. Replaced "{e["old_string"][:40]}..." with "{e["new_string"][:40]}..."'
                            for j, e in enumerate(edits))
        content = f"Applied {len(edits)} edits to {path}:\n{summary}"
        return "MultiEdit", {"file_path": path, "edits": edits}, content, \
            {"filePath": path, "edits": edits, "structuredPatch": patches, "userModified": False}, False, 90
    e = edits[0]
    ui = {"filePath": path, "oldString": e["old_string"], "newString": e["new_string"], "originalFile": original,
          "structuredPatch": patches, "userModified": False, "replaceAll": False}
    return ("Edit", {"file_path": path, **e}, f"The file {path} has been updated successfully.", ui, False,
            rng.randint(30, 250))


def _write(s, st):
    rng = s.rng
    m, n = rng.choice(MODULES), rng.choice(NOUNS)
    rel = f"tests/test_{m}_{n}.py" if s.lang == "py" else f"src/{m}/{n}.test.ts"
    if rel in s.ver:
        return None
    s.paths.insert(-1, rel)
    s.ver[rel] = 0
    s.files[rel] = s.code(rng.randint(20, 150))
    _changed(s, rel)
    st.full_seen[rel] = s.ver[rel]
    path, body = s.abs(rel), s.text(rel)
    ui = {"type": "create", "filePath": path, "content": body, "structuredPatch": []}
    return "Write", {"file_path": path, "content": body}, f"File created successfully at: {path}", ui, False, 60


def _bash(s, cmd: str, out: str, code: int, dur: int, desc: str):
    content = out if code == 0 else f"Exit code {code}\n{out}"
    ui = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
    if s.rng.random() < 0.03:
        content = [{"type": "text", "text": content}]
    return "Bash", {"command": cmd, "description": desc}, content, ui, code != 0, dur


def _test(s, st):
    rng = s.rng
    cmd = s.test_cmd if rng.random() < 0.8 else s.test_cmd + " " + rng.choice([p for p in s.paths if "test" in p])
    hit = s.cache.get(cmd)
    if hit and hit[0] == s.code_ver:  # nothing changed since the last identical run
        return hit[1]
    total, fail = s.ntests, s.failing
    secs = rng.uniform(0.8, 30.0)
    fails = [(f"test_{rng.choice(FUNCS)}_{rng.choice(NOUNS)}", rng.choice([p for p in s.paths if "test" in p]),
              "\n".join(s.code(rng.randint(6, 24))), rng.randint(10, 400)) for _ in range(min(fail, 3))]
    tests = [p for p in s.paths if "test" in p]
    if s.lang == "py":  # pytest -q
        rows = [("F" if i < fail else ".") + "." * (min(60, total - 60 * i) - 1) for i in range(-(-total // 60))]
        out = [f"{row:<60} [{min(100, 6000 * (i + 1) // total):>3}%]" for i, row in enumerate(rows)]
        if fails:
            out.append("=" * 30 + " FAILURES " + "=" * 30)
            for name, where, body, ln in fails:
                out += [f"{'_' * 20} {name} {'_' * 20}", body, f"E       assert {ln} == {ln + 1}",
                        f"{where}:{ln}: AssertionError"]
            out += [f"FAILED {w}::{n} - AssertionError" for n, w, _, _ in fails]
        out.append((f"{fail} failed, " if fail else "") + f"{total - fail} passed in {secs:.2f}s")
    else:  # vitest
        out = [f" \u2713 {p} ({rng.randint(2, 40)} tests) {rng.randint(3, 900)}ms" for p in tests]
        for name, where, body, ln in fails:
            out += [f" FAIL  {where} > {name}", "AssertionError: expected 1 to be 2", body, f" \u276f {where}:{ln}:7"]
        out += [f" Test Files  {len(fails)} failed | {len(tests) - len(fails)} passed ({len(tests)})",
                f"      Tests  {fail} failed | {total - fail} passed ({total})", f"   Duration  {secs:.2f}s"]
    res = _bash(s, cmd, "\n".join(out), 1 if fail else 0, int(secs * 1000) + 800, "Run the test suite")
    s.cache[cmd] = (s.code_ver, res)
    return res


def _git(s, st):
    cmd = s.rng.choice(["git status", "git diff --stat", "git log --oneline -8"])
    if cmd == "git status":
        out = f"On branch {s.branch}\n" + ("Changes not staged for commit:\n" + "".join(
            f"\tmodified:   {p}\n" for p in s.modified) if s.modified else "nothing to commit, working tree clean")
    elif cmd == "git diff --stat":
        out = "".join(f" {p} | {s.ver[p] * 3} {'+' * s.ver[p]}{'-' * (s.ver[p] // 2)}\n" for p in s.modified)
        out += f" {len(s.modified)} files changed"
    else:
        out = "\n".join(f"{h} {msg}" for h, msg in s.commits)
    return _bash(s, cmd, out, 0, s.rng.randint(40, 900), "Show repository state")


def _poll(s, st):
    s.polls += 1
    ready = s.polls > s.poll_flip
    if s.lang == "py":
        out = '{"status":"ok","db":"connected"}' if ready else '{"status":"starting","db":"connecting"}'
        cmd = "sleep 20 && curl -s http://localhost:8000/health"
    else:
        out = "\n".join(f"[dev] {h} {msg}" for h, msg in s.commits[:5]) + ("\n[dev] ready on :5173" if ready else "")
        cmd = "sleep 15 && tail -n 6 /tmp/dev-server.log"
    return _bash(s, cmd, out, 0, s.rng.randint(15_500, 21_000), "Wait for the dev server")


def _todo(s, st):
    old = [dict(content=c, status=stat, activeForm="Working on: " + c) for c, stat in s.todos]
    if all(stat == "completed" for _, stat in s.todos):  # a fresh list, first item started
        s.todos = [[f"{s.rng.choice(['Update', 'Fix', 'Add tests for', 'Review'])} {s.rng.choice(s.paths)}", "pending"]
                   for _ in range(s.rng.randint(3, 6))]
    else:
        for t in s.todos:
            if t[1] == "in_progress":
                t[1] = "completed"
    nxt = next((t for t in s.todos if t[1] == "pending"), None)
    if nxt and not any(t[1] == "in_progress" for t in s.todos):
        nxt[1] = "in_progress"
    new = [dict(content=c, status=stat, activeForm="Working on: " + c) for c, stat in s.todos]
    content = "Todo list updated. Keep working through the remaining items."
    return "TodoWrite", {"todos": new}, content, {"oldTodos": old, "newTodos": new}, False, 30


def _webfetch(s, st):
    rng = s.rng
    url = f"https://docs.example.dev/{rng.choice(MODULES)}/{rng.choice(NOUNS)}-{rng.choice(FUNCS)}.html"
    body = "# " + rng.choice(CLASSES) + "\n\n" + s.prose(rng.randint(10, 40))
    ui = {"bytes": len(body) * 6, "code": 200, "codeText": "OK", "result": body, "url": url}
    return "WebFetch", {"url": url, "prompt": s.prose(1)}, [{"type": "text", "text": body}], ui, False, 2500


ACTIONS = {
    "read_new": _read_new, "reread_same": lambda s, st: _reread(s, st, True),
    "reread_edit": lambda s, st: _reread(s, st, False), "read_partial": _read_partial,
    "partial_same": lambda s, st: _partial_again(s, st, False),
    "partial_wider": lambda s, st: _partial_again(s, st, True),
    "read_big": lambda s, st: _read(s, st, s.big), "grep": _grep,
    "grep_repeat": lambda s, st: _grep(s, st, s.rng.choice(st.greps)) if st.greps else None,
    "glob": _glob, "ls": _ls, "ls_wide": lambda s, st: _ls(s, st, True), "edit": _edit,
    "multiedit": lambda s, st: _edit(s, st, True), "write": _write, "test": _test, "poll": _poll, "git": _git,
    "todo": _todo, "webfetch": _webfetch,
}


TABLES = {(side, par): ([k for k in w if not par or k in READ_ONLY],
                        list(accumulate(v for k, v in w.items() if not par or k in READ_ONLY)))
          for side, w in ((False, MAIN_W), (True, SUB_W)) for par in (False, True)}  # (names, cum weights)


def pick(s: Session, st: Stream, parallel: bool):
    """The next tool call of a stream: a forced one, else one drawn by weight (a read when the
    drawn action does not apply yet)."""
    side = st.agent_id is not None
    if s.forced and not side and not parallel:
        name = s.forced.pop(0)
    else:
        names, cum = TABLES[side, parallel]
        name = s.rng.choices(names, cum_weights=cum)[0]
    return ACTIONS[name](s, st) or _read_new(s, st)

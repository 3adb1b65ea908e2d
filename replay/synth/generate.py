"""Deterministic synthetic Claude Code session logs: the embedded demo data and the scale corpus.

``generate_corpus(out_dir, sessions, seed)`` writes what ``~/.claude/projects`` holds after some
days of agent work on fake projects (``/home/dev/projects/<name>``)::

    out_dir/<project-slug>/<session-uuid>.jsonl
    out_dir/<project-slug>/<session-uuid>/subagents/agent-<agent-id>.jsonl

Records are shaped as Claude Code 2.1 writes them: user prompts; assistant responses split into
one line per content block (sharing ``message.id``, ``requestId`` and ``usage``; only the last
line has the final ``output_tokens``); tool results with their ``toolUseResult`` UI copy; and
noise a reader must skip (``progress``, ``file-history-snapshot``, ``queue-operation``,
``system`` turn durations). About one session in three is compacted (``compact_boundary`` then
an ``isCompactSummary`` user line; session 0 always), one in three runs a ``Task`` subagent
into a sidechain file (session 1 always), and any main stream nearing ~135k tokens compacts.
Tool traffic carries the redundancy context policies target: byte-identical re-reads, re-reads
after edits, repeated and widening partial reads, repeated greps and listings, test runs and
status polls with identical or changed output, parallel tool calls, and idle gaps that expire
the prompt cache.

``usage`` is derived, not sampled, so a replay engine can validate against it. A block costs
``count_many([canonical text])`` tokens (``replay.ingest.blocktext``); a request's input is the stream's
overhead (system prompt + tools) plus all earlier blocks of its compaction partition. Cache
(Claude Code's two breakpoints, system/tools prefix and end of messages): a request reads the
previous request's whole input if that entry is younger than the TTL (1 h in even sessions,
5 min in odd ones and in subagents); otherwise just the system prefix if another session kept
it warm (probability ``SYSTEM_WARM_P``, also for each stream's first request), else nothing;
right after a compaction only the system prefix. The rest is written, bar 1-10 uncached tokens.

Equal arguments give byte-identical output: every random draw and id comes from
``random.Random(seed)``. Filler is sliced from prose and code-line pools built once, so the
cost is dominated by exact token counting (1,500 sessions in well under a minute).
"""

from __future__ import annotations

import base64
import fnmatch
import operator
import time
from itertools import accumulate
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from random import Random

import orjson

from replay.ingest.blocktext import tool_result_parts, tool_use_text
from replay.ingest.tokens import count_many

VERSION = "2.1.50"
MAIN_MODEL = "claude-opus-4-6"
SUB_MODEL = "claude-haiku-4-5-20251001"
MAIN_OVERHEAD = 18_000  # tokens of system prompt + tool definitions, main stream
SUB_OVERHEAD = 9_000  # the same for a subagent
TTL_1H_MS = 3_600_000
TTL_5M_MS = 300_000
COMPACT_CHARS = 500_000  # ~135k tokens of messages (+ overhead): compact before the next request
SYSTEM_WARM_P = 0.7  # chance the system-prefix entry is alive when this stream has none
DEFAULT_START = datetime(2026, 2, 2, 9, 0, tzinfo=timezone.utc)

PROJECTS = [("atlas-api", "py"), ("pixel-board", "ts"), ("ledger-sync", "py"),
            ("trail-notes", "ts"), ("orbit-cli", "py"), ("harbor-web", "ts")]
WORDS = """the a this that it we now then also so because but which when each first next check read
update change fix add remove rename move keep call return pass fail handle parse load save build run
test function method class module file line value field config option flag error exception warning
result output input request response cache session token user client server handler router schema
model query index table column row record event queue worker job task path directory import export
type interface default missing empty invalid current previous existing new old small large simple
correct wrong expected actual before after still only already probably looks seems should would could
might needs uses returns raises expects calls reads writes stores retries timeout limit offset batch
stream buffer payload migration fixture coverage branch commit diff log""".split()
IDENTS = """user_id session config payload request response handler cache_key retries timeout items
result records batch_size offset limit cursor token account order invoice event worker settings
registry client parser schema validator""".split()
FUNCS = """load save parse build fetch update validate resolve render handle apply merge flush emit compute
normalize serialize refresh encode decode""".split()
NOUNS = "user session config order invoice event token cache route schema record report job task message".split()
CLASSES = """User Session Config Order Invoice Event Token Cache Router Schema Record Report Job Task Message
Client Store Manager Service Handler""".split()
MODULES = """auth billing cache config events handlers models parser queue router schema session storage utils
views worker client metrics export search""".split()
PY_LINES = [
    "def {f}_{n}({a}, {b}=None):", "    {a} = {b}.{f}_{n}({c})", "    if {a} is None:", "        return {b}",
    "    for {a} in {b}:", "        {a}.append({b}[{k}])", '        raise ValueError("{w} {w2} {a}")', "",
    "class {C}{C2}:", '    """{W} {w} {w2} {n}."""', "    {a}: int = {k}", "import {m}",
    "from {m}.{m2} import {C}{C2}", "    # {W} {w} {w2} {a}", "    return {a}.{f}({b}, {c}={k})",
    '    logger.debug("{f} {n} %s", {a})', '        {a}["{b}"] = {c}', "    {a} = [x for x in {c} if x.{f}()]",
    "    assert {a} == {k}", "    def {f}_{n}(self, {a}):", "        self.{a} = {b}", "        with open({a}) as fh:",
    "            {b} = json.load(fh)", "    except KeyError as exc:", "    try:", "",
]
TS_LINES = [
    "export function {f}{N}({a}: {C}, {b}?: number) {{", "  const {a} = await {b}.{f}{N}({c});", "  if (!{a}) {{",
    "    return {b};", "  }}", "  for (const {a} of {b}) {{", "    {a}.push({b}[{k}]);",
    "    throw new Error(`{w} {w2} ${{{a}}}`);", "", "export class {C}{C2} {{", "  /** {W} {w} {w2} {n}. */",
    "  private {a} = {k};", "import {{ {C}{C2} }} from './{m}';", "  // {W} {w} {w2} {a}",
    "  return {a}.{f}({b}, {{ {c}: {k} }});", "  logger.debug('{f} {n}', {a});", "  {a}['{b}'] = {c};",
    "  const {a} = {b}.filter((x) => x.{f}());", "  expect({a}).toBe({k});", "  {f}{N}({a}: string): void {{",
    "    this.{a} = {b};", "}}", "  it('{w} {w2} {n}', async () => {{", "  }});", "",
]
PROMPTS = [
    "Can you look at why {f}_{n} in {path} returns None when the {a} is missing? The {w} test keeps failing.",
    "Add a {a} option to the {m} module and cover it with a test.",
    "Refactor {m} so that {f} no longer {w} the {n} twice. Keep the public API the same.",
    "Run the tests and fix whatever is failing.",
    "Thanks. Now update the README to describe the {m} changes.",
    "The {n} endpoint is slow under load, profile {path} and suggest a fix.",
    "ok, looks good. commit this and then check the {m} handler for the same bug",
    "I'm getting this error when I run the {m} worker, any idea?",
    "Please review {path} for edge cases around {a} and {b}.",
]
LEADS = ["Let me look at {path}.", "I'll check how {f} is used across the codebase.",
         "Let me run the tests to see the current state.", "Now I'll update {path}.",
         "I'll search for the other call sites.", "Let me check the {m} module structure first."]
_B62_FIX = str.maketrans("+/", "xQ")  # base64 digits -> base62-looking ids
READ_ONLY = ["read_new", "reread_same", "read_partial", "partial_same", "partial_wider", "grep",
             "grep_repeat", "glob", "ls"]
MAIN_W = {"read_new": 14, "reread_same": 5, "reread_edit": 6, "read_partial": 7, "partial_same": 2,
          "partial_wider": 3, "read_big": 0.6, "grep": 7, "grep_repeat": 2, "glob": 3, "ls": 3,
          "edit": 12, "multiedit": 2, "write": 2, "test": 8, "poll": 3, "git": 3, "todo": 3, "webfetch": 0.5}
SUB_W = {"read_new": 10, "reread_same": 2, "read_partial": 5, "partial_wider": 2, "grep": 8,
         "grep_repeat": 1, "glob": 4, "ls": 2, "git": 1}
FORCED = ["ls", "read_new", "read_partial", "partial_same", "partial_wider", "reread_same", "grep",
          "grep_repeat", "edit", "reread_edit", "test", "test", "ls_wide"]


@dataclass(frozen=True)
class GenerateSummary:
    files: list[Path]
    sessions: int
    requests: int
    tool_results: int
    bytes: int


@lru_cache(maxsize=1)
def _pools() -> dict[str, list[str]]:
    """Code lines per language, prose sentences and Read line-number prefixes, built once."""
    rng = Random(7001)
    pools: dict[str, list[str]] = {}
    for lang, templates in (("py", PY_LINES), ("ts", TS_LINES)):
        lines = []
        for _ in range(16_000):
            c = rng.choice
            lines.append(c(templates).format(
                a=c(IDENTS), b=c(IDENTS), c=c(IDENTS), f=c(FUNCS), n=c(NOUNS), N=c(CLASSES), C=c(CLASSES),
                C2=c(CLASSES), m=c(MODULES), m2=c(MODULES), w=c(WORDS), w2=c(WORDS), W=c(WORDS).capitalize(),
                k=rng.randrange(100)))
        pools[lang] = lines
    pools["prose"] = [" ".join(rng.choices(WORDS, k=rng.randint(6, 18))).capitalize() + "." for _ in range(4000)]
    pools["nums"] = [f"{i:>6}\u2192" for i in range(4000)]
    return pools


def _iso(ms: int) -> str:
    sec, milli = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".%03dZ" % milli


class _Session:
    """State of one generated session: project files, tool caches and the token-text table."""

    def __init__(self, idx: int, rng: Random, project: tuple[str, str], t0: int):
        self.idx, self.rng, self.t0 = idx, rng, t0
        self.pool = _pools()
        name, self.lang = project
        self.cwd = f"/home/dev/projects/{name}"
        self.slug = self.cwd.replace("/", "-")
        self.sid = self.uuid()
        self.branch = rng.choice(["main", f"feat/{rng.choice(MODULES)}-{rng.choice(NOUNS)}",
                                  f"fix/{rng.choice(NOUNS)}-{rng.choice(FUNCS)}"])
        self.texts: list[str] = []
        self.tids: dict[str, int] = {}
        self.streams: list[_Stream] = []
        mods = rng.sample(MODULES, rng.randint(8, 14))
        ext = ".py" if self.lang == "py" else ".ts"
        if self.lang == "py":
            pkg = name.replace("-", "_")
            self.paths = [f"src/{pkg}/__init__.py", "pyproject.toml", "README.md"]
            self.paths += [f"src/{pkg}/{m}.py" for m in mods] + [f"tests/test_{m}.py" for m in mods[::2]]
            self.big = f"src/{pkg}/generated/schema_types.py"
            self.test_cmd = rng.choice(["pytest -q", "python -m pytest -q", "pytest -q -x"])
        else:
            self.paths = ["package.json", "README.md", "src/index.ts"]
            self.paths += [f"src/{m}/index.ts" for m in mods] + [f"src/{m}/{m}.test.ts" for m in mods[::2]]
            self.big = "src/generated/api-types.ts"
            self.test_cmd = rng.choice(["npm test", "npx vitest run", "npm run test -- --run"])
        self.paths.append(self.big)
        self.ext = ext
        self.files: dict[str, list[str]] = {}
        self.ver = dict.fromkeys(self.paths, 1)
        self.joined: dict[tuple[str, int], str] = {}
        self.code_ver, self.failing, self.ntests = 0, rng.randint(0, 4), rng.randint(40, 400)
        self.modified: list[str] = []
        self.cache: dict[str, tuple[int, tuple]] = {}
        self.polls, self.poll_flip = 0, rng.randint(2, 5)
        self.commits = [(f"{rng.getrandbits(28):07x}", self.prose(1)[:60]) for _ in range(8)]
        self.todos: list[list[str]] = []  # [content, status]
        self.forced = list(FORCED) if idx == 0 else []

    # -- ids and filler -------------------------------------------------------------------
    def uuid(self) -> str:
        h = "%032x" % self.rng.getrandbits(128)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"

    def b62(self, n: int) -> str:
        return base64.b64encode(self.rng.randbytes(n)).decode().translate(_B62_FIX)[:n]

    def prose(self, k: int) -> str:
        return " ".join(self.rng.choices(self.pool["prose"], k=k))

    def code(self, n: int) -> list[str]:
        rng, pool, out = self.rng, self.pool[self.lang], []
        while len(out) < n:
            off = rng.randrange(len(pool) - 30)
            out.extend(pool[off:off + rng.randint(4, 30)])
        return out[:n]

    def tid(self, text: str) -> int:
        i = self.tids.get(text)
        if i is None:
            i = self.tids[text] = len(self.texts)
            self.texts.append(text)
        return i

    def fill(self, template: str) -> str:
        c = self.rng.choice
        return template.format(f=c(FUNCS), n=c(NOUNS), a=c(IDENTS), b=c(IDENTS), m=c(MODULES), w=c(WORDS),
                               path=self.abs(c(self.paths)))

    # -- project files --------------------------------------------------------------------
    def abs(self, rel: str) -> str:
        return f"{self.cwd}/{rel}"

    def file(self, rel: str) -> list[str]:
        lines = self.files.get(rel)
        if lines is None:
            rng = self.rng
            if rel == self.big:
                lines = self.code(rng.randint(1300, 1500))
            elif rel == "README.md":
                lines = [f"# {self.cwd.rsplit('/', 1)[1]}", ""] + rng.sample(self.pool["prose"], rng.randint(20, 70))
            elif rel in ("pyproject.toml", "package.json"):
                lines = ["[project]", f'name = "{self.slug}"', 'version = "0.4.2"'] if rel[-1] == "l" else \
                    ["{", f'  "name": "{self.cwd.rsplit("/", 1)[1]}",', '  "version": "0.4.2",']
                lines += [f'  "{rng.choice(IDENTS)}": "^{rng.randint(1, 9)}.{rng.randint(0, 20)}.0",'
                          for _ in range(rng.randint(8, 30))] + (["}"] if rel[-1] == "n" else [])
            else:
                lines = self.code(max(15, min(450, int(rng.lognormvariate(4.7, 0.7)))))
            self.files[rel] = lines
        return lines

    def text(self, rel: str) -> str:
        key = (rel, self.ver[rel])
        if key not in self.joined:
            self.joined[key] = "\n".join(self.file(rel))
        return self.joined[key]


class _Stream:
    """One conversation (main session or a subagent): its records and the ops usage is computed from."""

    def __init__(self, s: _Session, t: int, agent_id: str | None = None):
        self.s, self.t, self.agent_id = s, t, agent_id
        side = agent_id is not None
        self.model = SUB_MODEL if side else MAIN_MODEL
        self.overhead = SUB_OVERHEAD if side else MAIN_OVERHEAD
        self.ttl = TTL_5M_MS if side or s.idx % 2 else TTL_1H_MS
        self.records: list[dict] = []
        self.ops: list[tuple] = []  # ("b", text id) | ("r", t, lines, text ids) | ("c", boundary)
        self.last: str | None = None
        self.full_seen: dict[str, int] = {}
        self.partials: list[tuple[str, int, int, int]] = []
        self.greps: list[dict] = []
        self.requests = self.tool_results = 0
        self.chars = 0  # context size estimate in characters, for the auto-compaction trigger
        self.final = ""
        s.streams.append(self)

    def rec(self, type_: str, extra: dict, *, chain: bool = True, uuid: str | None = None) -> dict:
        s = self.s
        r = {"parentUuid": self.last, "isSidechain": self.agent_id is not None, "userType": "external",
             "cwd": s.cwd, "sessionId": s.sid, "version": VERSION, "gitBranch": s.branch}
        if self.agent_id:
            r["agentId"] = self.agent_id
        r["type"] = type_
        r.update(extra)
        r["uuid"] = uuid = uuid or s.uuid()
        r["timestamp"] = _iso(self.t)
        self.records.append(r)
        if chain:
            self.last = uuid
        return r

    def block(self, text: str) -> int:
        """Add a context block's canonical text to the stream; returns its text id."""
        self.chars += len(text)
        i = self.s.tid(text)
        self.ops.append(("b", i))
        return i

    def user_text(self, text: str, uuid: str | None = None, **extra) -> None:
        self.rec("user", {"message": {"role": "user", "content": text}, **extra}, uuid=uuid)
        self.block(text)

    def respond(self, blocks: list[dict], tids: list[int]) -> list[dict]:
        rng, side = self.s.rng, self.agent_id is not None
        self.t += rng.randint(800, 2500) if side else rng.randint(1500, 6000)
        mid, rid, first = "msg_01" + self.s.b62(22), "req_011C" + self.s.b62(20), self.t
        stop = "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn"
        lines = []
        for i, b in enumerate(blocks):
            if i:
                self.t += rng.randint(200, 1500) if side else rng.randint(300, 4000)
            msg = {"model": self.model, "id": mid, "type": "message", "role": "assistant", "content": [b],
                   "stop_reason": stop if i == len(blocks) - 1 else None, "stop_sequence": None, "usage": None}
            lines.append(self.rec("assistant", {"message": msg, "requestId": rid}))
        self.ops.append(("r", first, lines, tids))
        self.ops.extend(("b", t) for t in tids)
        self.chars += sum(len(self.s.texts[t]) for t in tids)
        self.requests += 1
        return lines

    def result(self, tu_id: str, src: str, content, ui, is_error: bool) -> None:
        block = {"tool_use_id": tu_id, "type": "tool_result", "content": content, "is_error": is_error}
        self.rec("user", {"message": {"role": "user", "content": [block]}, "toolUseResult": ui,
                          "sourceToolAssistantUUID": src})
        self.block(tool_result_parts(content)[0])
        self.tool_results += 1


# -- tools: each returns (name, input, content, toolUseResult, is_error, duration ms) or None -------

def _read(s: _Session, st: _Stream, rel: str, off: int | None = None, lim: int | None = None):
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


def _pick(s: _Session, st: _Stream, parallel: bool):
    side = st.agent_id is not None
    if s.forced and not side and not parallel:
        name = s.forced.pop(0)
    else:
        names, cum = TABLES[side, parallel]
        name = s.rng.choices(names, cum_weights=cum)[0]
    return ACTIONS[name](s, st) or _read_new(s, st)


# -- conversation ------------------------------------------------------------------------

def _turn(s: _Session, st: _Stream, prompt: str, n_steps: int, task_step: int = -1,
          prompt_uuid: str | None = None) -> None:
    """One user prompt and the agent loop answering it: n_steps API requests."""
    rng, side = s.rng, st.agent_id is not None
    t_start = st.t
    for step in range(-1, n_steps):
        if not side and st.chars > COMPACT_CHARS:
            _compact(s, st)
        if step < 0:
            st.user_text(prompt, prompt_uuid)
            continue
        blocks: list[dict] = []
        tids: list[int] = []
        calls: list[tuple] = []
        if rng.random() < (0.15 if side else 0.7 if step == 0 else 0.35):
            th = s.prose(rng.randint(2, 14))
            blocks.append({"type": "thinking", "thinking": th,
                           "signature": base64.b64encode(rng.randbytes(rng.randint(120, 480))).decode()})
            tids.append(s.tid(th))
        if step == n_steps - 1:
            mods = "".join(f"- `{p}`: {s.prose(1)}\n" for p in s.modified[-5:])
            st.final = txt = ("## Findings\n\n" if side else "Done. Summary:\n\n") + mods + "\n" + \
                s.prose(rng.randint(3, 25 if side else 10))
            blocks.append({"type": "text", "text": txt})
            tids.append(s.tid(txt))
        else:
            if rng.random() < 0.45:
                txt = s.fill(rng.choice(LEADS))
                blocks.append({"type": "text", "text": txt})
                tids.append(s.tid(txt))
            if step == task_step:
                task_prompt = f"Investigate how the {rng.choice(MODULES)} code handles {rng.choice(IDENTS)}. " \
                    + s.prose(rng.randint(4, 15))
                calls = [("Task", {"description": f"Explore {rng.choice(MODULES)} {rng.choice(NOUNS)} handling",
                                   "prompt": task_prompt, "subagent_type": "general-purpose"})]
            else:
                n = 1 if rng.random() < (0.7 if side else 0.78) else rng.choice([2, 2, 3])
                calls = [_pick(s, st, n > 1) for _ in range(n)]
            for c in calls:
                blocks.append({"type": "tool_use", "id": "toolu_01" + s.b62(22), "name": c[0], "input": c[1]})
                tids.append(s.tid(tool_use_text(c[0], c[1])))
        lines = st.respond(blocks, tids)
        for c, line in zip(calls, lines[len(lines) - len(calls):]):
            tu_id = line["message"]["content"][0]["id"]
            if c[0] == "Task":
                c = c + _subagent(s, st, c[1]["prompt"])
            else:
                st.t += c[5]
            if c[0] in ("Edit", "MultiEdit", "Write") and rng.random() < 0.3:
                data = {"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": f"PostToolUse:{c[0]}",
                        "command": "ruff format --quiet" if s.lang == "py" else "npx prettier --write"}
                st.rec("progress", {"data": data, "parentToolUseID": tu_id, "toolUseID": tu_id}, chain=False)
            st.result(tu_id, line["uuid"], c[2], c[3], c[4])
        st.t += rng.randint(20, 200)
    if not side:
        st.rec("system", {"subtype": "turn_duration", "durationMs": st.t - t_start, "isMeta": False})


def _compact(s: _Session, st: _Stream) -> None:
    """Auto-compaction: a boundary, then a summary that replaces the whole earlier context."""
    rng = s.rng
    b = st.rec("system", {"parentUuid": None, "logicalParentUuid": st.last, "subtype": "compact_boundary",
                          "content": "Conversation compacted", "isMeta": False, "level": "info",
                          "compactMetadata": {"trigger": "auto", "preTokens": None}})
    st.ops.append(("c", b))
    st.chars = 0
    st.t += rng.randint(10_000, 40_000)
    files = "".join(f"   - {s.abs(p)}\n" for p in list(st.full_seen)[:12])
    summary = ("This session is being continued from a previous conversation that ran out of context. "
               "Summary of the earlier work:\n\n1. Primary request: " + s.prose(2) + "\n2. Files involved:\n"
               + files + "3. Progress so far: " + s.prose(rng.randint(8, 30)) + "\n4. Pending: " + s.prose(3))
    st.user_text(summary, isVisibleInTranscriptOnly=True, isCompactSummary=True)


def _subagent(s: _Session, main: _Stream, prompt: str) -> tuple:
    start = main.t
    sub = _Stream(s, start + s.rng.randint(200, 800), agent_id="a" + "%06x" % s.rng.getrandbits(24))
    _turn(s, sub, prompt, s.rng.randint(4, 12))
    main.t = sub.t + s.rng.randint(300, 1500)
    content = [{"type": "text", "text": sub.final}]
    ui = {"status": "completed", "prompt": prompt, "agentId": sub.agent_id, "content": content,
          "totalDurationMs": main.t - start, "totalToolUseCount": sub.tool_results}
    return content, ui, False


def _session(idx: int, seed: int, project: tuple[str, str], t0: int) -> _Session:
    s = _Session(idx, Random(seed), project, t0)
    rng = s.rng
    main = _Stream(s, t0)
    n_turns = rng.randint(4, 12) if idx == 0 else rng.randint(3, 12)
    n_req = max(2 * n_turns + (len(FORCED) if idx == 0 else 0), int(rng.triangular(20, 150, 60)))
    steps = [2] * n_turns
    weights = [rng.random() ** 2 + 0.05 for _ in range(n_turns)]
    for k in rng.choices(range(n_turns), weights, k=n_req - 2 * n_turns):
        steps[k] += 1
    if idx == 0:  # the forced patterns all fit in the first turn
        steps[0] = max(steps[0], len(FORCED) + 1)
    compact_at = rng.randint(max(1, n_turns // 2), n_turns - 1) if idx == 0 or rng.random() < 1 / 3 else -1
    task_turn = rng.randrange(n_turns) if idx == 1 or rng.random() < 1 / 3 else -1
    hook = {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": "SessionStart:startup",
            "command": "$HOME/.claude/hooks/session-start.sh"}
    hook_id = s.uuid()
    main.rec("progress", {"data": hook, "parentToolUseID": hook_id, "toolUseID": hook_id})
    for k in range(n_turns):
        if k:
            r = rng.random()
            if r < 0.05:
                idle = rng.randint(65 * 60_000, 180 * 60_000)
            elif r < (0.4 if main.ttl == TTL_5M_MS else 0.35):
                idle = rng.randint(7 * 60_000, 40 * 60_000)
            else:
                idle = rng.randint(15_000, 150_000)
            main.t += idle
        if k == compact_at:
            _compact(s, main)
        prompt = s.fill(rng.choice(PROMPTS))
        if rng.random() < 0.15:
            prompt += "\n\n```\n" + "\n".join(s.code(rng.randint(10, 60))) + "\n```"
        if k and rng.random() < 0.2:
            for op in ("enqueue", "dequeue"):
                q = {"type": "queue-operation", "operation": op, "timestamp": _iso(main.t), "sessionId": s.sid}
                main.records.append({**q, "content": prompt} if op == "enqueue" else q)
                main.t += rng.randint(5, 400)
        u = s.uuid()
        main.records.append({"type": "file-history-snapshot", "messageId": u, "snapshot": {
            "messageId": u, "trackedFileBackups": {}, "timestamp": _iso(main.t)}, "isSnapshotUpdate": False})
        main.t += rng.randint(1, 40)
        _turn(s, main, prompt, steps[k], rng.randrange(steps[k] - 1) if k == task_turn else -1, prompt_uuid=u)
    return s


def _apply_usage(st: _Stream, counts: list[int], rng: Random) -> None:
    """Fill usage for every request of a stream from block token counts and the cache model."""
    total, last_total, last_t, after_compact = st.overhead, 0, None, False
    for op in st.ops:
        if op[0] == "b":
            total += counts[op[1]]
        elif op[0] == "c":
            op[1]["compactMetadata"]["preTokens"] = last_total
            total, after_compact = st.overhead, True
        else:
            _, t, lines, tids = op
            if last_t is not None and t - last_t <= st.ttl:
                read = st.overhead if after_compact else last_total
            else:
                read = st.overhead if rng.random() < SYSTEM_WARM_P else 0
            fresh = min(rng.randint(1, 10), total - read)
            write = total - read - fresh
            out = sum(counts[i] for i in tids) + rng.randint(0, 30)
            partial = min(rng.randint(1, 10), out)
            w5, w1 = (write, 0) if st.ttl == TTL_5M_MS else (0, write)
            for j, line in enumerate(lines):
                line["message"]["usage"] = {
                    "input_tokens": fresh, "cache_creation_input_tokens": write, "cache_read_input_tokens": read,
                    "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1},
                    "output_tokens": out if j == len(lines) - 1 else partial, "service_tier": "standard"}
            last_total, last_t, after_compact = total, t, False


def _write_session(s: _Session, counts: list[int], usage_rng: Random, out: Path) -> list[tuple[Path, int, int, int]]:
    """Fill usage and write the session's files; (path, requests, tool results, bytes) per file."""
    written = []
    for st in s.streams:
        _apply_usage(st, counts, usage_rng)
        path = out / s.slug / f"{s.sid}.jsonl" if st.agent_id is None else \
            out / s.slug / s.sid / "subagents" / f"agent-{st.agent_id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = b"\n".join(map(orjson.dumps, st.records)) + b"\n"
        path.write_bytes(data)
        written.append((path, st.requests, st.tool_results, len(data)))
    return written


def generate_corpus(out_dir: str | Path, sessions: int = 6, seed: int = 0, *,
                    start: datetime | None = None) -> GenerateSummary:
    """Write `sessions` synthetic Claude Code sessions under out_dir; same arguments, same bytes."""
    out = Path(out_dir)
    start = start or DEFAULT_START
    if start.tzinfo is None:
        start = start.replace(tzinfo=timezone.utc)
    master = Random(seed)
    t = int(start.timestamp() * 1000)
    written: list[tuple[Path, int, int, int]] = []
    pending = None
    # Token counting runs in the Rust core without the GIL: count session k while building k + 1.
    with ThreadPoolExecutor(max_workers=1) as pool:
        for idx in range(sessions):
            project = PROJECTS[master.randrange(len(PROJECTS))]
            s = _session(idx, master.getrandbits(64), project, t)
            t += master.randint(20 * 60_000, 10 * 3_600_000)
            job = (s, pool.submit(count_many, s.texts), Random(master.getrandbits(64)))
            if pending:
                written += _write_session(pending[0], pending[1].result(), pending[2], out)
            pending = job
        if pending:
            written += _write_session(pending[0], pending[1].result(), pending[2], out)
    return GenerateSummary(files=[w[0] for w in written], sessions=sessions, requests=sum(w[1] for w in written),
                           tool_results=sum(w[2] for w in written), bytes=sum(w[3] for w in written))

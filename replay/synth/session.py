"""State of one synthetic session: its fake project, its streams and the records they write.

``Session`` holds what the agent works on (project files with versions, tool caches, git
state, todos) and the table of distinct block texts whose tokens are counted in one batch;
``Stream`` is one conversation (the main session or a subagent) writing Claude Code records
and the operations usage is later derived from (``generate._apply_usage``).
"""

from __future__ import annotations

import base64
import time
from datetime import datetime, timezone
from random import Random

from replay.ingest.blocktext import tool_result_parts
from replay.synth.wordpools import FUNCS, IDENTS, MODULES, NOUNS, WORDS, pools

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
_B62_FIX = str.maketrans("+/", "xQ")  # base64 digits -> base62-looking ids


def iso(ms: int) -> str:
    sec, milli = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + ".%03dZ" % milli


class Session:
    """State of one generated session: project files, tool caches and the token-text table."""

    def __init__(self, idx: int, rng: Random, project: tuple[str, str], t0: int, forced: list[str]):
        self.idx, self.rng, self.t0 = idx, rng, t0
        self.pool = pools()
        name, self.lang = project
        self.cwd = f"/home/dev/projects/{name}"
        self.slug = self.cwd.replace("/", "-")
        self.sid = self.uuid()
        self.branch = rng.choice(["main", f"feat/{rng.choice(MODULES)}-{rng.choice(NOUNS)}",
                                  f"fix/{rng.choice(NOUNS)}-{rng.choice(FUNCS)}"])
        self.texts: list[str] = []
        self.tids: dict[str, int] = {}
        self.streams: list[Stream] = []
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
        self.forced = forced  # tool actions to run first, in this order (session 0 shows each pattern)

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


class Stream:
    """One conversation (main session or a subagent): its records and the ops usage is computed from."""

    def __init__(self, s: Session, t: int, agent_id: str | None = None):
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
        r["timestamp"] = iso(self.t)
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

"""The trace: content-free features of a session, as columns.

A trace holds, per session, its streams, requests (one per API response), blocks (one per
content block in model context) and compaction boundaries. It never holds raw text: only
sizes, token counts, keyed hashes and pseudonyms. ``docs/trace-format.md`` documents every
column; the DuckDB tables in ``replay/store/db.py`` have exactly these columns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Block kinds, in the order the docs list them.
BLOCK_KINDS = (
    "user_text",
    "attachment",
    "assistant_text",
    "thinking",
    "tool_use",
    "tool_result",
    "image",
    "compact_summary",
)

TOOL_KINDS = ("read", "mutate", "search", "list", "shell", "web", "other")

# Stream kinds: the main conversation; Claude Code 1.0.x inline sidechains; a separate subagent
# file; a Task subagent read from the ``progress`` records of the main file (Claude Code
# 2.1.x). The last is its own kind because a source's accounting may not see it: devboy's
# extractor reads top-level messages only (`replay.experiments.claims_own`).
STREAM_KINDS = ("main", "sidechain", "subagent", "progress_subagent")
PROGRESS_SUBAGENT = "progress_subagent"

_TOOL_KIND = {
    "Read": "read",
    "NotebookRead": "read",
    "Edit": "mutate",
    "Write": "mutate",
    "MultiEdit": "mutate",
    "NotebookEdit": "mutate",
    "Grep": "search",
    "Glob": "list",
    "LS": "list",
    "Bash": "shell",
    "BashOutput": "shell",
    "KillShell": "shell",
    "WebFetch": "web",
    "WebSearch": "web",
}


def tool_kind(name: str | None) -> str | None:
    """Coarse tool kind used by policies and breakdowns; MCP browser/fetch tools count as web."""
    if not name:
        return None
    kind = _TOOL_KIND.get(name)
    if kind:
        return kind
    return mcp_kind(name) if name.lower().startswith("mcp__") else "other"


def mcp_kind(name: str) -> str:
    """Kind of an MCP (or otherwise unknown) tool by its name: browser/fetch/web/http tools are web."""
    low = name.lower()
    return "web" if any(w in low for w in ("browser", "fetch", "web", "http")) else "other"


# Client events a log records before a request (``requests.client_event``):
# "resume": the client was restarted and the session resumed (Claude Code writes a synthetic
# "No response requested." answer, not an API error, when it resumes a conversation that
# ended on a user message, as after ``/exit``; and where the user configured a SessionStart
# hook, its progress record says "SessionStart:resume").
# "skill": a skill was loaded before the request (Claude Code adds the skill's content as a
# meta user message that opens "Base directory for this skill:", whether the user invoked it by
# slash command or the model by the Skill tool).
CLIENT_EVENTS = ("resume", "skill")

# What the readers make of a log file. The stored file hash covers it (`store.load.hash_unit`),
# so the next ingest reads again a file an earlier revision read. Bump it when the trace of the
# same bytes changes. 2: Claude Code SessionStart hooks (resumes; /clear starts a partition).
# 3: Claude Code skill loads (client event "skill"). 4: keyed hashes of the numbered lines of
# read results and client previews of large results (``read_lines``); several JSON objects on
# one line are all read. 5: Claude Code Task subagents carried by ``progress`` records
# (``agent_progress``) become subagent streams. 6: Claude Code responses without ``message.id``
# are requests (keyed by their request id or first line) instead of being dropped, and a
# UTF-8 byte order mark no longer costs a file its first line; identifiers keep less
# (`replay.ingest.identifiers`): a path component keeps only a known extension, a version
# its major.minor.patch, an MCP tool name becomes mcp__srv_<hash>__tool_<hash>.
# 7: the provider's account of a cache miss (Claude Code 2.1.119+,
# ``message.diagnostics.cache_miss_reason``) is kept per request (``miss_reason``, ``miss_tokens``).
# 8: a model name is kept only when it is a public model id (`identifiers.kept_model`: the price
# library's names and the shapes of public ids), else stored as ``model-<keyed hash>``.
# 9: a response's usage time (``usage_ts``): the time of the first of its lines with the most
# output tokens, the line whose usage `ccusage` counts, so that a response streamed across
# midnight falls on the same day in both.
# 10: hostile input read, not lost (2026-11-28): a timestamp without a zone is UTC (it was the
# machine's zone) and one outside 2000-2099 is no time; a Claude TTL split that contradicts its
# cache-write total gives way to the total; a Codex token_count without last_token_usage is a call
# whose usage is the change of the totals; a Gemini chat file with an unknown message type or a
# null sessionId, and a Gemini stream-json file whose first init was cut, are read; a JSON
# document's top-level field that does not parse is skipped alone; a Copilot or Codex field that
# should be a list and is not is left out (a string was read character by character, a number
# failed the file).
TRACE_REVISION = 10

# The provider's stated reasons for a cache miss (Claude Code from 2.1.119 writes them as
# ``message.diagnostics.cache_miss_reason.type``). A closed vocabulary: any other value is
# stored as "other", so a log cannot put text of its choosing into the trace.
MISS_REASONS = ("previous_message_not_found", "messages_changed", "tools_changed", "system_changed",
                "model_changed", "unavailable", "other")

SESSION_COLUMNS = (
    "session_key", "dataset", "file_key", "agent", "session_id", "agent_version",
    "started_at", "ended_at", "n_streams", "n_requests", "n_blocks", "n_compactions",
    "models", "resumed_records", "project",
)
STREAM_COLUMNS = ("session_key", "stream_id", "kind", "agent_id", "n_requests", "n_blocks")
REQUEST_COLUMNS = (
    "session_key", "stream_id", "req_idx", "position", "partition", "user_turn", "ts",
    "model", "msg_key", "input_tokens", "cache_write_5m", "cache_write_1h", "cache_read",
    "output_tokens", "has_usage", "ttl_split_known", "resumed_copy", "speed", "client_version", "client_event",
    "miss_reason", "miss_tokens", "usage_ts",
)
BLOCK_COLUMNS = (
    "session_key", "stream_id", "pos", "partition", "user_turn", "req_idx", "ts", "role",
    "kind", "tool_name", "tool_kind", "tool_use_key", "content_hash", "bytes", "tokens",
    "resource", "line_start", "line_end", "args_hash", "is_error",
)
COMPACTION_COLUMNS = ("session_key", "stream_id", "pos", "partition", "ts", "trigger", "pre_tokens")
# One row per read-kind tool result that shows numbered lines (``first_line`` and one keyed
# 64-bit hash per line, ``replay.ingest.readlines``) or is a client's preview of a result too
# large to keep (``preview``: no lines, never a full read of its range).
READ_LINES_COLUMNS = ("session_key", "stream_id", "pos", "first_line", "line_hashes", "preview")


@dataclass
class SessionTrace:
    """One session's trace as column lists (appended by a reader, written by the store)."""

    session: dict[str, Any]
    streams: dict[str, list] = field(default_factory=lambda: {c: [] for c in STREAM_COLUMNS})
    requests: dict[str, list] = field(default_factory=lambda: {c: [] for c in REQUEST_COLUMNS})
    blocks: dict[str, list] = field(default_factory=lambda: {c: [] for c in BLOCK_COLUMNS})
    compactions: dict[str, list] = field(default_factory=lambda: {c: [] for c in COMPACTION_COLUMNS})
    read_lines: dict[str, list] = field(default_factory=lambda: {c: [] for c in READ_LINES_COLUMNS})
    # The session as the log names it (keyed hash of its session id, equal to ``session_id``),
    # None when the log gives no id: copies of one session at several paths share it. Not a column.
    identity: str | None = None
    # (block texts, image tokens, counts from the log) of a trace read where token counting was
    # deferred (`replay.ingest.tokens.DEFER`): ``blocks["tokens"]`` is filled from them
    # (`replay.ingest.builder.count_uncounted`) before it is checked or stored. Not a column.
    uncounted: tuple[list[str], list[int], list[int | None]] | None = None

    @property
    def n_blocks(self) -> int:
        return len(self.blocks["pos"])

    @property
    def n_requests(self) -> int:
        return len(self.requests["req_idx"])

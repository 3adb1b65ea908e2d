"""The grammars and vocabularies of what the trace and the anonymizer keep as written.

Every string either output keeps verbatim must be harmless by construction: a word of a
closed vocabulary, or a shape that cannot carry a name. Both ingest (`replay.ingest.keys`,
`replay.ingest.builder`) and the anonymizer (`replay.privacy`) use these functions, so a
value kept by one is kept by the other:

* **file extensions** (owned by `replay.ingest.extensions`, below `keys`; re-exported here): a
  path component is pseudonymized whole; only a final extension of ``KNOWN_EXTENSIONS`` is kept
  (lower-cased). The part after the last dot of a dotted user name (``first.last``), a host
  (``server.corp.example``), an e-mail-shaped folder or a file named ``key.<secret>`` is no
  extension: it is pseudonymized with the rest;
* **versions**: ``major.minor.patch`` (fewer parts when the log has fewer) and nothing after
  (``2.1.50-alice-build`` -> ``2.1.50``);
* **id type prefixes**: an identifier keeps no part of its text but a type prefix from
  ``ID_PREFIXES`` (``toolu_``, ``msg_01``...), which says what kind of id it is;
* **tool names**: the agents' own tools (``TOOL_VOCAB``) are kept; ``mcp__<server>__<tool>``
  names private systems and people: the trace stores ``mcp__srv_<hash>__tool_<hash>`` (the
  anonymizer does too with ``--pseudonymize-mcp``); any other tool becomes ``tool-<hash>``;
* **model names**: a public model id (``kept_model``: the price library's names and the shapes
  of public ids) is kept; any other becomes ``model-<hash>`` (``model_pseudonym``) in both.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from replay.ingest.extensions import KNOWN_EXTENSIONS, split_extension  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    from replay.ingest.keys import Keyring

# Type prefixes of the ids agent logs write (``toolu_01...``, ``msg_01...``, ``req_...``,
# ``call_...``, ``fc_...``): the only part of an id's text kept.
ID_PREFIXES = frozenset("""toolu srvtoolu msg req call fc resp rs ws ctc chatcmpl item run thread file batch
    compact tool agent sess session""".split())

# MCP tool names kept after a pseudonymized server: the tools `jp_compaction` gives a hint row
# when an MCP tool's last segment names one (``mcp__git__git_commit``).
MCP_TOOL_VOCAB = frozenset("""fs_read_file fs_grep_files fs_list_files fs_create_file fs_modify_file cargo_check
    cargo_test git_diff git_commit""".split())

# Tool names the trace keeps as written: the agents' own tools (the readers' tool kinds and the
# names policies and the cache model look for: Read, TaskCreate, PowerShell...). Any other tool
# (a user's or a server's, which can name a person or a private system) is stored as
# ``tool-<keyed hash>``; an MCP tool as ``mcp_parts`` writes it.
CLAUDE_CODE_TOOLS = frozenset("""Agent Bash BashOutput Edit EnterPlanMode ExitPlanMode Glob Grep KillShell KillBash
    LS LSP MultiEdit NotebookEdit NotebookRead PowerShell Read Skill SlashCommand Task TaskCreate TaskGet TaskList
    TaskOutput TaskStop TaskUpdate TodoRead TodoWrite WebFetch WebSearch Write AskUserQuestion
    ListMcpResourcesTool ReadMcpResourceTool ToolSearch ScheduleWakeup Workflow Monitor""".split())
TOOL_VOCAB = CLAUDE_CODE_TOOLS | MCP_TOOL_VOCAB | frozenset("""
    shell shell_command container.exec local_shell unified_exec exec_command write_stdin read_stdin kill_session
    apply_patch update_plan read_file view_image web_search tool_search list_dir grep_files
    view read create edit str_replace_editor str_replace insert write grep rg search glob ls list bash powershell
    read_bash write_bash stop_bash list_bash read_powershell write_powershell stop_powershell web_fetch fetch
    ask_user report_intent think update_todo task
    read_many_files write_file replace smart_edit search_file_content grep_search ripgrep list_directory
    google_web_search run_shell_command save_memory write_todos activate_skill
""".split())

# keyed pseudonyms already: the anonymizer's tool_<10 hex> (--drop-tool-names, or a name outside
# its grammar), the trace's tool-<8 hex>, and the parts of mcp__srv_<8 hex>__tool_<8 hex>
_TOOL_PSEUDONYM_RX = re.compile(r"tool_[0-9a-f]{10}|tool-[0-9a-f]{8}")
_SRV_RX = re.compile(r"srv_[0-9a-f]{8}")
_MCP_TOOL_RX = re.compile(r"tool_[0-9a-f]{8}")
_VERSION_RX = re.compile(r"v?(\d{1,6})(?:\.(\d{1,6}))?(?:\.(\d{1,6}))?")
_ID_PREFIX_RX = re.compile(r"^([a-z]+)_(01)?(?=[A-Za-z0-9])")
_MCP_SAFE_RX = re.compile(r"[^A-Za-z0-9_\-]")  # how Claude Code turns a server name into a tool-name part


def kept_tool_name(keys: Keyring, name: str) -> str | None:
    """The name the trace stores for a tool: ``name`` when it is in ``TOOL_VOCAB``, the keyed form
    of an MCP tool, else None (the caller stores ``tool-<keyed hash>`` and counts it)."""
    if name in TOOL_VOCAB or _TOOL_PSEUDONYM_RX.fullmatch(name):
        return name
    if name.startswith("mcp__"):
        return mcp_parts(keys, name)
    return None


def kept_version(v: str) -> str | None:
    """``major.minor.patch`` of a version string (``v2.1.50-rc.1+alice`` -> ``2.1.50``), or None
    when it does not start with a number."""
    m = _VERSION_RX.match(v)
    if not m:
        return None
    return ".".join(p for p in m.groups() if p is not None)


def id_prefix(v: str) -> str:
    """The type prefix of an id kept by its pseudonym (``toolu_01`` of ``toolu_01AbC...``), or ""."""
    m = _ID_PREFIX_RX.match(v)
    return m.group(0) if m and m.group(1) in ID_PREFIXES else ""


def mcp_parts(keys: Keyring, name: str) -> str:
    """``mcp__srv_<hash>__tool_<hash>`` for ``mcp__<server>__<tool>`` (keyed: equal names, equal
    pseudonyms), the tool part kept when it is in ``MCP_TOOL_VOCAB``; the anonymizer's
    ``--pseudonymize-mcp`` writes the same."""
    server, sep, tool = name[len("mcp__"):].partition("__")
    # a part already keyed (logs anonymized with --pseudonymize-mcp) is kept: their trace joins the raw one's
    srv = server if _SRV_RX.fullmatch(server) else mcp_server(keys, server)
    if not sep:
        return "mcp__" + srv
    return "mcp__" + srv + sep + (tool if tool in MCP_TOOL_VOCAB or _MCP_TOOL_RX.fullmatch(tool) else mcp_tool(keys, tool))


def mcp_server(keys: Keyring, server: str) -> str:
    """Keyed pseudonym of an MCP server name, equal in ``serverName`` and in ``mcp__<server>__<tool>``."""
    return "srv_" + keys.short("mcp-server", _MCP_SAFE_RX.sub("_", server), 8)


def mcp_tool(keys: Keyring, tool: str) -> str:
    return "tool_" + keys.short("mcp-tool", tool, 8)


# --- model names --------------------------------------------------------------------------
# A model name is kept as written only when it is a public model id: one the price library
# (genai-prices) lists by its exact id or an exact-match alias, or one of the shapes public
# ids take: a family (``claude``, ``gpt``, ``gemini``, ``codex``, ``o1``/``o3``/``o4``) first, then
# lower-case words, version numbers and dates joined by ``-``/``.``, optional provider/region
# prefixes (``anthropic/``, ``models/``, ``us.anthropic.``) and ``@date``, ``[1m]``, ``-v1:0``
# and `` (fast)`` (the fast-mode price key) suffixes; Claude Code's aliases (``opus``, ``sonnet``).
# Any other name (a custom deployment or a gateway's, which can name a company or a project)
# is stored as ``model-<keyed hash>`` by the trace and the anonymizer alike (`model_pseudonym`).
MODEL_FAMILIES = frozenset("claude gpt chatgpt gemini codex o1 o3 o4".split())
MODEL_WORDS = frozenset("""opus sonnet haiku instant fable mythos mini nano pro max turbo preview latest codex
    oss flash lite exp thinking chat instruct high low medium xhigh minimal fast image audio realtime search
    deep research vision live customtools spark omni native tts transcribe embedding text api beta extended
    ultra plus""".split())
CLAUDE_CODE_MODEL_ALIASES = frozenset("opus sonnet haiku fable opusplan default inherit best".split())
MODEL_VOCAB = frozenset({"<synthetic>"})  # Claude Code's client-side messages
_MODEL_PSEUDONYM_RX = re.compile(r"model-[0-9a-f]{8}")
_MODEL_PREFIX_RX = re.compile(r"(?:(?:us|eu|apac|au|jp|ca|global|regional)\.)?anthropic\.|(?:anthropic|openai|google|"
                              r"models|vertex_ai|bedrock|azure)/")
_MODEL_SUFFIX_RX = re.compile(r"(?: \(fast\)|@\d{8}|\[\d{1,4}[km]\])$")
_MODEL_TOKEN_RX = re.compile(r"\d{1,8}[a-z]?|v\d{1,3}(?::\d{1,3})?|\d{1,4}[kmb]|o\d")
_MODEL_WORD_RX = re.compile(r"[a-z]{1,12}\d{0,4}")


def kept_model(name: str) -> bool:
    """May the trace (and the anonymizer) keep this model name as written? See ``MODEL_WORDS``."""
    if name in MODEL_VOCAB or _MODEL_PSEUDONYM_RX.fullmatch(name):
        return True
    if len(name) > 100:
        return False
    return _model_shape(name) or name in library_models()


def _model_shape(name: str) -> bool:
    rest = name
    for _ in range(3):  # " (fast)", "@20250514", "[1m]" in any order
        m = _MODEL_SUFFIX_RX.search(rest)
        if not m:
            break
        rest = rest[:m.start()]
    if rest in CLAUDE_CODE_MODEL_ALIASES:
        return True
    m = _MODEL_PREFIX_RX.match(rest)
    if m:
        rest = rest[m.end():]
    tokens = re.split(r"[-.]", rest)
    if not tokens or tokens[0] not in MODEL_FAMILIES or len(tokens) > 10:
        return False
    # after the family: version numbers, dates, ``v1:0`` and lower-case words (``claude-*``, ``gpt-*``)
    return all(t in MODEL_WORDS or _MODEL_TOKEN_RX.fullmatch(t) or _MODEL_WORD_RX.fullmatch(t) for t in tokens[1:])


_LIBRARY_MODELS: frozenset[str] | None = None


def library_models() -> frozenset[str]:
    """The model names the price library lists exactly (its ids and exact-match aliases); loaded
    on first use only (a name of a public shape never needs it)."""
    global _LIBRARY_MODELS
    if _LIBRARY_MODELS is None:
        names: set[str] = set()
        try:
            from genai_prices import data_snapshot

            def exact(clause) -> None:
                for part in (getattr(clause, "or_", None) or ()):
                    exact(part)
                for part in (getattr(clause, "and_", None) or ()):
                    exact(part)
                if isinstance(getattr(clause, "equals", None), str):
                    names.add(clause.equals)

            for provider in data_snapshot.get_snapshot().providers:
                for model in provider.models:
                    names.add(model.id)
                    exact(model.match)
        except Exception:  # no price library: the shapes alone decide
            pass
        _LIBRARY_MODELS = frozenset(n for n in names if isinstance(n, str) and n and len(n) <= 100)
    return _LIBRARY_MODELS


def model_pseudonym(keys: Keyring, name: str) -> str:
    """``model-<8 hex>``: the keyed pseudonym of a model name outside ``kept_model`` (the trace's
    and the anonymizer's, so an anonymized log ingests to the raw log's trace)."""
    return "model-" + keys.short("model", name, 8)

"""The grammars and vocabularies of what the trace and the anonymizer keep as written.

Every string either output keeps verbatim must be harmless by construction: a word of a
closed vocabulary, or a shape that cannot carry a name. Both ingest (`replay.ingest.keys`,
`replay.ingest.builder`) and the anonymizer (`replay.privacy`) use these functions, so a
value kept by one is kept by the other:

* **file extensions**: a path component is pseudonymized whole; only a final extension of
  ``KNOWN_EXTENSIONS`` is kept (lower-cased). The part after the last dot of a dotted user
  name (``first.last``), a host (``server.corp.example``), an e-mail-shaped folder or a file
  named ``key.<secret>`` is no extension: it is pseudonymized with the rest;
* **versions**: ``major.minor.patch`` (fewer parts when the log has fewer) and nothing after
  (``2.1.50-alice-build`` -> ``2.1.50``);
* **id type prefixes**: an identifier keeps no part of its text but a type prefix from
  ``ID_PREFIXES`` (``toolu_``, ``msg_01``...), which says what kind of id it is;
* **tool names**: the agents' own tools (``TOOL_VOCAB``) are kept; ``mcp__<server>__<tool>``
  names private systems and people: the trace stores ``mcp__srv_<hash>__tool_<hash>`` (the
  anonymizer does too with ``--pseudonymize-mcp``); any other tool becomes ``tool-<hash>``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from replay.ingest.keys import Keyring

# File types seen in coding sessions: source, config, data, docs, build and binary files.
KNOWN_EXTENSIONS = frozenset("""
    py pyi pyx pxd pyc ipynb js mjs cjs jsx ts mts cts tsx vue svelte astro json jsonl json5 jsonc ndjson
    md mdx markdown rst txt adoc tex bib org html htm xhtml css scss sass less styl xml xsd xsl svg
    yaml yml toml ini cfg conf config env properties lock lockb
    rs go java kt kts scala groovy gradle clj cljs cljc edn c h cc cpp cxx hpp hh hxx m mm swift cs fs fsx
    vb rb erb rake gemspec php pl pm lua r jl dart ex exs erl hrl hs elm ml mli nim zig v sol
    sh bash zsh fish ps1 psm1 bat cmd mk cmake make ninja bazel bzl nix tf tfvars hcl
    sql csv tsv parquet arrow feather avro orc db sqlite sqlite3 duckdb h5 hdf5 npy npz pkl pickle pt pth
    onnx safetensors ckpt bin dat log out err tmp bak orig rej diff patch swp
    png jpg jpeg gif webp bmp ico tif tiff heic avif psd pdf doc docx xls xlsx ppt pptx odt ods key pages
    mp3 mp4 wav ogg flac mov avi mkv webm ttf otf woff woff2 eot
    zip gz tgz tar bz2 xz zst 7z rar whl egg jar war ear deb rpm dmg iso apk
    so dll dylib exe o a lib obj wasm class map pem crt cer csr der p12 pfx pub asc gpg sig
    proto graphql gql thrift capnp dockerfile containerfile gitignore gitattributes editorconfig
    prisma tmpl tpl j2 jinja hbs mustache ejs pug liquid
""".split())

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


def split_extension(comp: str) -> tuple[str, str]:
    """(stem, extension with its dot, as written) of a path component; the extension is ""
    unless it is in ``KNOWN_EXTENSIONS`` in any case (then the stem is not empty)."""
    stem, dot, ext = comp.rpartition(".")
    if dot and stem and ext.lower() in KNOWN_EXTENSIONS:
        return stem, "." + ext
    return comp, ""


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

"""Record schema of the anonymizer: which field holds what, and what kept values may look like.

The record walker (``replay.privacy.records``) decides per field from these sets: identifiers
get pseudonyms, paths path pseudonyms, timestamps are kept (or shifted), enum-like values and
``usage``-like trees keep their numbers, opaque blobs are redrawn, everything else is text.
Every value kept verbatim must be in a vocabulary or match a strict grammar (below).
"""

from __future__ import annotations

import re

import re2

from replay.ingest.identifiers import CLAUDE_CODE_TOOLS, MODEL_VOCAB as MODEL_NAMES, kept_model

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

# --- kept values: a known vocabulary per key, or a strict grammar -------------------------
# A value of a KEEP_KEYS field is kept verbatim only if it is in its key's vocabulary, or
# (for the open-ended keys in OPEN_ENUM_KEYS, whose values grow with every Claude Code
# release) matches OPEN_ENUM_RX and spells no sensitive term; otherwise it becomes filler
# like any text. The vocabularies are the values Claude Code and the Messages API write.
ENUM_VOCAB: dict[str, frozenset[str]] = {k: frozenset(v.split()) for k, v in {
    "type": """user assistant system summary attachment progress message text thinking redacted_thinking
        tool_use tool_result server_tool_use web_search_tool_result web_fetch_tool_result
        code_execution_tool_result mcp_tool_use mcp_tool_result container_upload search_result image
        document base64 url file direct create update delete go ts frame file-history-snapshot
        queue-operation last-prompt pr-link custom-title tag bash_progress hook_progress agent_progress
        mcp_progress query_update search_results_received waiting_for_task critical_system_reminder
        plan_mode todo_reminder task_reminder hook_success hook_system_message hook_error
        deferred_tools_delta agent_listing_delta skill_listing new_file new_directory edited_text_file
        edited_image_file opened_file_in_ide selected_lines_in_ide diagnostics compact_file_reference
        nested_memory queued_command command_permissions ultramemory structured_output invoked_skills
        enabled auto any tool none ephemeral agent-name ai-title auto_mode auto_mode_exit bridge-session
        date_change directory file_unchanged goal_status hook_additional_context hook_cancelled
        hook_non_blocking_error mcp_instructions_delta mode permission-mode plan_mode_exit plan_mode_reentry
        tool_reference ultra_effort_enter summary previous_message_not_found messages_changed tools_changed
        system_changed model_changed unavailable other""",
    "subtype": """compact_boundary microcompact_boundary stop_hook_summary turn_duration api_error
        local_command informational init success error error_max_turns error_during_execution
        error_max_budget_usd away_summary bridge_status status""",
    "role": "user assistant system tool developer",
    "stop_reason": "end_turn tool_use stop_sequence max_tokens pause_turn refusal model_context_window_exceeded",
    "userType": "external internal",
    "entrypoint": """cli claude-desktop claude-vscode claude-code-github-action sdk-cli sdk-ts sdk-py mcp
        remote local-agent""",
    "permissionMode": "default acceptEdits bypassPermissions plan dontAsk auto",
    "level": "info suggestion high medium low none error debug warning warn notice critical trace fatal",
    "trigger": "auto manual",
    "operation": """enqueue dequeue remove popAll goToDefinition findReferences hover documentSymbol
        workspaceSymbol goToImplementation prepareCallHierarchy incomingCalls outgoingCalls""",
    "service_tier": "standard priority batch flex",
    "speed": "standard fast",
    "inference_geo": "not_available global us eu",
    "hookEvent": """PreToolUse PostToolUse PostToolUseFailure Notification UserPromptSubmit Stop SubagentStart
        SubagentStop PreCompact SessionStart SessionEnd PermissionRequest Setup""",
    "promptSource": "sdk cli user hook",
    "retrieval_status": "success not_ready error failed pending",
    "mode": "content files_with_matches count default plan acceptEdits bypassPermissions",
    "status": """completed pending in_progress started failed async_launched running deleted success error
        cancelled canceled killed stopped timeout queued done interrupted aborted""",
    "kind": "committed",
    "encoding": "utf-8 utf8 utf-16 utf-16le ascii latin1 latin-1 base64 binary hex",
}.items()}
# Keys whose values grew with every Claude Code release and were once admitted by a grammar:
# now closed (a planted ``subtype`` of any shape is filler), the vocabulary above is all that passes.
OPEN_ENUM_KEYS: frozenset[str] = frozenset()
# ``model``: a public model id (`replay.ingest.identifiers.kept_model`, as the trace keeps it),
# else the trace's keyed pseudonym ``model-<8 hex>``.
MODEL_VOCAB = MODEL_NAMES
# ``version``: dotted numbers and an optional pre-release word (``2.1.17``, ``1.0.0-beta.2``)
VERSION_RX = re.compile(r"^\d{1,4}(?:\.\d{1,6}){1,3}(?:-(?:alpha|beta|rc|dev|pre|preview|canary|next|nightly)"
                        r"(?:[.\-]?\d{1,8})?)?$")
# media types of images and documents the Messages API and Gemini accept (closed: ``image/x-acme`` is filler)
MEDIA_TYPES = frozenset("""image/png image/jpeg image/jpg image/gif image/webp image/heic image/heif application/pdf
    text/plain text/markdown text/html text/csv application/json audio/wav audio/mp3 audio/mpeg video/mp4""".split())
# Tool names: letters, digits, ``_`` and ``-`` (``Bash``, ``mcp__server__tool``, ``apply_patch``);
# ``hookName`` is ``Event`` or ``Event:ToolName``/``Event:source``.
TOOL_NAME_RX = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]{0,127}$")
HOOK_NAME_RX = re.compile(r"^([A-Za-z]{2,40})(?::(.{1,160}))?$")
# Claude Code's own tools: never MCP, never pseudonymized by ``pseudonymize_mcp``.
BUILTIN_TOOLS = CLAUDE_CODE_TOOLS

# ``usage`` trees: numbers under known keys or snake_case names; strings only under these
# keys and in their vocabulary (``type`` in ``usage.iterations`` entries).
USAGE_STRING_KEYS = frozenset({"service_tier", "inference_geo", "speed", "type"})
# Keys of ``usage``, ``cache_creation``, ``compactMetadata`` and ``thinkingMetadata`` trees that
# are kept whatever their value's type; any other key is kept only over a number, a boolean or
# null, and only if it is a plain lower-case name (else it is pseudonymized).
META_KEYS = frozenset("""input_tokens output_tokens cache_creation_input_tokens cache_read_input_tokens
    cache_creation ephemeral_5m_input_tokens ephemeral_1h_input_tokens server_tool_use web_search_requests
    web_fetch_requests code_execution_requests service_tier inference_geo speed iterations type
    preTokens postTokens trigger level disabled triggers maxThinkingTokens durationMs""".split())
META_KEY_RX = re.compile(r"^[a-z][A-Za-z0-9_]{0,63}$")
INFERENCE_GEO = frozenset({"not_available", "global", "us", "eu", ""})

# Keys Claude Code and the Messages API write (records, messages, content parts, ``usage``,
# ``toolUseResult``, ``compactMetadata``, progress and hook data). With ``--drop-arg-keys`` every
# other key, at any depth, becomes a keyed pseudonym ``k_<hash>``: only this vocabulary passes.
# ``usage``-like trees (``KEEP_WHOLE``) always keep only these keys.
KNOWN_KEYS = frozenset("""
    action activeForm addedBlocks addedLines addedNames addedTypes agentId agentName agentType aiTitle
    allUuids allowedTools anchorUuid annotations answers apiErrorStatus appliedLimit appliedOffset
    applied_edits assistantAutoBackgrounded attachment attributionMcpServer attributionMcpTool
    attributionPlugin attributionSkill backgroundTaskId base64 bashCount blockedBy blocks branch
    bridgeSessionId bytes cache_creation cache_creation_input_tokens cache_miss_reason
    cache_missed_input_tokens cache_read_input_tokens caller canReadOutputFile character
    clearedAttachmentUUIDs code codeText command commandMode commandName commit compactMetadata
    compactedToolIds connection container content contentDiffersFromDisk context_management customTitle cwd
    dangerouslyDisableSandbox data description diagnostics dimensions disabled displayHeight displayPath
    displayWidth durationMs durationSeconds editFileCount edits elapsedTimeMs elapsedTimeSeconds end
    entrypoint ephemeral_1h_input_tokens ephemeral_5m_input_tokens error exitCode file fileCount filePath
    filename filenames files formatted from fullOutput gitBranch gitOperation hasOutput headUuid header
    hookAdditionalContext hookCount hookErrors hookEvent hookInfos hookName id imagePasteIds inference_geo
    input input_tokens interrupted interruptedMessageId isAgent isApiErrorMessage isAsync isCompactSummary
    isImage isInitial isMeta isNetworkDown isNew isSSLError isSidechain isSnapshotUpdate isSubAgent
    isVisibleInTranscriptOnly is_error itemCount iterations kind label lastPrompt lastSequenceNum leafUuid
    level line lines linesAdded linesRemoved logicalParentUuid matches maxRetries maxThinkingTokens media_type
    message messageCount messageId microcompactMetadata mode model multiSelect name names newDate newLines
    newStart newString newTodos new_string noOutputExpected normalizedMessages notes numFiles numLines
    numMatches number oldLines oldStart oldString oldTodos old_string operation options origin originalFile
    originalFileContents originalHeight originalSize originalWidth otherToolCount output outputFile
    output_tokens parentToolUseID parentUuid path pendingBackgroundAgentCount pendingMcpServers
    pendingWorkflowCount permissionMode persistedOutputPath persistedOutputSize plan planContent planExists
    planFilePath postTokens pr prNumber prRepository prUrl preTokens preservedMessages preservedSegment
    preventedContinuation preview priority prompt promptId promptSource push query question questions range
    rateLimits readCount readdedNames reminderType removedNames removedTypes replaceAll replace_all requestId
    resolvedModel result resultCount results retrieval_status retryAttempt retryInMs returnCodeInterpretation
    role runId scriptPath searchCount serverName server_tool_use service_tier sessionId severity sha
    showConcurrencyNote signature skillCount slug snapshot snippet source sourceToolAssistantUUID
    sourceToolUseID speed start startLine status statusChange stderr stdout stopReason stop_details
    stop_reason stop_sequence structuredPatch subject subtype success summary tailUuid task taskId taskType
    task_id task_type tasks text thinking thinkingMetadata timeoutMs timestamp title to todos tokensSaved
    toolName toolStats toolUseID toolUseResult tool_name tool_use_id totalBytes totalDurationMs totalLines
    totalTokens totalToolUseCount total_deferred_tools trackedFileBackups transcriptDir trigger triggers
    truncated truncatedByTokenCap type updatedFields uri url usage userModified userType uuid uuids
    verificationNudgeNeeded version wasInterrupted web_fetch_requests web_search_requests
""".split()) | KEEP_KEYS | ID_KEYS | PATH_KEYS | TIME_KEYS | KEEP_WHOLE | OPAQUE_KEYS | TOOL_NAME_KEYS | frozenset(
    """input_tokens output_tokens cache_creation_input_tokens cache_read_input_tokens ephemeral_5m_input_tokens
    ephemeral_1h_input_tokens server_tool_use web_search_requests web_fetch_requests code_execution_requests
    service_tier inference_geo speed iterations type preTokens postTokens trigger level disabled triggers
    maxThinkingTokens durationMs content role model text thinking name input tool_use_id is_error source
    media_type data isSidechain isMeta isCompactSummary isApiErrorMessage message usage stop_reason
    stop_sequence toolUseResult subtype snapshot trackedFileBackups headUuid anchorUuid tailUuid
    preservedSegment diagnostics cache_miss_reason cache_missed_input_tokens
    projectHash lastUpdated messages thoughts subject description tokens input output cached tool total
    toolCalls args result status resultDisplay displayName renderOutputAsMarkdown functionResponse
    functionCall response error inlineData fileData mimeType fileUri directories""".split())

IDENT_KEY_RX = re.compile(r"^[A-Za-z_$@][A-Za-z0-9_$\-]{0,63}$")  # a dict key that is a name, not data
FILENAME_RX = re.compile(r"^[\w.@-]+\.[A-Za-z0-9]{1,8}$")
B64_RX = re2.compile(r"^[A-Za-z0-9+/=\r\n]{64,}$")  # an image or file payload


def enum_ok(key: str, v: str) -> bool:
    """May the value of a ``KEEP_KEYS`` field be kept verbatim? (Sensitive terms are checked
    by the caller for values admitted by a grammar rather than a vocabulary.)"""
    if v in ENUM_VOCAB.get(key, ()):
        return True
    if key == "version":
        return bool(VERSION_RX.match(v))
    if key == "model":
        return kept_model(v)
    if key in ("media_type", "type") and v in MEDIA_TYPES:
        return True
    if key == "inference_geo":
        return v in INFERENCE_GEO
    return False

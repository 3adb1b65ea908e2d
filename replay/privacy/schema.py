"""Record schema of the anonymizer: which field holds what, and what kept values may look like.

The record walker (``replay.privacy.records``) decides per field from these sets: identifiers
get pseudonyms, paths path pseudonyms, timestamps are kept (or shifted), enum-like values and
whole ``usage`` trees are kept (scrubbed), opaque blobs are redrawn, everything else is text.
"""

from __future__ import annotations

import re

import re2

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

_ENUM_RX = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-:]{0,63}$")  # no dots, slashes or @: not a host or path
_ENUM_SPECIAL = {
    "version": re.compile(r"^[0-9][0-9A-Za-z.+\-]{0,31}$"),
    "media_type": re.compile(r"^[a-z]+/[a-z0-9.+\-]{1,40}$"),
}
IDENT_KEY_RX = re.compile(r"^[A-Za-z_$@][A-Za-z0-9_$\-]{0,63}$")  # a dict key that is a name, not data
FILENAME_RX = re.compile(r"^[\w.@-]+\.[A-Za-z0-9]{1,8}$")
B64_RX = re2.compile(r"^[A-Za-z0-9+/=\r\n]{64,}$")  # an image or file payload


def looks_like_enum(key: str, v: str) -> bool:
    """Can the value of a ``KEEP_KEYS`` field be kept? Only when it cannot be a path, host or prose."""
    return bool(_ENUM_SPECIAL.get(key, _ENUM_RX).match(v))

"""What Codex response items hold: tool kinds and resources, message text, tool outputs."""

from __future__ import annotations

import posixpath
import re
from typing import Any

import orjson

from replay.ingest.blocktext import canonical_json
from replay.ingest.keys import Keyring
from replay.ingest.readers.fields import data_url_payload, line_range
from replay.ingest.shell import patch_first_file, shell_resource
from replay.ingest.trace import mcp_kind

_SHELL_TOOLS = frozenset({"exec_command", "shell", "shell_command", "container.exec", "local_shell", "unified_exec"})
_SESSION_TOOLS = frozenset({"write_stdin", "read_stdin", "kill_session"})


def tool_target(name: str, args: Any, cwd: str | None, keys: Keyring) -> tuple[str, str | None, int | None, int | None]:
    """(tool_kind, resource, line_start, line_end) of a Codex tool call."""
    d = args if isinstance(args, dict) else {}
    workdir = d.get("workdir") or d.get("working_directory") or d.get("cwd")
    here = workdir if isinstance(workdir, str) and workdir else cwd
    if isinstance(here, str) and cwd and not here.startswith("/"):
        here = posixpath.join(cwd, here)
    if name in _SHELL_TOOLS:
        cmd = d.get("cmd", d.get("command")) if d else args
        return shell_resource(cmd, here, keys)
    if name in _SESSION_TOOLS:
        return "shell", None, None, None
    if name == "apply_patch":
        body = args if isinstance(args, str) else d.get("input", d.get("patch", ""))
        f = patch_first_file(body if isinstance(body, str) else "")
        return "mutate", keys.path(f, here) if f else None, None, None
    if name in ("read_file", "view_image"):
        p = d.get("file_path") or d.get("path")
        start, end = line_range(d.get("offset"), d.get("limit")) if name == "read_file" else (None, None)
        return "read", keys.path(p, here) if isinstance(p, str) and p else None, start, end
    if name in ("list_dir", "list_directory"):
        p = d.get("dir_path") or d.get("path") or here
        return "list", keys.path(p, here) if isinstance(p, str) and p else None, None, None
    if name in ("grep_files", "grep", "search"):
        p = d.get("path") or here
        return "search", keys.path(p, here) if isinstance(p, str) and p else None, None, None
    if name in ("web_search", "web_fetch", "fetch"):
        return "web", None, None, None
    if name.startswith("mcp__"):
        return mcp_kind(name), None, None, None
    return "other", None, None, None


def parse_args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw


def message_text(payload: dict) -> str:
    content = payload.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") in ("input_text", "output_text", "text")
    )


def output_parts(output: Any) -> tuple[str, list[str], bool | None]:
    """(text, image payloads, success flag) of a function_call_output's ``output``."""
    if output is None:
        return "", [], None
    if isinstance(output, str):
        return output, [], None
    if isinstance(output, dict):
        text, images, _ = output_parts(output.get("content", output.get("output")))
        ok = output.get("success")
        return text if (text or images) else canonical_json(output), images, ok if isinstance(ok, bool) else None
    if isinstance(output, list):
        texts, images = [], []
        for part in output:
            if not isinstance(part, dict):
                texts.append(str(part))
            elif part.get("type") in ("input_text", "output_text", "text"):
                texts.append(str(part.get("text", "")))
            elif part.get("type") in ("input_image", "image"):
                images.append(data_url_payload(part.get("image_url", part.get("data"))))
            else:
                texts.append(canonical_json(part))
        return "\n".join(texts), images, None
    return canonical_json(output), [], None


_EXIT = re.compile(r"(?:Process exited with code|Exit code:)\s*(-?\d+)")


def output_is_error(text: str, success: bool | None) -> bool:
    if success is not None:
        return not success
    m = _EXIT.search(text[:400])
    return bool(m and m.group(1) != "0")


def call_name_args(p: dict) -> tuple[str, Any]:
    """(tool name, arguments) of a tool-call response item."""
    ptype = p.get("type")
    if ptype == "function_call":
        name = str(p.get("name") or "")
        ns = p.get("namespace")
        if isinstance(ns, str) and ns:
            name = f"{ns}__{name.lstrip('_')}"
        return name, parse_args(p.get("arguments"))
    if ptype == "custom_tool_call":
        return str(p.get("name") or ""), p.get("input")
    if ptype == "local_shell_call":
        action = p.get("action") if isinstance(p.get("action"), dict) else {}
        return "local_shell", {"command": action.get("command"), "workdir": action.get("working_directory")}
    if ptype == "web_search_call":
        return "web_search", p.get("action")
    if ptype == "tool_search_call":
        return "tool_search", p.get("arguments")
    args = {k: v for k, v in p.items() if k not in ("id", "status", "internal_chat_message_metadata_passthrough")}
    return ptype or "tool", args


def reasoning_text(p: dict) -> tuple[str, str]:
    """(visible text: summary and content, encrypted content) of a reasoning item (a summary or
    content that is not a list: none; the reader counts it, `fields.as_list`)."""
    def parts(key: str) -> list:
        v = p.get(key)
        return v if isinstance(v, list) else []

    summary = "\n".join(str(s.get("text", "")) for s in parts("summary") if isinstance(s, dict))
    body = "\n".join(str(s.get("text", "")) for s in parts("content") if isinstance(s, dict))
    enc = p.get("encrypted_content") if isinstance(p.get("encrypted_content"), str) else ""
    return "\n".join(t for t in (summary, body) if t), enc

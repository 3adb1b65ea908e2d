"""The canonical text of a Claude Code content block.

Hashing, token counting and the synthetic generator must agree on what "the content" of a
block is, so it is defined once here. Images contribute their base64 payload to the hash
but are counted with an image-token estimate, not as text.
"""

from __future__ import annotations

from typing import Any

import orjson

_DUMP_OPTS = orjson.OPT_SORT_KEYS


def canonical_json(obj: Any) -> str:
    """Key-sorted compact JSON, so equal arguments give equal bytes whatever their key order."""
    return orjson.dumps(obj, option=_DUMP_OPTS, default=str).decode()


def tool_use_text(name: str, tool_input: Any) -> str:
    return f"{name}\n{canonical_json(tool_input)}"


def tool_result_parts(content: Any) -> tuple[str, list[str]]:
    """(text, image payloads) of a tool_result's content: a string, or a list of text/image parts."""
    if content is None:
        return "", []
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    images: list[str] = []
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                texts.append(str(part))
                continue
            ptype = part.get("type")
            if ptype == "text":
                texts.append(str(part.get("text", "")))
            elif ptype == "image":
                src = part.get("source") or {}
                images.append(str(src.get("data", "")) if isinstance(src, dict) else "")
            else:
                texts.append(canonical_json(part))
        return "\n".join(texts), images
    return canonical_json(content), []

"""MCP wire objects (dicts in the protocol's camelCase) → what etcode needs.

The SDK's pydantic models are dumped with ``by_alias=True`` first, so the same code
reads both SDK generations (1.x camelCase attributes, 2.x snake_case attributes).
"""

from __future__ import annotations

import json
from typing import Any

from etcode.tools.base import ToolResult


def wire(obj: Any) -> dict[str, Any]:
    """An SDK model (or a dict) as a protocol-shaped dict."""
    if isinstance(obj, dict):
        return obj
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        return dict(vars(obj))
    return dump(by_alias=True, exclude_none=True, mode="json")


def is_read_only(tool: dict[str, Any]) -> bool:
    """True only when the server marks the tool ``readOnlyHint: true``."""
    annotations = tool.get("annotations") or {}
    return annotations.get("readOnlyHint") is True


def input_schema(tool: dict[str, Any]) -> dict[str, Any]:
    """The tool's JSON schema as the server sent it, made a valid object schema."""
    schema = dict(tool.get("inputSchema") or {})
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind in ("image", "audio"):
        size = len(str(block.get("data", ""))) * 3 // 4
        return f"[{kind} {block.get('mimeType', '')}, {size} bytes]"
    if kind == "resource":
        resource = block.get("resource") or {}
        if "text" in resource:
            return str(resource["text"])
        return f"[resource {resource.get('uri', '')} ({resource.get('mimeType', 'binary')})]"
    if kind == "resource_link":
        return f"[resource link: {block.get('name', '')} {block.get('uri', '')}]".replace("  ", " ")
    return json.dumps(block, ensure_ascii=False)


def to_tool_result(result: dict[str, Any], server: str, tool: str) -> ToolResult:
    """A ``CallToolResult`` as a tool result: text blocks joined, other blocks described,
    structured content as JSON when there is no text, ``isError`` kept."""
    texts = [_block_text(block) for block in result.get("content") or []]
    structured = result.get("structuredContent")
    if structured is not None and not any(t.strip() for t in texts):
        texts = [json.dumps(structured, ensure_ascii=False, indent=2)]
    output = "\n".join(t for t in texts if t) or "(no output)"
    is_error = bool(result.get("isError"))
    data: dict[str, Any] = {"server": server, "tool": tool}
    if structured is not None:
        data["structured"] = structured
    if is_error and output == "(no output)":
        output = f"{tool} failed on the MCP server"
    return ToolResult(output, is_error=is_error, data=data)

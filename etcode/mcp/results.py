"""MCP wire objects (dicts in the protocol's camelCase) → what etcode needs.

The SDK's pydantic models are dumped with ``by_alias=True`` first, so the same code
reads both SDK generations (1.x camelCase attributes, 2.x snake_case attributes).
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from etcode.tools.base import ToolResult
from etcode.util.json_types import JsonObject


def wire(obj: object) -> JsonObject:
    """An SDK model (or a dict) as a protocol-shaped dict."""
    if isinstance(obj, dict):
        return obj
    if isinstance(obj, BaseModel):
        dumped: JsonObject = obj.model_dump(by_alias=True, exclude_none=True, mode="json")
        return dumped
    return dict(vars(obj))


def is_read_only(tool: JsonObject) -> bool:
    """True only when the server marks the tool ``readOnlyHint: true``."""
    annotations = tool.get("annotations") or {}
    return annotations.get("readOnlyHint") is True


def input_schema(tool: JsonObject) -> JsonObject:
    """The tool's JSON schema as the server sent it, made a valid object schema."""
    schema = dict(tool.get("inputSchema") or {})
    schema.setdefault("type", "object")
    if schema.get("type") == "object":
        schema.setdefault("properties", {})
    return schema


def _block_text(block: JsonObject) -> str:
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


def to_tool_result(result: JsonObject, server: str, tool: str) -> ToolResult:
    """A ``CallToolResult`` as a tool result: text blocks joined, other blocks described,
    structured content as JSON when there is no text, ``isError`` kept."""
    texts = [_block_text(block) for block in result.get("content") or []]
    structured = result.get("structuredContent")
    if structured is not None and not any(t.strip() for t in texts):
        texts = [json.dumps(structured, ensure_ascii=False, indent=2)]
    output = "\n".join(t for t in texts if t) or "(no output)"
    is_error = bool(result.get("isError"))
    data: JsonObject = {"server": server, "tool": tool}
    if structured is not None:
        data["structured"] = structured
    if is_error and output == "(no output)":
        output = f"{tool} failed on the MCP server"
    return ToolResult(output, is_error=is_error, data=data)

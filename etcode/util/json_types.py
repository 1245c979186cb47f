"""Names for JSON data at the edges where its shape is the other side's: parsed config and
wire payloads, tool arguments, MCP and ACP messages, the ``--format json`` records.

``Any`` appears here and nowhere else for JSON: code that reads such data narrows it
(``isinstance``) or validates it (pydantic) before use.
"""

from __future__ import annotations

from typing import Any, TypeAlias

#: One JSON value of a shape the other side decides (``json.loads`` returns this).
JsonValue: TypeAlias = Any
#: A JSON object: request and response bodies, tool arguments, config sections, events.
JsonObject: TypeAlias = dict[str, Any]
#: A JSON array of values.
JsonArray: TypeAlias = list[Any]

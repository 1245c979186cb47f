"""JSON-RPC errors whose ``message`` is the line a user reads ("unknown session ses_1: …"),
not only the code's name ("Invalid params"); the details stay in ``data``.

:func:`invalid_params` builds etcode's own; :func:`readable` rewrites the ones the ACP SDK
builds (a request its schema refuses, an unknown method, an unexpected exception) as the
transport sends them (no SDK import here: the transport is on the start path)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from etcode.util.json_types import JsonObject, JsonValue

if TYPE_CHECKING:
    from acp import RequestError

INVALID_PARAMS = -32602
#: The SDK's generic messages, made specific from their ``data``.
_GENERIC = ("Invalid params", "Internal error", "Method not found", "Invalid request")


def invalid_params(key: str, text: str) -> RequestError:
    """A request's param ``key`` is wrong: ``text`` (one line naming it) is the message, and
    ``{key: text}`` the data (as the SDK's ``invalid_params`` puts it)."""
    from acp import RequestError

    return RequestError(INVALID_PARAMS, text, {key: text})


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _validation(errors: list[JsonValue]) -> str | None:
    """Pydantic's errors (``loc``, ``msg``) as ``sessionId: Field required``."""
    lines: list[str] = []
    for item in errors:
        if not isinstance(item, dict):
            continue
        loc = item.get("loc")
        where = ".".join(str(part) for part in loc) if isinstance(loc, list | tuple) else ""
        lines.append(f"{where}: {item.get('msg', 'invalid')}" if where else str(item.get("msg", "invalid")))
    if not lines:
        return None
    more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
    return lines[0] + more


def _detail(data: JsonValue) -> str | None:
    if isinstance(data, str):
        return data
    if not isinstance(data, dict):
        return None
    errors = data.get("errors")
    if isinstance(errors, list):
        return _validation(errors)
    texts = [f"{value}" for value in data.values() if isinstance(value, str | int) and value != ""]
    return "; ".join(str(t) for t in texts) if texts else None


def readable(message: JsonObject) -> JsonObject:
    """``message`` with a generic error message made specific (``Invalid params: sessionId:
    Field required``, ``Method not found: session/nope``); anything else unchanged."""
    error = message.get("error")
    if not isinstance(error, dict) or error.get("message") not in _GENERIC:
        return message
    detail = _detail(error.get("data"))
    if not detail:
        return message
    return {**message, "error": {**error, "message": _one_line(f"{error['message']}: {detail}")}}

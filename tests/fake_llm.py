"""A fake LLM server for tests: real HTTP/1.1 on 127.0.0.1, both wire formats, scripted turns.

    from tests.fake_llm import FakeLLM, Reply, Call, Fault

    with FakeLLM() as llm:
        llm.script(Reply(text="hello"), Reply(calls=[Call("ReadFile", {"file_path": "a.txt"})]))
        provider = make_provider(llm.spec("openai"))     # or llm.openai_base_url / anthropic_base_url
        ...
        llm.requests[0].body["messages"]

The path picks the format: ``POST /v1/chat/completions`` answers with OpenAI Chat
Completions SSE chunks, ``POST /v1/messages`` with Anthropic Messages SSE events, in the
shapes the real services send. Queue entries are :class:`Reply`, :class:`Fault` or a
callable ``fn(recorded) -> Reply | Fault``. An empty queue answers 400
``fake server: no scripted reply left``. ``GET /v1/models`` lists ``listed_models`` in the
shape of the wire that asks (a 401 without ``expected_key`` when that is set); other paths
answer from ``page(...)``, else 404.
"""

from __future__ import annotations

import collections
import contextlib
import http
import itertools
import json
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from etcode.provider.spec import ProviderSpec

__all__ = [
    "Call",
    "FakeLLM",
    "Fault",
    "Recorded",
    "Recording",
    "Reply",
    "anthropic_events",
    "openai_events",
    "user_images",
]

Format = Literal["openai", "anthropic"]
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
MODELS_ROUTE = "GET /v1/models"
NO_REPLY_LEFT = "fake server: no scripted reply left"


@dataclass
class Call:
    """A tool call in a scripted reply. ``arguments`` may be a raw (even invalid) JSON string."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    @property
    def raw_arguments(self) -> str:
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, separators=(",", ":"))


@dataclass
class Reply:
    """One scripted model answer. Several ``calls`` are parallel tool calls.

    ``usage`` is ``(input, output)`` or ``(input, output, cache_read, cache_write)``;
    ``None`` estimates it from the sizes. ``chunk_size`` is characters per text delta;
    ``delay`` seconds between events. ``stop_reason`` defaults to tool_use/end_turn (either
    vocabulary is accepted and translated for the format).
    """

    text: str = ""
    calls: list[Call] = field(default_factory=list)
    reasoning: str = ""
    signature: str = "sig"
    usage: tuple[int, ...] | None = None
    chunk_size: int = 16
    delay: float = 0.0
    stop_reason: str | None = None


@dataclass
class Fault:
    """A failure to inject.

    - ``Fault(status=429, headers={"retry-after": "0"}, body=...)``: an HTTP error with the
      format's error JSON (``body`` a str = the message; a dict without ``"error"`` = the
      error object; a dict with ``"error"`` = sent verbatim; bytes = a raw non-JSON body,
      e.g. a proxy's HTML page). Default status 500.
    - ``Fault(cut_after=N, reply=Reply(...))``: stream the reply, drop the connection after
      N SSE events (tool-call arguments are split in ~3 fragments, one event each).
    - ``Fault(error_event={"type": "overloaded_error", "message": "Overloaded"})``: stream
      some text (``reply.text`` or a default) then an in-stream error event.
    - ``Fault(hang=True)``: accept the request and never answer (until the server stops).
    - ``Fault(keepalive=0.1)``: start the stream (the first ``cut_after`` events of ``reply``,
      default none), then send only ``: keep-alive`` comments every 0.1 s, until the server stops.
    """

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] | str | bytes | None = None
    cut_after: int | None = None
    reply: Reply | None = None
    error_event: dict[str, Any] | None = None
    hang: bool = False
    keepalive: float | None = None


@dataclass
class Recorded:
    """A request the server received. ``headers`` keys are lower-case."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    raw: bytes = b""

    @property
    def text(self) -> str:
        """The body as JSON text with its characters as they are (``raw`` escapes "×" as
        ``\\u00d7`` or not, depending on the httpx version that sent it)."""
        return json.dumps(self.body, ensure_ascii=False)


@dataclass
class Recording:
    """A real server's answer replayed byte for byte: ``body`` is the SSE stream as it was
    received (sent back in HTTP chunks, whatever the request's path)."""

    body: bytes

    @classmethod
    def from_file(cls, path: Any) -> Recording:
        """A ``curl -i -N`` capture: the status line and headers, a blank line, the body."""
        data = open(path, "rb").read()  # noqa: PTH123, SIM115 - a test helper
        head, sep, body = data.partition(b"\r\n\r\n")
        return cls(body if sep and head.startswith(b"HTTP/") else data)


Entry = Reply | Fault | Recording | Callable[[Recorded], Reply | Fault]


#: The environment block etcode joins to the front of a request's first user message.
ENV_BLOCK = re.compile(r"\AYou are powered by the model named .*?</env>\n\n", re.DOTALL)


def without_environment(content: Any) -> Any:
    """A user message's content without the environment block at its start (the user's
    words as they were sent); a content list loses a text part that is only that block."""
    if isinstance(content, str):
        return ENV_BLOCK.sub("", content, count=1)
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = content[0]
        if first.get("type") == "text" and ENV_BLOCK.match(first.get("text", "")):
            rest = ENV_BLOCK.sub("", first["text"], count=1)
            return ([{**first, "text": rest}] if rest else []) + content[1:]
    return content


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of each user message of an OpenAI Chat or Anthropic request body, without
    the environment block (a message of parts: its texts, one per line)."""
    texts: list[str] = []
    for message in body["messages"]:
        if message["role"] != "user":
            continue
        content = without_environment(message["content"])
        if not isinstance(content, str):
            content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
        texts.append(content)
    return texts


def image_parts(body: dict[str, Any]) -> int:
    """The images a request body carries, in either wire's shape: OpenAI ``image_url`` parts,
    Anthropic ``image`` blocks (a ``tool_result``'s included)."""

    def count(content: Any) -> int:
        if not isinstance(content, list):
            return 0
        found = 0
        for part in content:
            if isinstance(part, dict):
                found += part.get("type") in ("image_url", "image")
                found += count(part.get("content"))
        return found

    return sum(count(m.get("content")) for m in body.get("messages") or [] if isinstance(m, dict))


def user_images(body: dict[str, Any], index: int = -1) -> list[tuple[str, bytes]]:
    """The images of one user message of a request body (default: the last), in either wire's
    shape, as ``(media type, decoded bytes)``: OpenAI ``image_url`` data URLs, Anthropic
    ``image`` blocks at the message's top level (a ``tool_result``'s are the tool's, not the
    user's)."""
    import base64

    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    content = users[index].get("content") if users else None
    found: list[tuple[str, bytes]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "image_url":
            head, _, data = part["image_url"]["url"].partition(",")
            found.append((head.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data)))
        elif part.get("type") == "image":
            source = part["source"]
            found.append((source["media_type"], base64.b64decode(source["data"])))
    return found


def refusing_images(reply: Reply, refusal: Fault | None = None) -> Callable[[Recorded], Reply | Fault]:
    """An entry that answers ``reply``, or ``refusal`` (default: OpenAI's 400 for a model that
    takes no images) when the request carries an image: a text-only model's server."""
    refused = refusal or Fault(
        status=400, body="Invalid content type. image_url is only supported by certain models."
    )
    return lambda recorded: refused if image_parts(recorded.body) else reply


# ---- wire formats ------------------------------------------------------------------------

_OPENAI_STOP = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
_ANTHROPIC_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Country not supported."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
_ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


_SURROGATE = re.compile("[\ud800-\udfff]")


def _dumps(obj: Any) -> str:
    """JSON as the services send it: UTF-8 text, except that a surrogate (half an emoji, as
    in a reply whose text was split inside a character) is written as a ``\\uXXXX`` escape."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _pieces(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _fragments(args: str) -> list[str]:
    """Split tool arguments into ~3 fragments, as the services stream them."""
    return _pieces(args, -(-len(args) // 3)) if args else []


def _usage_of(reply: Reply, request_size: int) -> tuple[int, int, int, int]:
    if reply.usage is not None:
        values = tuple(reply.usage) + (0, 0)
        return values[0], values[1], values[2], values[3]
    produced = len(reply.text) + len(reply.reasoning) + sum(len(c.raw_arguments) for c in reply.calls)
    return max(1, request_size // 4), max(1, produced // 4), 0, 0


def error_object(fmt: Format, status: int, body: dict[str, Any] | str | None) -> dict[str, Any]:
    """The error JSON a service sends for ``status`` (see :class:`Fault` for ``body``)."""
    if isinstance(body, dict) and "error" in body:
        return body
    if fmt == "openai":
        etype, code, message = _OPENAI_ERRORS.get(status, ("server_error", None, "error"))
        err: dict[str, Any] = {"message": message, "type": etype, "param": None, "code": code}
    else:
        etype, message = _ANTHROPIC_ERRORS.get(status, ("api_error", "error"))
        err = {"type": etype, "message": message}
    if isinstance(body, str):
        err["message"] = body
    elif isinstance(body, dict):
        err.update(body)
    return {"error": err} if fmt == "openai" else {"type": "error", "error": err}


def openai_events(
    reply: Reply, *, ids: list[str], model: str, request_size: int = 0, message_id: str = "chatcmpl-fake"
) -> list[tuple[str, bytes]]:
    """The SSE events of a Chat Completions stream, tagged ("head", "text", "args", ...).
    ``ids`` are the tool call ids, one per ``reply.calls``."""
    cid = message_id
    created = int(time.time())

    def chunk(delta: dict[str, Any] | None, finish: str | None = None, usage: Any = None) -> bytes:
        choices = (
            [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        obj = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
            "usage": usage,
        }
        return f"data: {_dumps(obj)}\n\n".encode()

    events = [("head", chunk({"role": "assistant", "content": "", "refusal": None}))]
    for piece in _pieces(reply.reasoning, reply.chunk_size):
        events.append(("reasoning", chunk({"content": None, "reasoning_content": piece})))
    for piece in _pieces(reply.text, reply.chunk_size):
        events.append(("text", chunk({"content": piece})))
    for i, call in enumerate(reply.calls):
        head = {
            "index": i,
            "id": ids[i],
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(("call", chunk({"tool_calls": [head]})))
        for frag in _fragments(call.raw_arguments):
            events.append(("args", chunk({"tool_calls": [{"index": i, "function": {"arguments": frag}}]})))
    stop = reply.stop_reason or ("tool_use" if reply.calls else "end_turn")
    events.append(("finish", chunk({}, _OPENAI_STOP.get(stop, stop))))
    inp, out, cache_read, _ = _usage_of(reply, request_size)
    usage = {
        "prompt_tokens": inp + cache_read,
        "completion_tokens": out,
        "total_tokens": inp + cache_read + out,
        "prompt_tokens_details": {"cached_tokens": cache_read, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": len(reply.reasoning) // 4,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }
    events.append(("usage", chunk(None, usage=usage)))
    events.append(("done", b"data: [DONE]\n\n"))
    return events


def anthropic_events(
    reply: Reply, *, ids: list[str], model: str, request_size: int = 0, message_id: str = "msg_fake"
) -> list[tuple[str, bytes]]:
    """The SSE events of a Messages API stream, tagged ("head", "text", "args", ...).
    ``ids`` are the tool call ids, one per ``reply.calls``."""

    def event(name: str, obj: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: {_dumps(obj)}\n\n".encode()

    inp, out, cache_read, cache_write = _usage_of(reply, request_size)
    message = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": inp,
            "cache_creation_input_tokens": cache_write,
            "cache_read_input_tokens": cache_read,
            "output_tokens": 1,
            "service_tier": "standard",
        },
    }
    events = [("head", event("message_start", {"type": "message_start", "message": message}))]
    index = 0

    def block(start: dict[str, Any], deltas: list[tuple[str, dict[str, Any]]]) -> None:
        nonlocal index
        events.append(
            (
                "start",
                event(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                ),
            )
        )
        if index == 0:
            events.append(("ping", event("ping", {"type": "ping"})))
        for tag, delta in deltas:
            events.append(
                (
                    tag,
                    event(
                        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
                    ),
                )
            )
        events.append(("stop", event("content_block_stop", {"type": "content_block_stop", "index": index})))
        index += 1

    if reply.reasoning:
        deltas = [
            ("reasoning", {"type": "thinking_delta", "thinking": p})
            for p in _pieces(reply.reasoning, reply.chunk_size)
        ]
        deltas.append(("signature", {"type": "signature_delta", "signature": reply.signature}))
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    if reply.text or not reply.calls:
        deltas = [("text", {"type": "text_delta", "text": p}) for p in _pieces(reply.text, reply.chunk_size)]
        block({"type": "text", "text": ""}, deltas)
    for i, call in enumerate(reply.calls):
        deltas = [("args", {"type": "input_json_delta", "partial_json": ""})]
        deltas += [
            ("args", {"type": "input_json_delta", "partial_json": f}) for f in _fragments(call.raw_arguments)
        ]
        block({"type": "tool_use", "id": ids[i], "name": call.name, "input": {}}, deltas)
    stop = reply.stop_reason or ("tool_use" if reply.calls else "end_turn")
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": _ANTHROPIC_STOP.get(stop, stop), "stop_sequence": None},
        "usage": {"output_tokens": out},
    }
    events.append(("finish", event("message_delta", delta)))
    events.append(("done", event("message_stop", {"type": "message_stop"})))
    return events


def error_event_bytes(fmt: Format, error: dict[str, Any]) -> bytes:
    """An in-stream error event (OpenAI ``data: {"error": ...}``, Anthropic ``event: error``)."""
    if fmt == "openai":
        obj = error if "error" in error else {"error": {"message": "", "param": None, "code": None, **error}}
        return f"data: {_dumps(obj)}\n\n".encode()
    obj = error if "error" in error else {"type": "error", "error": error}
    return f"event: error\ndata: {_dumps(obj)}\n\n".encode()


# ---- the server ----------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeLLM

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        with self.fake._lock:
            self.fake._conns.add(sock)
        return sock, addr

    def shutdown_request(self, request: Any) -> None:
        with self.fake._lock:
            self.fake._conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (the run ended, a keep-alive connection closed) is not an
        error of the server's: no traceback on the test's stderr."""
        import sys

        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        fake = self.server.fake
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        with fake._lock:
            fake.side_requests.append(f"{self.command} {path}")
            fake.side_headers.append(headers)
            page = fake.pages.get(f"{self.command} {path}")
        if page is None and f"{self.command} {path}" == MODELS_ROUTE:
            page = fake._models_page(headers)
        if page is None:
            self._not_found(body_read=True)
            return
        status, obj, delay = page
        if delay:
            fake._stop.wait(delay)
        del raw
        try:
            self._send_json(status, obj, {})
        except OSError:  # the client gave up waiting (a slow page): nothing to report
            self.close_connection = True

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def _side_post(self) -> bool:
        """A scripted side page (``FakeLLM.page``) for this POST: answered, True."""
        path = self.path.split("?", 1)[0]
        if path in (OPENAI_PATH, ANTHROPIC_PATH):
            return False
        self.do_GET()
        return True

    def do_POST(self) -> None:
        if self._side_post():
            return
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?", 1)[0]
        fmt: Format | None = (
            "openai" if path == OPENAI_PATH else "anthropic" if path == ANTHROPIC_PATH else None
        )
        if fmt is None:
            self._not_found(body_read=True)
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        recorded = Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body, raw)
        fake = self.server.fake
        entry = fake._take(recorded)
        try:
            if entry is None:
                obj = error_object(fmt, 400, NO_REPLY_LEFT)
                self._send_json(400, obj, {})
            elif isinstance(entry, Fault):
                self._fault(fmt, entry, recorded)
            elif isinstance(entry, Recording):
                self._send_events([entry.body], 0.0, cut=False)
            else:
                self._stream(fmt, entry, recorded)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- responses

    def _not_found(self, body_read: bool = False) -> None:
        length = int(self.headers.get("content-length") or 0)
        if length and not body_read:
            self.rfile.read(length)
        self._send_json(404, {"error": {"message": f"no route for {self.command} {self.path}"}}, {})

    def _head(self, status: int, headers: dict[str, str]) -> bytes:
        try:
            phrase = http.HTTPStatus(status).phrase
        except ValueError:
            phrase = "Overloaded" if status == 529 else "Error"
        lines = [f"HTTP/1.1 {status} {phrase}"] + [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _send_json(self, status: int, obj: Any, extra: dict[str, str]) -> None:
        self._send_raw(status, _dumps(obj).encode(), {"content-type": "application/json", **extra})

    def _send_raw(self, status: int, data: bytes, extra: dict[str, str]) -> None:
        headers = {"content-length": str(len(data)), "request-id": "req_fake", **extra}
        self.wfile.write(self._head(status, headers) + (b"" if self.command == "HEAD" else data))

    def _fault(self, fmt: Format, fault: Fault, recorded: Recorded) -> None:
        fake = self.server.fake
        if fault.hang:
            fake._stop.wait()
            self.close_connection = True
            return
        if fault.keepalive is not None:
            events = fake._events(fmt, fault.reply or Reply(text="Thinking."), recorded)
            self._send_keepalive([e for _, e in events[: fault.cut_after or 0]], fault.keepalive)
            return
        if fault.cut_after is not None or fault.error_event is not None:
            reply = fault.reply or Reply(
                text="This answer is going to be cut off half way through.", chunk_size=8
            )
            events = fake._events(fmt, reply, recorded)
            if fault.error_event is not None:
                last_text = max((i for i, (tag, _) in enumerate(events) if tag == "text"), default=0)
                payloads = [e for _, e in events[: last_text + 1]] + [
                    error_event_bytes(fmt, fault.error_event)
                ]
                self._send_events(payloads, reply.delay, cut=False)
            else:
                self._send_events([e for _, e in events[: fault.cut_after]], reply.delay, cut=True)
            return
        status = fault.status or 500
        if isinstance(fault.body, bytes):
            self._send_raw(status, fault.body, {"content-type": "text/html", **fault.headers})
        else:
            self._send_json(status, error_object(fmt, status, fault.body), fault.headers)

    def _stream(self, fmt: Format, reply: Reply, recorded: Recorded) -> None:
        events = self.server.fake._events(fmt, reply, recorded)
        self._send_events([e for _, e in events], reply.delay, cut=False)

    def _send_keepalive(self, payloads: list[bytes], every: float) -> None:
        self._send_events(payloads, 0.0, cut=True, close=False)
        stop = self.server.fake._stop
        comment = b": keep-alive\n\n"
        with contextlib.suppress(OSError):
            while not stop.wait(every):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(comment), comment))
                self.wfile.flush()
        self.close_connection = True

    def _send_events(self, payloads: list[bytes], delay: float, *, cut: bool, close: bool = True) -> None:
        headers = {
            "content-type": "text/event-stream; charset=utf-8",
            "transfer-encoding": "chunked",
            "cache-control": "no-cache",
            "request-id": "req_fake",
        }
        head = self._head(200, headers)
        frames = [b"%x\r\n%s\r\n" % (len(p), p) for p in payloads]
        stop = self.server.fake._stop
        if delay <= 0:
            self.wfile.write(head + b"".join(frames) + (b"" if cut else b"0\r\n\r\n"))
        else:
            self.wfile.write(head)
            started = time.monotonic()
            for i, frame in enumerate(frames):  # paced from the start: no drift at high rates
                if i and stop.wait(max(0.0, started + i * delay - time.monotonic())):
                    cut = True
                    break
                self.wfile.write(frame)
            if not cut:
                self.wfile.write(b"0\r\n\r\n")
        if cut and close:  # drop the connection mid-body, like a network failure
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)


class FakeLLM:
    """The scripted server (use as a context manager; see the module docstring)."""

    def __init__(self, model: str = "fake-model") -> None:
        self.model = model
        self.requests: list[Recorded] = []
        #: Requests to other paths (``"GET /props"``), answered from ``pages`` or with 404
        #: (``GET /v1/models`` lists ``listed_models``); ``side_headers`` their headers.
        self.side_requests: list[str] = []
        self.side_headers: list[dict[str, str]] = []
        #: What ``GET /v1/models`` lists (default: ``[model]``), in the shape of the wire
        #: the request speaks (``anthropic-version`` header: Anthropic's, else OpenAI's).
        self.listed_models: list[str] | None = None
        #: When set, ``GET /v1/models`` without this key (``Bearer`` or ``x-api-key``) is a 401.
        self.expected_key: str | None = None
        self.pages: dict[str, tuple[int, Any, float]] = {}
        self._queue: collections.deque[Entry] = collections.deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._conns: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = socket.socketpair()

    # -- lifecycle

    def start(self) -> FakeLLM:
        server = _Server(("127.0.0.1", 0), _Handler, bind_and_activate=True)
        server.fake = self
        self._server = server
        self._thread = threading.Thread(target=self._serve, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        assert self._server is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._server.socket, selectors.EVENT_READ, "accept")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while not self._stop.is_set():
                for key, _ in sel.select():
                    if key.data == "wake":
                        return
                    self._server._handle_request_noblock()

    def stop(self) -> None:
        """Stop serving, release hanging requests and close every connection."""
        if self._server is None:
            return
        self._stop.set()
        self._wake_w.send(b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()
        self._server = None
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- API

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeLLM not started"
        return self._server.server_address[1]

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *entries: Entry) -> FakeLLM:
        """Append replies/faults/callables to the FIFO queue."""
        with self._lock:
            self._queue.extend(entries)
        return self

    def page(self, route: str, obj: Any, *, status: int = 200, delay: float = 0.0) -> FakeLLM:
        """Answer ``route`` (``"GET /props"``, ``"POST /api/show"``) with JSON ``obj``,
        after ``delay`` seconds (a slow server)."""
        with self._lock:
            self.pages[route] = (status, obj, delay)
        return self

    @property
    def remaining(self) -> int:
        """How many scripted entries are still queued."""
        return len(self._queue)

    def spec(self, type: Format = "openai", **overrides: Any) -> ProviderSpec:
        """A :class:`ProviderSpec` pointing at this server (id = type, key ``test-key``)."""
        values: dict[str, Any] = {
            "id": type,
            "type": type,
            "base_url": self.openai_base_url if type == "openai" else self.anthropic_base_url,
            "model": self.model,
            "api_key": "test-key",
        }
        values.update(overrides)
        return ProviderSpec(**values)

    # -- internals

    def _models_page(self, headers: dict[str, str]) -> tuple[int, Any, float]:
        """``GET /v1/models`` as OpenAI (``{"object": "list", "data": [...]}``) or Anthropic
        (``{"data": [...], "has_more": ...}``) answer it, or their 401 for a wrong key."""
        anthropic = "anthropic-version" in headers
        sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        if self.expected_key is not None and sent != self.expected_key:
            wire: Format = "anthropic" if anthropic else "openai"
            message = "invalid x-api-key" if anthropic else "Incorrect API key provided."
            return 401, error_object(wire, 401, message), 0.0
        names = self.listed_models if self.listed_models is not None else [self.model]
        if anthropic:
            data = [
                {"type": "model", "id": n, "display_name": n, "created_at": "2025-05-22T00:00:00Z"}
                for n in names
            ]
            return (
                200,
                {
                    "data": data,
                    "has_more": False,
                    "first_id": names[0] if names else None,
                    "last_id": names[-1] if names else None,
                },
                0.0,
            )
        data = [{"id": n, "object": "model", "created": 1686935002, "owned_by": "fake"} for n in names]
        return 200, {"object": "list", "data": data}, 0.0

    def _take(self, recorded: Recorded) -> Reply | Fault | Recording | None:
        with self._lock:
            self.requests.append(recorded)
            entry = self._queue.popleft() if self._queue else None
        if entry is not None and not isinstance(entry, Reply | Fault | Recording):
            entry = entry(recorded)
        return entry

    def _events(self, fmt: Format, reply: Reply, recorded: Recorded) -> list[tuple[str, bytes]]:
        prefix, mprefix = ("call", "chatcmpl-fake") if fmt == "openai" else ("toolu", "msg_fake")
        ids = [c.id or f"{prefix}_{next(self._ids):04d}" for c in reply.calls]
        build = openai_events if fmt == "openai" else anthropic_events
        model = recorded.body.get("model") or self.model
        message_id = f"{mprefix}{next(self._ids):04d}"
        return build(reply, ids=ids, model=model, request_size=len(recorded.raw), message_id=message_id)

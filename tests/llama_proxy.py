"""A recording reverse proxy in front of a real model server (``llama-server``), for tests.

    with llama_proxy(port) as (proxy_port, bodies, controls):
        ...  # point etcode at http://127.0.0.1:{proxy_port}/v1
        bodies[-1]["messages"]          # the JSON body of each POST, in order
        controls.props_status = 503     # GET /props answers 503 "Loading model" ...
        controls.props_left = 2         # ... for the next 2 asks only (None: until reset)
        controls.max_tokens_cap = 48    # the server is asked for at most 48 tokens an answer

Every request is forwarded to ``127.0.0.1:upstream`` as it came (but for ``max_tokens_cap``:
a CPU writes a few tokens a second, and a small model rambles to its limit; ``bodies`` keeps
what etcode sent); the response's status, headers and body are streamed back unchanged, as they arrive (SSE too), and the connection is
then closed. ``controls.paths`` lists each request's ``"METHOD /path"``. Plain HTTP on
127.0.0.1 only; every upstream read has a time limit.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple

#: What llama-server answers while it loads its model.
LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}
UPSTREAM_TIMEOUT = 280.0


@dataclass
class Controls:
    """What the proxy does besides forwarding, changeable while it runs."""

    #: When set, ``GET /props`` answers this status (llama.cpp's "Loading model" body).
    props_status: int | None = None
    #: How many more ``/props`` asks get ``props_status`` (None: all until it is reset).
    props_left: int | None = None
    #: ``"METHOD /path"`` of every request, in order.
    paths: list[str] = field(default_factory=list)
    #: ``/props`` asks answered with ``props_status``.
    props_refused: int = 0
    #: When set, a larger ``max_tokens`` in a request body is lowered to it on the way.
    max_tokens_cap: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def refuse_props(self) -> int | None:
        """The status to answer this ``/props`` ask with, or None to forward it."""
        with self.lock:
            if self.props_status is None or self.props_left == 0:
                return None
            if self.props_left is not None:
                self.props_left -= 1
            self.props_refused += 1
            return self.props_status


class ProxyHandle(NamedTuple):
    port: int
    bodies: list[dict[str, Any]]
    controls: Controls


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    upstream: int
    bodies: list[dict[str, Any]]
    controls: Controls


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        controls = self.server.controls
        with controls.lock:
            controls.paths.append(f"{self.command} {self.path}")
        if self.command == "GET" and self.path.split("?")[0] == "/props":
            status = controls.refuse_props()
            if status is not None:
                self._send(status, json.dumps(LOADING).encode())
                return
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if body:
            with contextlib.suppress(ValueError):
                parsed = json.loads(body)
                with controls.lock:
                    self.server.bodies.append(parsed)
                cap = controls.max_tokens_cap
                if isinstance(parsed, dict) and cap is not None and parsed.get("max_tokens", 0) > cap:
                    body = json.dumps({**parsed, "max_tokens": cap}).encode()
        headers = {
            k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP | {"host", "content-length"}
        }
        upstream = http.client.HTTPConnection("127.0.0.1", self.server.upstream, timeout=UPSTREAM_TIMEOUT)
        try:
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            response = upstream.getresponse()
            self.send_response(response.status, response.reason)
            for key, value in response.getheaders():
                if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Connection", "close")
            self.end_headers()
            while chunk := response.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
        except OSError:
            pass  # the client or the server went away: the connection just closes
        finally:
            upstream.close()
            self.close_connection = True

    def _send(self, status: int, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


@contextlib.contextmanager
def llama_proxy(upstream: int) -> Iterator[ProxyHandle]:
    """A proxy to ``127.0.0.1:upstream`` for the ``with`` block: (its port, the recorded
    request bodies, its :class:`Controls`)."""
    server = _Server(("127.0.0.1", 0), _Handler)
    server.upstream = upstream
    server.bodies = []
    server.controls = Controls()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield ProxyHandle(server.server_address[1], server.bodies, server.controls)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)

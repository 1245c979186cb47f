"""A plain HTTP server on 127.0.0.1 for tests of etcode's own HTTP clients (WebFetch...)."""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class QuietServer(ThreadingHTTPServer):
    """A threading server that says nothing when a client closes early (a timeout, an abort,
    a refused body) while it still writes."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve ``handler`` on a free port of 127.0.0.1; yields the base URL, stops at exit."""
    httpd = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def stub_dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    """``socket.getaddrinfo`` (what asyncio and httpx resolve with) answers from the dict
    returned: each name's list of answers is used in turn, the last one for ever; other
    names fail, IP literals resolve as usual."""
    answers: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        if name not in answers:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
            return real(host, port, *args, **kwargs)
        queue = answers[name]
        ip = queue.pop(0) if len(queue) > 1 else queue[0]
        return real(ip, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answers

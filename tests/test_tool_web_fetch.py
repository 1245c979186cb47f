"""WebFetch against a local http.server on 127.0.0.1 (no internet)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from etcode.tools.base import PermissionDenied, ToolContext, ToolError
from etcode.tools.web_fetch import WebFetchTool, html_to_markdown

PAGE = b"""<!doctype html><html><head><title>Docs</title><script>var x = 1;</script>
<style>body{color:red}</style></head><body>
<nav><a href="/">Home</a></nav>
<h1>Install</h1><p>Run <code>pip install etcode</code> then read the <a href="/guide">guide</a>.</p>
<ul><li>fast</li><li>safe</li></ul>
<pre>etcode run "hi"
  indented</pre>
</body></html>"""


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        if self.path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE)
        elif self.path == "/plain":
            self._send(200, "text/plain", b"just text\n")
        elif self.path == "/json":
            self._send(200, "application/json", b'{"a": 1}')
        elif self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/plain")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/missing":
            self._send(404, "text/plain", b"nope")
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n")
        elif self.path == "/slow":
            time.sleep(2)
            self._send(200, "text/plain", b"late")
        elif self.path == "/big":
            self._send(200, "text/plain", ("line\n" * 20000).encode())
        elif self.path == "/latin1":
            self._send(200, "text/plain; charset=iso-8859-1", "café".encode("latin-1"))
        else:
            self._send(404, "text/plain", b"?")


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that gave up (timeout/abort tests) close the socket early


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = QuietServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def _data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def make_ctx(tmp_path: Path, **kw: Any) -> ToolContext:
    return ToolContext(session_id="s", call_id="c", directory=tmp_path, worktree=tmp_path, **kw)


async def fetch(ctx: ToolContext, **args: Any):
    tool = WebFetchTool()
    return await tool.run(tool.parse(args), ctx)


async def test_html_to_markdown(server: str, tmp_path: Path) -> None:
    result = await fetch(make_ctx(tmp_path), url=f"{server}/page")
    out = result.output
    assert "# Install" in out
    assert "`pip install etcode`" in out
    assert f"[guide]({server}/guide)" in out
    assert "- fast\n- safe" in out
    assert '```\netcode run "hi"\n  indented\n```' in out
    assert "var x" not in out and "color:red" not in out
    assert result.data and result.data["status"] == 200 and result.data["contentType"] == "text/html"
    assert WebFetchTool().result_summary({}, result) == f"Fetched {len(PAGE)} B (200 text/html)"


async def test_html_to_text_and_raw(server: str, tmp_path: Path) -> None:
    text = await fetch(make_ctx(tmp_path), url=f"{server}/page", format="text")
    assert "Install" in text.output and "#" not in text.output and "<p>" not in text.output
    assert "Run pip install etcode then read the guide." in text.output
    raw = await fetch(make_ctx(tmp_path), url=f"{server}/page", format="html")
    assert raw.output.startswith("<!doctype html>")


async def test_plain_json_redirect_charset(server: str, tmp_path: Path) -> None:
    assert (await fetch(make_ctx(tmp_path), url=f"{server}/plain")).output == "just text\n"
    assert (await fetch(make_ctx(tmp_path), url=f"{server}/json")).output == '{"a": 1}'
    redirected = await fetch(make_ctx(tmp_path), url=f"{server}/redirect")
    assert (
        redirected.output == "just text\n" and redirected.data and redirected.data["url"].endswith("/plain")
    )
    assert (await fetch(make_ctx(tmp_path), url=f"{server}/latin1")).output == "café"


async def test_errors(server: str, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="HTTP 404"):
        await fetch(make_ctx(tmp_path), url=f"{server}/missing")
    with pytest.raises(ToolError, match="Unsupported content type"):
        await fetch(make_ctx(tmp_path), url=f"{server}/image")
    with pytest.raises(ToolError, match="http:// or https://"):
        await fetch(make_ctx(tmp_path), url="ftp://example.com/x")
    with pytest.raises(ToolError, match="timed out"):
        await fetch(make_ctx(tmp_path), url=f"{server}/slow", timeout=0.3)


async def test_abort(server: str, tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)

    async def stop() -> None:
        await asyncio.sleep(0.2)
        ctx.abort.set()

    started = time.monotonic()
    with pytest.raises(ToolError, match="interrupted"):
        await asyncio.gather(stop(), fetch(ctx, url=f"{server}/slow"))
    assert time.monotonic() - started < 1.5


async def test_big_output_truncated(server: str, tmp_path: Path) -> None:
    result = await fetch(make_ctx(tmp_path), url=f"{server}/big")
    assert "output truncated" in result.output
    assert result.data and Path(result.data["outputPath"]).read_text().count("line") == 20000


async def test_permission(server: str, tmp_path: Path) -> None:
    seen: list[tuple[str, list[str]]] = []

    async def deny(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        seen.append((permission, patterns))
        raise PermissionDenied("denied")

    with pytest.raises(PermissionDenied):
        await fetch(make_ctx(tmp_path, check_permission=deny), url=f"{server}/plain")
    assert seen == [("webfetch", [f"{server}/plain"])]


def test_markdown_table_and_entities() -> None:
    html = "<table><tr><th>k</th><th>v</th></tr><tr><td>a &amp; b</td><td>1</td></tr></table>"
    assert html_to_markdown(html) == "| k | v |\n| --- | --- |\n| a & b | 1 |"

"""WebFetch against a local http.server on 127.0.0.1 (no internet)."""

from __future__ import annotations

import asyncio
import functools
import gzip
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etcode.tools.base import PermissionDenied, ToolContext, ToolError
from etcode.tools.html_convert import html_to_text
from etcode.tools.web_fetch import WebFetchTool, html_to_markdown
from tests import http_support
from tests.http_support import QuietServer, serving
from tests.require import missing
from tests.tool_support import make_ctx

PAGE = b"""<!doctype html><html><head><title>Docs</title><script>var x = 1;</script>
<style>body{color:red}</style></head><body>
<nav><a href="/">Home</a></nav>
<h1>Install</h1><p>Run <code>pip install etcode</code> then read the <a href="/guide">guide</a>.</p>
<ul><li>fast</li><li>safe</li></ul>
<pre>etcode run "hi"
  indented</pre>
</body></html>"""


BIG_HTML = (
    b"<html><body>" + b"<p>Hello <a href='/x'>link</a> <b>bold</b></p><ul><li>a</li><li>b</li></ul>\n" * 55000
)


@functools.cache
def _zeros_gzip() -> bytes:
    """64 MB of zeros, gzipped: 64 KB on the wire."""
    return gzip.compress(bytes(64 * 1024 * 1024), 9)


ENCODED: dict[str, Callable[[], tuple[str, bytes]]] = {
    "/gzip": lambda: ("gzip", gzip.compress(b"zipped text\n" * 1000)),
    "/deflate": lambda: ("deflate", zlib.compress(b"deflated text\n")),
    "/raw-deflate": lambda: ("Deflate", zlib.compress(b"raw deflated text\n", wbits=-zlib.MAX_WBITS)),
    "/bomb": lambda: ("gzip", _zeros_gzip()),
    "/bomb2": lambda: ("gzip, gzip", gzip.compress(_zeros_gzip())),
    "/br": lambda: ("br", b"\x0b\x02\x80hello\x03"),
    "/broken": lambda: ("gzip", b"not gzip at all"),
}


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
        elif self.path in ENCODED:
            encoding, body = ENCODED[self.path]()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/bightml":
            self._send(200, "text/html", BIG_HTML)
        elif self.path == "/big":
            self._send(200, "text/plain", ("line\n" * 20000).encode())
        elif self.path == "/latin1":
            self._send(200, "text/plain; charset=iso-8859-1", "café".encode("latin-1"))
        else:
            self._send(404, "text/plain", b"?")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving(Handler) as url:
        yield url


@pytest.fixture(autouse=True)
def _data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


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


def test_breaks_rules_quotes_numbered_lists_images_in_both_formats() -> None:
    html = (
        "<p>one<br>two</p><hr><blockquote>quoted <em>word</em></blockquote>"
        "<ol><li>first<ol><li>inner</li></ol></li><li>second</li></ol>"
        '<p><img src="/logo.png" alt="Logo"><img alt="none"> <a href="#top">top</a></p>'
        "<pre><code>x = 1</code></pre>"
    )
    assert html_to_markdown(html, "https://example.com/docs/") == (
        "one  \ntwo\n\n---\n\n> quoted *word*\n\n1. first\n  1. inner\n2. second\n\n"
        "![Logo](https://example.com/logo.png) top\n\n```\nx = 1\n```"
    )
    assert html_to_text(html, "https://example.com/docs/") == (
        "one\ntwo\n\nquoted word\n\n1. first\n  1. inner\n2. second\n\ntop\n\nx = 1"
    )


# ---- issue 12, point 10: rules on every hop, one spelling per address, the local network ----

from etcode.permission import AllowAsker, DenyAsker  # noqa: E402
from etcode.security.web_address import InvalidURL, is_internal, normalize_url  # noqa: E402
from tests.permission_support import ruled_context  # noqa: E402


class Counting(BaseHTTPRequestHandler):
    """A server that counts its requests; ``/to?u=URL`` redirects, ``/drip`` never ends."""

    hits: list[str] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        type(self).hits.append(self.path)
        if self.path.startswith("/to?u="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif self.path == "/drip":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                while True:  # a byte every half second, for ever
                    self.wfile.write(b".")
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                return
        else:
            body = f"{self.headers.get('Host')} {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


@pytest.fixture
def counting() -> Iterator[tuple[str, list[str]]]:
    hits: list[str] = []
    handler = type("Handler", (Counting,), {"hits": hits})
    httpd = QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", hits
    httpd.shutdown()
    httpd.server_close()


def ruled_ctx(tmp_path: Path, permission: Any, asker: Any = None) -> ToolContext:
    return ruled_context(tmp_path, permission, asker)


LOCAL_OK = {"private_network": {"http://127.0.0.1:*": "allow", "http://localhost:*": "allow"}}


async def test_redirect_to_a_denied_url_is_refused(tmp_path: Path, counting: tuple[str, list[str]]) -> None:
    base, hits = counting
    ctx = ruled_ctx(tmp_path, {**LOCAL_OK, "webfetch": {f"{base}/secret*": "deny"}})
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await fetch(ctx, url=f"{base}/secret")
    assert hits == []
    # An allowed URL whose redirect points at the denied one: the second hop is refused.
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await fetch(ctx, url=f"{base}/to?u={base}/secret")
    assert hits == [f"/to?u={base}/secret"]
    # A relative redirect is checked the same way.
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await fetch(ctx, url=f"{base}/to?u=/secret/x")
    assert hits == [f"/to?u={base}/secret", "/to?u=/secret/x"]


@pytest.mark.parametrize(
    "spelling",
    [
        "HTTP://127.0.0.1:{port}/secret",
        "http://127.1:{port}/secret",
        "http://0x7f.1:{port}/secret",
        "http://2130706433:{port}/secret",
        "http://0177.0.0.1:{port}/secret",
        "http://127.0.0.1.:{port}/secret",
        "http://127.0.0.1:{port}/%73ecret",
        "http://127.0.0.1:{port}/public/../secret",
        "http://127.0.0.1:{port}/./secret",
        "http://[::ffff:127.0.0.1]:{port}/secret",
        "http://localhost:{port}/secret",
        "http://LOCALHOST:{port}/secret#frag",
    ],
)
async def test_spellings_of_a_denied_url_are_refused(
    tmp_path: Path, counting: tuple[str, list[str]], spelling: str
) -> None:
    base, hits = counting
    port = base.rsplit(":", 1)[1]
    ctx = ruled_ctx(tmp_path, {**LOCAL_OK, "webfetch": {"http://127.0.0.1:*/secret*": "deny"}})
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await fetch(ctx, url=spelling.format(port=port))
    assert hits == []
    result = await fetch(ctx, url=f"http://127.1:{port}/public")
    assert result.output == f"127.0.0.1:{port} /public"  # the Host header names the server


async def test_local_network_refused_unless_a_rule_allows(
    tmp_path: Path, counting: tuple[str, list[str]]
) -> None:
    base, hits = counting
    port = base.rsplit(":", 1)[1]
    for url in (f"{base}/x", f"http://localhost:{port}/x", "http://169.254.169.254/latest/meta-data/",
                "http://10.0.0.1/", "http://[::1]:9/", "http://0.0.0.0:9/"):  # fmt: skip
        for asker in (DenyAsker(), AllowAsker()):  # --yes does not open the local network
            with pytest.raises(PermissionDenied, match="private_network|non-interactive"):
                await fetch(ruled_ctx(tmp_path, None, asker), url=url)
    with pytest.raises(PermissionDenied, match="private_network"):  # allowing the tool is not enough
        await fetch(ruled_ctx(tmp_path, {"WebFetch": "allow", "webfetch": "allow"}), url=f"{base}/x")
    assert hits == []
    allowed = ruled_ctx(tmp_path, {"private_network": {f"http://localhost:{port}/*": "allow"}})
    result = await fetch(allowed, url=f"http://localhost:{port}/ok")
    assert result.output == f"localhost:{port} /ok" and hits == ["/ok"]


async def test_slow_drip_is_bounded_by_the_whole_timeout(
    tmp_path: Path, counting: tuple[str, list[str]]
) -> None:
    base, _ = counting
    started = time.monotonic()
    with pytest.raises(ToolError, match="timed out after 1 s"):
        await fetch(ruled_ctx(tmp_path, LOCAL_OK), url=f"{base}/drip", timeout=1)
    assert time.monotonic() - started < 10  # a byte every 0.5 s kept the old per-read timeout alive


async def test_abort_while_dripping(tmp_path: Path, counting: tuple[str, list[str]]) -> None:
    base, _ = counting
    ctx = ruled_ctx(tmp_path, LOCAL_OK)

    async def stop() -> None:
        await asyncio.sleep(0.3)
        ctx.abort.set()

    started = time.monotonic()
    with pytest.raises(ToolError, match="interrupted"):
        await asyncio.gather(stop(), fetch(ctx, url=f"{base}/drip", timeout=100))
    assert time.monotonic() - started < 10


def test_bad_urls_are_refused_with_a_reason() -> None:
    for url, reason in (
        ("ftp://example.com/", "http:// or https://"),
        ("file:///etc/passwd", "http:// or https://"),
        ("http://user:pw@example.com/", "user name or password"),
        ("http://allowed.example@evil.example/", "user name or password"),
        ("http://exa mple.com\n/", "control characters"),
        ("http://example.com:99999/", "Invalid URL"),
        # The resolver cuts a name at a NUL: "secret.example%00.x" would reach secret.example.
        ("http://secret.example%00.other.example/", "Invalid host name"),
        ("http://exa%20mple.com/", "Invalid host name"),
        ("http://evil.example%2F@x/", "user name or password"),
        ("http://evil.example%2Fsecret/", "Invalid host name"),
    ):
        with pytest.raises(InvalidURL, match=reason):
            normalize_url(url)


def _ipv4_spellings() -> st.SearchStrategy[str]:
    """Ways inet_aton (and so curl and browsers) accept to write 127.0.0.1."""

    def part(value: int) -> st.SearchStrategy[str]:
        return st.sampled_from([str(value), hex(value), "0" + oct(value)[2:] if value else "0"])

    return st.one_of(
        st.tuples(part(127), part(0), part(0), part(1)).map(".".join),
        st.tuples(part(127), part(1)).map(".".join),
        st.sampled_from(["2130706433", "0x7f000001", "017700000001", "127.0.1", "127.0.0.1."]),
    )


@settings(max_examples=200, deadline=None)
@given(
    host=_ipv4_spellings(),
    scheme=st.sampled_from(["http", "HTTP", "Http"]),
    port=st.sampled_from(["", ":80"]),
    path=st.sampled_from(["/secret/a", "/%73ecret/a", "/SeCrEt/../secret/a", "/./secret/a", "/secret/%61"]),
)
def test_property_one_spelling_per_address(host: str, scheme: str, port: str, path: str) -> None:
    assert normalize_url(f"{scheme}://{host}{port}{path}").url == "http://127.0.0.1/secret/a"


def test_internal_addresses() -> None:
    import ipaddress

    for text in ("127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
                 "0.0.0.0", "::1", "fe80::1", "fc00::1", "::ffff:10.0.0.1", "224.0.0.1"):  # fmt: skip
        assert is_internal(ipaddress.ip_address(text)), text
    for text in ("93.184.216.34", "2606:4700::1111", "8.8.8.8"):
        assert not is_internal(ipaddress.ip_address(text)), text
    # IPv6 addresses that carry an internal IPv4 one to a translator or tunnel (NAT64,
    # 6to4, IPv4-compatible), the local-use NAT64 prefix and site-local addresses.
    for text in ("64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "::127.0.0.1", "::10.0.0.1", "2002:7f00:1::1",
                 "2002:a9fe:a9fe::", "64:ff9b:1::808:808", "fec0::1"):  # fmt: skip
        assert is_internal(ipaddress.ip_address(text)), text
    for text in ("64:ff9b::808:808", "2002:808:808::1"):  # a public IPv4 address behind them
        assert not is_internal(ipaddress.ip_address(text)), text


def test_hosts_that_are_numeric_after_idna() -> None:
    """Full-width digits and ideographic dots are ASCII after IDNA: the IPv4 spelling is
    made canonical after it, so rules on ``http://127.0.0.1*`` see the same text."""
    for url in (
        "http://\uff11\uff12\uff17.\uff11/x",
        "http://127\u30020\u30020\u30021/x",
        "http://0x7F.1./x",
    ):
        assert normalize_url(url).url == "http://127.0.0.1/x", url


# ---- allow-lists by name; the address and lenient path spellings as aliases ----------------

from etcode.permission import PermissionService, rules_from_config  # noqa: E402
from tests.permission_support import Answer  # noqa: E402


@pytest.mark.parametrize("catch_all", ["deny", "ask"])
async def test_an_allow_list_of_names_lets_them_through(
    tmp_path: Path, counting: tuple[str, list[str]], catch_all: str
) -> None:
    """``"*": "deny"`` (or ask) with an allowed name: the address the name resolves to is
    not refused (or asked) by the catch-all — before, an allow-list could fetch nothing."""
    base, hits = counting
    port = base.rsplit(":", 1)[1]
    asker = Answer()
    rules = {
        "webfetch": {"*": catch_all, f"http://localhost:{port}/*": "allow"},
        "private_network": {f"http://localhost:{port}/*": "allow"},
    }
    result = await fetch(ruled_ctx(tmp_path, rules, asker), url=f"http://localhost:{port}/ok")
    assert result.output == f"localhost:{port} /ok" and hits == ["/ok"] and asker.requests == []
    with pytest.raises(PermissionDenied):  # what is not on the list still is not fetched
        await fetch(ruled_ctx(tmp_path, rules, asker), url=f"{base}/ok")
    assert hits == ["/ok"]


async def test_a_rule_naming_the_address_counts_for_the_name(
    tmp_path: Path, counting: tuple[str, list[str]]
) -> None:
    base, hits = counting
    port = base.rsplit(":", 1)[1]
    asker = Answer()
    ask_ip = {**LOCAL_OK, "webfetch": {f"http://127.0.0.1:{port}/*": "ask"}}
    with pytest.raises(PermissionDenied, match="recorded"):
        await fetch(ruled_ctx(tmp_path, ask_ip, asker), url=f"http://localhost:{port}/x")
    assert [request.patterns for request in asker.requests] == [[f"http://127.0.0.1:{port}/x"]]
    assert hits == []


def test_aliases_in_the_service() -> None:
    """A rule counts for an alias only when it does not match the named pattern too."""

    def decide(permission: dict[str, Any]) -> str:
        service = PermissionService(rules_from_config(permission), Answer())
        try:
            asyncio.run(service.check("webfetch", ["http://name/x"], {"aliases": ["http://10.0.0.1/x"]}))
        except PermissionDenied as err:
            return "ask" if err.asked else "deny"
        return "allow"

    assert decide({"webfetch": {"*": "deny", "http://name/*": "allow"}}) == "allow"
    assert decide({"webfetch": {"*": "ask", "http://name/*": "allow"}}) == "allow"
    assert decide({"webfetch": {"http://10.0.0.1/*": "deny", "http://name/*": "allow"}}) == "deny"
    assert decide({"webfetch": {"http://10.*": "ask"}}) == "ask"
    assert (
        decide({"webfetch": {"*": "deny", "http://10.0.0.1/*": "allow"}}) == "deny"
    )  # an alias never grants
    assert decide({"webfetch": {"http://name/*": "deny", "http://10.0.0.1/*": "allow"}}) == "deny"


@pytest.mark.parametrize(
    "path",
    ["//secret/x", "/%2Fsecret/x", "/secret%2Fx", "/public/..%2Fsecret/x", "/%5Csecret%5Cx", "/.//secret/x",
     "/public%2F%2E%2E%2Fsecret/x"],
)  # fmt: skip
async def test_lenient_path_spellings_of_a_denied_path_are_refused(
    tmp_path: Path, counting: tuple[str, list[str]], path: str
) -> None:
    """Servers that merge slashes or decode ``%2F`` (nginx does both) read these as
    ``/secret/x``: a rule on ``/secret/*`` refuses them, for the name and the address."""
    base, hits = counting
    port = base.rsplit(":", 1)[1]
    ctx = ruled_ctx(tmp_path, {**LOCAL_OK, "webfetch": {f"http://127.0.0.1:{port}/secret/*": "deny"}})
    for url in (f"{base}{path}", f"http://localhost:{port}{path}"):
        with pytest.raises(PermissionDenied, match="denied by permission rule"):
            await fetch(ctx, url=url)
    assert hits == []
    assert (await fetch(ctx, url=f"{base}/public/x")).output == f"127.0.0.1:{port} /public/x"


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_property_lenient_spellings_of_one_path(data: st.DataObject) -> None:
    """Escapes of any letter (either case), doubled, escaped or back- slashes between the
    segments and ``.``/``zz/..`` segments: every spelling reads as ``/secret/x`` leniently
    (the path as sent: dot segments next to a literal ``/`` are already gone from it)."""

    def word(text: str) -> str:
        return "".join(data.draw(st.sampled_from([c, f"%{ord(c):02X}", f"%{ord(c):02x}"])) for c in text)

    lead = data.draw(st.sampled_from(["", "./", "zz/../", ".//", "zz/./../"]))
    sep = data.draw(
        st.sampled_from(["/", "//", "/%2F", "%2F", "%2f", "\\", "%5C", "/./", "/%2E/", "/zz/../"])
    )
    spelled = f"/{lead}{word('secret')}{sep}{word('x')}"
    assert normalize_url(f"http://h{spelled}").loose().url == "http://h/secret/x", spelled


# ---- names through a stub resolver: nothing is looked up outside the test ------------------

import socket  # noqa: E402


@pytest.fixture
def stub_dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    return http_support.stub_dns(monkeypatch)


def _serve(host: str, port: int = 0) -> tuple[QuietServer, list[str]]:
    hits: list[str] = []
    httpd = QuietServer((host, port), type("Handler", (Counting,), {"hits": hits}))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, hits


async def test_a_name_resolving_to_a_private_address_is_refused(
    tmp_path: Path, stub_dns: dict[str, list[str]]
) -> None:
    stub_dns.update({"intranet.test": ["10.1.2.3"], "metadata.test": ["169.254.169.254"]})
    for url in ("http://intranet.test/", "http://metadata.test/latest/meta-data/"):
        with pytest.raises(PermissionDenied, match="private_network"):
            await fetch(ruled_ctx(tmp_path, None, AllowAsker()), url=url)
    # A rule on the address refuses the names that lead to it.
    ctx = ruled_ctx(tmp_path, {"private_network": {"http://169.254.169.254/*": "deny", "*": "allow"}})
    with pytest.raises(PermissionDenied, match="169.254.169.254"):
        await fetch(ctx, url="http://metadata.test/latest/meta-data/")


async def test_the_checked_address_is_the_one_connected_to(
    tmp_path: Path, stub_dns: dict[str, list[str]]
) -> None:
    """DNS rebinding: the name answers 127.0.0.1 when checked and 127.0.0.2 afterwards; the
    request still goes to the address that was checked."""
    first, first_hits = _serve("127.0.0.1")
    port = first.server_address[1]
    try:
        second, second_hits = _serve("127.0.0.2", port)
    except OSError:
        first.shutdown()
        missing("loopback", "127.0.0.2 cannot be bound here")
    try:
        stub_dns["rebind.test"] = ["127.0.0.1", "127.0.0.2"]
        ctx = ruled_ctx(tmp_path, {"private_network": {f"http://rebind.test:{port}/*": "allow"}})
        result = await fetch(ctx, url=f"http://rebind.test:{port}/x")
        assert result.output == f"rebind.test:{port} /x"
        assert first_hits == ["/x"] and second_hits == []
    finally:
        for httpd in (first, second):
            httpd.shutdown()
            httpd.server_close()


async def test_the_proxy_is_the_one_checked(
    tmp_path: Path, stub_dns: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's NO_PROXY reading and httpx's differ (``http://intranet.test`` is a scheme
    form only httpx knows): the fetch must go the way it was checked. Before, the name was
    left to the proxy unchecked but httpx connected to it directly — to a local address."""
    internal, internal_hits = _serve("127.0.0.1")
    proxy, proxy_hits = _serve("127.0.0.1")
    port = internal.server_address[1]
    stub_dns["intranet.test"] = ["127.0.0.1"]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    monkeypatch.setenv("NO_PROXY", "http://intranet.test")
    try:
        result = await fetch(ruled_ctx(tmp_path, None), url=f"http://intranet.test:{port}/x")
        assert internal_hits == [] and proxy_hits == [f"http://intranet.test:{port}/x"]
        assert result.output.endswith(f"http://intranet.test:{port}/x")
    finally:
        for httpd in (internal, proxy):
            httpd.shutdown()
            httpd.server_close()


async def test_a_big_page_is_converted_off_the_event_loop(server: str, tmp_path: Path) -> None:
    """A 4 MB page takes seconds to convert: the event loop (the TUI, Esc) keeps running."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    async def run() -> Any:
        try:
            return await fetch(make_ctx(tmp_path), url=f"{server}/bightml", timeout=60)
        finally:
            done.set()

    result, _ = await asyncio.gather(run(), tick())
    assert result.data and result.data["bytes"] == len(BIG_HTML) and "[link](" in result.output
    assert max(gaps) < 1.0, f"the event loop stood still for {max(gaps):.1f} s"


async def test_content_encodings(server: str, tmp_path: Path) -> None:
    assert (await fetch(make_ctx(tmp_path), url=f"{server}/gzip")).output == "zipped text\n" * 1000
    assert (await fetch(make_ctx(tmp_path), url=f"{server}/deflate")).output == "deflated text\n"
    assert (await fetch(make_ctx(tmp_path), url=f"{server}/raw-deflate")).output == "raw deflated text\n"
    for path, reason in (("/br", "Unsupported Content-Encoding 'br'"), ("/broken", "Could not decompress")):
        with pytest.raises(ToolError, match=reason):
            await fetch(make_ctx(tmp_path), url=f"{server}{path}")


@pytest.mark.parametrize(
    ("path", "reason"), [("/bomb", "too large"), ("/bomb2", "Unsupported Content-Encoding")]
)
async def test_a_compression_bomb_stays_within_the_limit(
    server: str, tmp_path: Path, path: str, reason: str
) -> None:
    """64 KB that inflate to 64 MB (or 273 bytes of gzip in gzip): the 5 MB limit holds for
    what is inflated, not only for what arrives. httpx inflated a chunk whole: 142 MB
    allocated here before; about 16 MB now (the limit, the chunks and their join)."""
    ENCODED[path]()  # built before measuring
    tracemalloc.start()
    try:
        with pytest.raises(ToolError, match=reason):
            await fetch(make_ctx(tmp_path), url=f"{server}{path}")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 48 * 1024 * 1024, f"{peak / 2**20:.0f} MB allocated"


async def test_lookups_that_never_end_leave_the_other_threads_alone(
    tmp_path: Path, stub_dns: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """40 fetches of a name whose resolver never answers end at their timeout, and the
    loop's executor (file tools, the TUI, HTML conversion) stays free meanwhile."""
    release = threading.Event()
    stubbed = socket.getaddrinfo

    def hanging(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "slow.test":
            release.wait(30)
        return stubbed(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", hanging)
    stub_dns["slow.test"] = ["127.0.0.1"]
    try:
        started = time.monotonic()
        results = await asyncio.gather(
            *(fetch(make_ctx(tmp_path), url="http://slow.test/", timeout=0.5) for _ in range(40)),
            return_exceptions=True,
        )
        assert all(isinstance(error, ToolError) for error in results), results
        assert time.monotonic() - started < 10
        assert await asyncio.wait_for(asyncio.to_thread(lambda: "free"), 5) == "free"
    finally:
        release.set()


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    """A certificate for ``name`` (its own CA) and its key, as PEM files."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


async def test_https_to_the_checked_address_still_verifies_the_name(
    tmp_path: Path, stub_dns: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection goes to the checked IP, but TLS is verified against the host name."""
    import ssl

    cert, key = _self_signed(tmp_path, "secure.test")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    httpd, hits = _serve("127.0.0.1")
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    port = httpd.server_address[1]
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    stub_dns.update({"secure.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    ctx = ruled_ctx(tmp_path, {"private_network": "allow"})
    try:
        result = await fetch(ctx, url=f"https://secure.test:{port}/x")
        assert result.output == f"secure.test:{port} /x" and hits == ["/x"]
        for url in (f"https://other.test:{port}/x", f"https://127.0.0.1:{port}/x"):
            with pytest.raises(ToolError, match="CERTIFICATE_VERIFY_FAILED|certificate"):
                await fetch(ctx, url=url)
        assert hits == ["/x"]
    finally:
        httpd.shutdown()
        httpd.server_close()

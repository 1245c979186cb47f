"""WebFetch's view of a URL: one spelling per address for the ``webfetch`` rules, and the
guard against fetching the machine's own network.

:func:`normalize_url` turns ``HTTP://LocalHost.:80/%7Ea/./b`` and ``http://127.1/`` into
the one form rules are matched against (lower-case scheme and host, IDNA host, numeric
IPv4 spellings as dotted quads, default ports and dot segments removed, unreserved
percent-escapes decoded, no user info, no fragment). :func:`resolve` gives every address
a host name resolves to; :func:`is_internal` says which of them are loopback, private,
link-local (cloud metadata at 169.254.169.254 included) or otherwise not public.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias
from urllib.parse import urlsplit


class InvalidURL(ValueError):
    """A URL that cannot be fetched (the message says why, in one line)."""


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_NUMERIC_HOST = re.compile(r"[0-9a-fA-FxX.]+")
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")


@dataclass(frozen=True)
class WebAddress:
    """A normalized http(s) URL, split for connecting to a checked address."""

    scheme: str
    host: str  # lower-case, IDNA; an IPv6 literal without brackets
    port: int
    target: str  # path and query, as sent in the request line

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.target}"

    def with_host(self, host: str) -> WebAddress:
        return WebAddress(self.scheme, host, self.port, self.target)

    def loose(self) -> WebAddress:
        """The address as a lenient server reads its path: every escape decoded (``%2F``
        too), backslashes as slashes, runs of slashes as one, dot segments removed again —
        so ``//secret``, ``/%2Fsecret`` or ``/a/..%2Fsecret`` meet a rule on ``/secret/*``."""
        from urllib.parse import unquote

        path, mark, query = self.target.partition("?")
        path = re.sub(r"/{2,}", "/", unquote(path).replace("\\", "/"))
        return WebAddress(self.scheme, self.host, self.port, _remove_dot_segments(path) + mark + query)

    def literal_ip(self) -> IPAddress | None:
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None

    def pinned_request(self, ip: str) -> tuple[str, dict[str, str], dict[str, object]]:
        """The URL, headers and httpx extensions that send this request to ``ip`` (a
        checked address) while the server, and TLS, still see the host name: a second
        lookup by the HTTP client could answer another address (DNS rebinding)."""
        host = f"[{ip}]" if ":" in ip else ip
        url = f"{self.scheme}://{host}:{self.port}{self.target}"
        return url, {"Host": self.netloc}, {"sni_hostname": self.host}

    def proxy(self) -> str | None:
        """The proxy the environment names for this URL (``HTTPS_PROXY``, ``ALL_PROXY``...
        less ``NO_PROXY``), None for none."""
        import urllib.request

        proxies = urllib.request.getproxies_environment()
        proxy = proxies.get(self.scheme) or proxies.get("all")
        bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]  # not in typeshed
        if not proxy or bypass(self.host, proxies):
            return None
        return proxy if "://" in proxy else f"http://{proxy}"

    def resolved_by_proxy(self, proxy: str | None) -> bool:
        """Whether ``proxy`` resolves this URL's name (then it is what reaches the network,
        and the name is not looked up here)."""
        return bool(proxy) and self.literal_ip() is None and self.host != "localhost"


def normalize_url(raw: str, base: str | None = None) -> WebAddress:
    """Parse and normalize an http(s) URL (relative to ``base`` for a redirect's
    ``Location``); :class:`InvalidURL` with a one-line reason when it cannot be fetched."""
    from urllib.parse import urljoin

    text = raw.strip()
    if base is not None:
        text = urljoin(base, text)
    if any(ord(char) < 0x20 or char == "\x7f" for char in text):
        raise InvalidURL(f"URL contains control characters: {raw!r}")
    try:
        parts = urlsplit(text)
        port_value = parts.port
    except ValueError as err:
        raise InvalidURL(f"Invalid URL {raw!r}: {err}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.netloc:
        raise InvalidURL(f"URL must start with http:// or https:// — got {raw!r}")
    if "@" in parts.netloc:
        raise InvalidURL(f"URLs with a user name or password are not fetched: {raw!r}")
    host = _host(parts.hostname or "", raw)
    port = port_value if port_value is not None else DEFAULT_PORTS[scheme]
    path = _normalize_path(parts.path or "/")
    query = _normalize_escapes(parts.query)
    target = path + (f"?{query}" if query else "")
    return WebAddress(scheme, host, port, target)


def _host(raw_host: str, url: str) -> str:
    """Lower-case, percent-decoded, IDNA, without a trailing dot; IP spellings canonical.
    A name must come out as letters, digits, ``-`` and ``_`` between dots: a NUL (which the
    resolver would cut the name at), a space or a slash smuggled in as ``%00``/``%20``/``%2F``
    is refused, not looked up."""
    host = _PERCENT.sub(lambda m: chr(int(m.group(1), 16)), raw_host).strip().lower().rstrip(".")
    if not host:
        raise InvalidURL(f"URL has no host: {url!r}")
    if ":" in host:  # IPv6 (urlsplit removed the brackets)
        try:
            address = ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise InvalidURL(f"Invalid IPv6 address in {url!r}") from None
        mapped = address.ipv4_mapped
        return str(mapped) if mapped is not None else address.compressed
    try:
        # IDNA first: full-width digits and dots ("１２７.１", "127。1") become ASCII.
        host = host.encode("idna").decode("ascii").lower().rstrip(".")
    except UnicodeError:
        raise InvalidURL(f"Invalid host name in {url!r}") from None
    if _NUMERIC_HOST.fullmatch(host):
        dotted = _ipv4(host)
        if dotted is not None:
            return dotted
    if not _HOST_NAME.fullmatch(host):
        raise InvalidURL(f"Invalid host name in {url!r}")
    return host


def _ipv4(host: str) -> str | None:
    """``127.1``, ``0x7f.1``, ``2130706433``, ``0177.0.0.1`` → ``127.0.0.1`` (the forms
    ``inet_aton`` and so browsers and curl accept); None for a name."""
    parts = host.split(".")
    if not 1 <= len(parts) <= 4:
        return None
    values: list[int] = []
    for part in parts:
        try:
            if part.lower().startswith("0x"):
                values.append(int(part[2:] or "0", 16))
            elif len(part) > 1 and part.startswith("0"):
                values.append(int(part, 8))
            else:
                values.append(int(part, 10))
        except ValueError:
            return None
    *head, last = values
    if any(value > 255 for value in head) or last >= 256 ** (5 - len(values)):
        return None
    number = 0
    for value in head:
        number = number * 256 + value
    number = number * 256 ** (5 - len(values)) + last
    return str(ipaddress.IPv4Address(number))


def _normalize_escapes(text: str) -> str:
    """Decode escapes of unreserved characters (``%7E`` → ``~``, ``%73`` → ``s``) and
    upper-case the others (``%2f`` → ``%2F``)."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else f"%{match.group(1).upper()}"

    return _PERCENT.sub(fix, text)


def _normalize_path(path: str) -> str:
    """Escapes normalized, then ``.`` and ``..`` segments removed (RFC 3986, 5.2.4)."""
    return _remove_dot_segments(_normalize_escapes(path))


def _remove_dot_segments(path: str) -> str:
    output: list[str] = []
    segments = path.split("/")
    for index, segment in enumerate(segments[1:], 1):
        last = index == len(segments) - 1
        if segment == ".":
            if last:
                output.append("")
            continue
        if segment == "..":
            if output:
                output.pop()
            if last:
                output.append("")
            continue
        output.append(segment)
    return "/" + "/".join(output)


# ---- addresses ------------------------------------------------------------------------


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
_SITE_LOCAL = ipaddress.IPv6Network("fec0::/10")


def is_internal(address: IPAddress) -> bool:
    """Not a public internet address: loopback, private, link-local, shared (CGNAT),
    multicast, reserved or unspecified — also an IPv6 address that carries an internal IPv4
    one to a translator or tunnel (``::ffff:127.0.0.1``, ``::127.0.0.1``, NAT64
    ``64:ff9b::7f00:1``, 6to4 ``2002:7f00:1::``), the local-use NAT64 prefix and the old
    site-local ``fec0::/10``."""
    if isinstance(address, ipaddress.IPv6Address):
        if address in _LOCAL_NAT64 or address in _SITE_LOCAL:
            return True
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            return is_internal(embedded)
    return not address.is_global or address.is_multicast


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv4-mapped, IPv4-compatible, NAT64 or 6to4 address reaches."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    value = int(address)
    if address in _NAT64 or (value >> 32 == 0 and value > 1):  # 64:ff9b::a.b.c.d, ::a.b.c.d
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


async def resolve(address: WebAddress, timeout: float) -> list[IPAddress]:
    """Every IP address ``address.host`` resolves to (just the literal for an IP)."""
    literal = address.literal_ip()
    if literal is not None:
        return [literal]
    try:
        async with asyncio.timeout(timeout):
            infos = await _getaddrinfo(address.host, address.port)
    except TimeoutError:
        raise InvalidURL(f"Could not resolve {address.host}: no answer within {timeout:g} s") from None
    except OSError as err:
        raise InvalidURL(f"Could not resolve {address.host}: {err.strerror or err}") from None
    found: list[IPAddress] = []
    for info in infos:
        host = str(info[4][0]).split("%", 1)[0]
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            continue
        if ip not in found:
            found.append(ip)
    if not found:
        raise InvalidURL(f"Could not resolve {address.host}")
    return found


#: One answer of ``socket.getaddrinfo``: family, type, protocol, canonical name, address.
AddrInfo: TypeAlias = tuple[
    socket.AddressFamily,
    socket.SocketKind,
    int,
    str,
    tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes],
]

#: Lookups that may wait for a resolver at once; more are refused until one ends.
MAX_LOOKUPS = 16
_lookups = threading.BoundedSemaphore(MAX_LOOKUPS)


async def _getaddrinfo(host: str, port: int) -> Sequence[AddrInfo]:
    """``socket.getaddrinfo`` in a daemon thread of its own. Not the loop's executor: a
    name whose resolver never answers would hold one of its few threads for the resolver's
    whole timeout, and enough of them stalled every ``to_thread`` (file tools, the TUI)
    and the exit, which waits for that executor."""
    if not _lookups.acquire(blocking=False):
        raise InvalidURL(f"Could not resolve {host}: {MAX_LOOKUPS} lookups are still waiting for an answer")
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Sequence[AddrInfo]] = loop.create_future()

    def settle(result: Sequence[AddrInfo] | None, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result or [])

    def work() -> None:
        result: Sequence[AddrInfo] | None = None
        error: BaseException | None = None
        try:
            result = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except BaseException as err:  # noqa: BLE001 - handed to the awaiting task
            error = err
        finally:
            _lookups.release()
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"etcode-dns {host}", daemon=True).start()
    return await future

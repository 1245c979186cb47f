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
import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit


class InvalidURL(ValueError):
    """A URL that cannot be fetched (the message says why, in one line)."""


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_NUMERIC_HOST = re.compile(r"[0-9a-fA-FxX.]+")


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

    def literal_ip(self) -> IPAddress | None:
        try:
            return ipaddress.ip_address(self.host)
        except ValueError:
            return None


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
    """Lower-case, percent-decoded, IDNA, without a trailing dot; IP spellings canonical."""
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
    if _NUMERIC_HOST.fullmatch(host) and not host.endswith("."):
        dotted = _ipv4(host)
        if dotted is not None:
            return dotted
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        raise InvalidURL(f"Invalid host name in {url!r}") from None


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
    path = _normalize_escapes(path)
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


def is_internal(address: IPAddress) -> bool:
    """Not a public internet address: loopback, private, link-local, shared (CGNAT),
    multicast, reserved or unspecified."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global or address.is_multicast


async def resolve(address: WebAddress, timeout: float) -> list[IPAddress]:
    """Every IP address ``address.host`` resolves to (just the literal for an IP)."""
    literal = address.literal_ip()
    if literal is not None:
        return [literal]
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout):
            infos = await loop.getaddrinfo(address.host, address.port, type=socket.SOCK_STREAM)
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

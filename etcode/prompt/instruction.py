"""The instruction layer: AGENTS.md-style files and URLs, and nested AGENTS.md reminders.

Order of the parts: global file, project files (outermost first), config-listed files,
config-listed URLs. Every path is resolved and loaded once. Failures (an unreadable file,
a URL that fails or is slow) become warnings, never errors.
"""

from __future__ import annotations

import asyncio
import glob
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.prompt.parts import PromptPart
from etcode.util.json_types import JsonValue
from etcode.util.paths import folders_between

if TYPE_CHECKING:
    import httpx

    from etcode.security.web_address import IPAddress, WebAddress

#: ``(address, its internal IPs) -> allowed?``: may an instruction URL reach this machine.
InternalCheck = Callable[["WebAddress", "Sequence[IPAddress]"], bool]

logger = logging.getLogger("etcode.prompt")

PROJECT_FILES = ("AGENTS.md", "ETCODE.md")
COMPAT_FILE = "CLAUDE.md"
GLOBAL_FILE = "AGENTS.md"
URL_TIMEOUT = 5.0
_GLOB_CHARS = frozenset("*?[")


def default_global_dir() -> Path:
    """``$XDG_CONFIG_HOME/etcode``, else ``~/.config/etcode``."""
    try:
        from etcode.util.paths import config_dir
    except ImportError:  # pragma: no cover - the util module is optional here
        xdg = os.environ.get("XDG_CONFIG_HOME", "")
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
        return base / "etcode"
    return config_dir()


def level_files(folder: Path, compat: bool) -> list[Path]:
    """The instruction files of one folder: AGENTS.md and ETCODE.md; CLAUDE.md only when
    neither exists and ``compat`` is on."""
    found = [folder / name for name in PROJECT_FILES if (folder / name).is_file()]
    if not found and compat and (folder / COMPAT_FILE).is_file():
        found.append(folder / COMPAT_FILE)
    return found


def is_url(entry: str) -> bool:
    return entry.startswith(("http://", "https://"))


def part(source: str, content: str) -> PromptPart:
    """An instruction part: ``Instructions from: <source>`` then the content."""
    return PromptPart("instructions", source, f"Instructions from: {source}\n{content.strip()}")


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


class InstructionPrompt:
    """Discovery and loading of one session's instructions.

    ``directory``/``worktree``: the instance's working directory and git root.
    ``instructions``: config entries (paths, globs, ``~/`` paths, URLs).
    ``compat``: CLAUDE.md fallback. ``global_dir``: the etcode config folder.
    ``url_timeout``: seconds per URL. Warnings collect in :attr:`warnings`.
    ``trusted``: the user trusted the project for this session: files it holds through a
    link out of the project are sent too (``prompt/project_files.py``; else skipped).
    ``internal_allowed(url, addresses)``: may an instruction URL reach this machine or its
    network (the ``private_network`` rules); None: never.
    """

    def __init__(
        self,
        directory: str | Path,
        worktree: str | Path | None = None,
        instructions: Sequence[str] = (),
        compat: bool = True,
        global_dir: str | Path | None = None,
        url_timeout: float = URL_TIMEOUT,
        trusted: bool = False,
        internal_allowed: InternalCheck | None = None,
    ) -> None:
        self.directory = Path(directory).expanduser().resolve()
        self.worktree = Path(worktree).expanduser().resolve() if worktree else self.directory
        self.instructions = list(instructions)
        self.compat = compat
        self.global_dir = Path(global_dir).expanduser() if global_dir else default_global_dir()
        self.url_timeout = url_timeout
        self.trusted = trusted
        self.internal_allowed = internal_allowed
        #: Warnings of the last :meth:`system` (and of the hooks run by ``SystemPrompt.build``).
        self.warnings: list[str] = []
        self._taken = 0
        self._parts: list[PromptPart] | None = None
        self._loaded: set[Path] = set()
        self._claimed: set[Path] = set()

    # ---- discovery ---------------------------------------------------------------------
    def global_files(self) -> list[Path]:
        path = self.global_dir / GLOBAL_FILE
        return [path] if path.is_file() else []

    def project_files(self) -> list[Path]:
        """Instruction files from the worktree root down to the working directory."""
        files: list[Path] = []
        for folder in folders_between(self.directory, self.worktree):
            files.extend(level_files(folder, self.compat))
        return files

    def config_entries(self) -> tuple[list[Path], list[str]]:
        """Config-listed files (globs expanded, sorted) and URLs, in listed order."""
        files: list[Path] = []
        urls: list[str] = []
        for entry in self.instructions:
            entry = entry.strip()
            if not entry:
                continue
            if is_url(entry):
                urls.append(entry)
                continue
            pattern = os.path.expanduser(entry)
            if not os.path.isabs(pattern):
                pattern = str(self.worktree / pattern)
            if _GLOB_CHARS & set(pattern):
                files.extend(sorted(Path(p) for p in glob.glob(pattern, recursive=True) if os.path.isfile(p)))
            elif os.path.isfile(pattern):
                files.append(Path(pattern))
            else:
                self.warnings.append(f"instruction file not found: {entry}")
        return files, urls

    # ---- the layer ---------------------------------------------------------------------
    async def system(self, refresh: bool = False) -> list[PromptPart]:
        """The instruction parts (computed once per instance unless ``refresh``)."""
        if self._parts is not None and not refresh:
            return list(self._parts)
        self.warnings, self._taken = [], 0
        config_files, urls = self.config_entries()
        project = await asyncio.to_thread(self._sendable, [*self.project_files(), *config_files])
        paths = _unique_resolved([*self.global_files(), *project])
        self._loaded = set(paths)
        texts, fetched = await asyncio.gather(
            asyncio.gather(*(asyncio.to_thread(_read, p) for p in paths), return_exceptions=True),
            fetch_urls(list(dict.fromkeys(urls)), self.url_timeout, self.internal_allowed),
        )
        parts: list[PromptPart] = []
        for path, text in zip(paths, texts, strict=True):
            if isinstance(text, BaseException):
                self.warnings.append(f"could not read instructions {path}: {text}")
            elif text.strip():
                parts.append(part(str(path), text))
        for url, text, error in fetched:
            if error is not None:
                self.warnings.append(f"could not fetch instructions {url}: {error}")
            elif text.strip():
                parts.append(part(url, text))
        for message in self.warnings:
            logger.debug("%s", message)
        self._parts = parts
        return list(parts)

    def _sendable(self, files: Sequence[Path]) -> list[Path]:
        """``files`` without those a project holds through a link out of it (each skipped
        with a warning), unless the project is trusted."""
        if self.trusted:
            return list(files)
        from etcode.prompt.project_files import refusal, skip_warning

        kept: list[Path] = []
        for file in files:
            reason = refusal(file, self.worktree)
            if reason is None:
                kept.append(file)
            else:
                self.warnings.append(skip_warning("instructions", file, reason))
                logger.warning("%s", self.warnings[-1])
        return kept

    def take_warnings(self) -> list[str]:
        """The warnings not taken before (so each is reported once); :attr:`warnings`
        keeps them all."""
        fresh = self.warnings[self._taken :]
        self._taken = len(self.warnings)
        return fresh

    # ---- nested instructions -----------------------------------------------------------
    async def nested_for(self, path: str | Path) -> str | None:
        """For a file a read tool just opened: the instruction files of its folders below
        the working directory (or elsewhere in the worktree) that are not in the system
        prompt, each inside ``<system-reminder>``, once per session; else None."""
        target = Path(path).expanduser()
        if not target.is_absolute():
            target = self.directory / target
        target = target.resolve()
        start = target if target.is_dir() else target.parent
        if start != self.worktree and self.worktree not in start.parents:
            return None
        covered = {self.directory, *self.directory.parents}
        found: list[Path] = []
        for folder in folders_between(start, self.worktree):
            if folder in covered:
                continue
            for file in level_files(folder, self.compat):
                resolved = file.resolve()
                if resolved not in self._loaded and resolved not in self._claimed:
                    self._claimed.add(resolved)
                    found.append(file)
        # a linked file is skipped (the warning joins :attr:`warnings`, logged)
        found = [p.resolve() for p in await asyncio.to_thread(self._sendable, found)]
        if not found:
            return None
        texts = await asyncio.gather(*(asyncio.to_thread(_read, p) for p in found), return_exceptions=True)
        blocks = [
            f"<system-reminder>Instructions from: {p}\n{t.strip()}</system-reminder>"
            for p, t in zip(found, texts, strict=True)
            if isinstance(t, str) and t.strip()
        ]
        return "\n".join(blocks) or None


def _unique_resolved(paths: Iterable[Path]) -> list[Path]:
    seen: dict[Path, None] = {}
    for path in paths:
        seen.setdefault(path.resolve(), None)
    return list(seen)


async def fetch_urls(
    urls: Sequence[str], timeout: float = URL_TIMEOUT, internal_allowed: InternalCheck | None = None
) -> list[tuple[str, str, str | None]]:
    """Fetch ``urls`` concurrently; ``(url, text, error)`` each, ``error`` None on success.
    Each URL gets ``timeout`` seconds in total; failures never raise. No hop (the URL, each
    redirect) reaches this machine or its network (loopback, private ranges, link-local:
    169.254.169.254...) unless ``internal_allowed`` says so (WebFetch's private-network check)."""
    if not urls:
        return []
    import httpx

    clients: dict[str | None, httpx.AsyncClient] = {}

    def client_for(proxy: str | None) -> httpx.AsyncClient:
        """One client per proxy (None: none) for every URL: loading the certificates is slow."""
        if proxy not in clients:
            transport = httpx.AsyncHTTPTransport(proxy=proxy)
            clients[proxy] = httpx.AsyncClient(transport=transport, timeout=timeout, trust_env=False)
        return clients[proxy]

    async def one(url: str) -> tuple[str, str, str | None]:
        try:
            response = await asyncio.wait_for(
                _get_following(url, timeout, client_for, internal_allowed), timeout
            )
        except TimeoutError:
            return url, "", f"timed out after {timeout:g} s"
        except InternalAddress as err:
            return url, "", str(err)
        except Exception as err:  # a bad URL must never break the prompt
            return url, "", f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        if response.status_code >= 400:
            return url, "", f"HTTP {response.status_code}"
        return url, response.text, None

    try:
        return list(await asyncio.gather(*(one(url) for url in urls)))
    finally:
        for client in clients.values():
            await client.aclose()


MAX_REDIRECTS = 5


class InternalAddress(ValueError):
    """An instruction URL (or a redirect) leads to this machine or its network."""


async def _get_following(
    url: str,
    timeout: float,
    client_for: Callable[[str | None], httpx.AsyncClient],
    internal_allowed: InternalCheck | None = None,
) -> httpx.Response:
    """GET ``url``, following redirects; a hop to an internal address (loopback, private,
    link-local) is refused unless ``internal_allowed`` allows it, and each hop is fetched
    from the address that was checked (or through the proxy the environment names, which
    resolves the name), as WebFetch does."""
    from etcode.security.web_address import is_internal, normalize_url, resolve

    address = normalize_url(url)
    for hop in range(MAX_REDIRECTS + 1):
        proxy = address.proxy()
        ips = [] if address.resolved_by_proxy(proxy) else await resolve(address, timeout)
        internal = [ip for ip in ips if is_internal(ip)]
        if internal and (internal_allowed is None or not internal_allowed(address, internal)):
            how = "redirected to " if hop else ""
            shown = ", ".join(str(ip) for ip in internal)
            raise InternalAddress(
                f"{how}{address.host}, an address on this machine or its network ({shown}): not fetched "
                f'(allow it with a "private_network" rule in your own config)'
            )
        target, headers, extensions = address.pinned_request(str(ips[0])) if ips else (address.url, {}, {})
        response = await client_for(proxy).get(target, headers=headers, extensions=extensions)
        location = response.headers.get("location")
        if response.status_code not in (301, 302, 303, 307, 308) or not location:
            return response
        address = normalize_url(location, base=address.url)
    raise ValueError(f"more than {MAX_REDIRECTS} redirects")


def rules_internal_check(
    permission: JsonValue, permission_files: Sequence[tuple[str, JsonValue]] = ()
) -> InternalCheck:
    """The ``private_network`` rules of a config (``config.permission`` and each file's, as the
    session's) as an :data:`InternalCheck`: an instruction URL may reach this machine when a
    rule allows it (the URL as named, or at one of its addresses) and none denies it; nobody
    is asked while the prompt is built, so "ask" (the default) refuses."""
    from etcode.permission.rules import evaluate, rules_from_config

    rules = rules_from_config(permission, None, permission_files)

    def allowed(address: WebAddress, internal: Sequence[IPAddress]) -> bool:
        spellings = [address.url, *(address.with_host(str(ip)).url for ip in internal)]
        actions = {evaluate(rules, "private_network", text).action for text in dict.fromkeys(spellings)}
        return "allow" in actions and "deny" not in actions

    return allowed

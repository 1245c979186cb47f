"""The instruction layer: discovery rules, config entries, URLs, nested AGENTS.md."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from etcode.prompt.instruction import InstructionPrompt, default_global_dir, rules_internal_check
from tests.http_support import serving


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def sources(parts: list) -> list[str | None]:  # type: ignore[type-arg]
    return [p.source for p in parts]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """tmp/outside/AGENTS.md (above the git root), tmp/outside/repo/.git, nested levels."""
    outside = tmp_path / "outside"
    write(outside / "AGENTS.md", "ABOVE THE GIT ROOT")
    root = outside / "repo"
    (root / ".git").mkdir(parents=True)
    write(root / "AGENTS.md", "root rules")
    write(root / "packages" / "AGENTS.md", "packages rules")
    write(root / "packages" / "ETCODE.md", "packages etcode rules")
    write(root / "packages" / "CLAUDE.md", "ignored: the level has AGENTS.md")
    write(root / "packages" / "app" / "CLAUDE.md", "app claude rules")
    write(root / "packages" / "app" / "src" / "AGENTS.md", "src rules")
    return root


#: The test servers listen on 127.0.0.1: a user's rule lets instruction URLs reach them (as
#: WebFetch's tests do); without one an address on this machine is refused (issue 27.9).
LOOPBACK_OK = rules_internal_check({"private_network": {"http://127.0.0.1:*": "allow"}})


def prompt(directory: Path, worktree: Path, tmp_path: Path, **kwargs) -> InstructionPrompt:  # type: ignore[no-untyped-def]
    kwargs.setdefault("global_dir", tmp_path / "global")
    kwargs.setdefault("internal_allowed", LOOPBACK_OK)
    return InstructionPrompt(directory, worktree, **kwargs)


async def test_monorepo_all_ancestors_outermost_first(repo: Path, tmp_path: Path) -> None:
    app = repo / "packages" / "app"
    parts = await prompt(app, repo, tmp_path).system()
    assert sources(parts) == [
        str(repo / "AGENTS.md"),
        str(repo / "packages" / "AGENTS.md"),
        str(repo / "packages" / "ETCODE.md"),
        str(app / "CLAUDE.md"),
    ]
    assert parts[0].layer == "instructions"
    assert parts[0].text == f"Instructions from: {repo / 'AGENTS.md'}\nroot rules"
    assert all("ABOVE THE GIT ROOT" not in p.text for p in parts)
    assert all("ignored" not in p.text for p in parts)
    # src/AGENTS.md is below the working directory: not in the system prompt
    assert all("src rules" not in p.text for p in parts)


async def test_claude_md_compat_off(repo: Path, tmp_path: Path) -> None:
    parts = await prompt(repo / "packages" / "app", repo, tmp_path, compat=False).system()
    assert str(repo / "packages" / "app" / "CLAUDE.md") not in sources(parts)
    assert len(parts) == 3


async def test_not_a_git_repo_reads_only_the_directory(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "parent")
    here = tmp_path / "work"
    write(here / "ETCODE.md", "here")
    parts = await prompt(here, here, tmp_path).system()
    assert sources(parts) == [str(here / "ETCODE.md")]


async def test_global_file_comes_first(repo: Path, tmp_path: Path) -> None:
    write(tmp_path / "global" / "AGENTS.md", "global rules")
    parts = await prompt(repo, repo, tmp_path).system()
    assert sources(parts) == [str(tmp_path / "global" / "AGENTS.md"), str(repo / "AGENTS.md")]


def test_default_global_dir_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    assert default_global_dir() == tmp_path / "xdg" / "etcode"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_global_dir() == tmp_path / "home" / ".config" / "etcode"


async def test_global_dir_default_from_environment(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    write(tmp_path / "xdg" / "etcode" / "AGENTS.md", "xdg global")
    parts = await InstructionPrompt(repo, repo).system()
    assert parts[0].source == str(tmp_path / "xdg" / "etcode" / "AGENTS.md")


async def test_config_entries_paths_globs_home_and_duplicates(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    write(home / "rules" / "personal.md", "personal")
    write(repo / "docs" / "style.md", "style")
    write(repo / "docs" / "testing.md", "testing")
    absolute = write(tmp_path / "elsewhere" / "abs.md", "absolute")
    write(tmp_path / "global" / "AGENTS.md", "global")
    directory = repo / "packages"
    ip = prompt(
        directory,
        repo,
        tmp_path,
        instructions=[
            "docs/testing.md",  # relative to the worktree, not the working directory
            "docs/*.md",  # glob: testing.md again (loaded once) and style.md
            str(absolute),
            "~/rules/personal.md",
            "AGENTS.md",  # already a project file
            str(tmp_path / "global" / "AGENTS.md"),  # already the global file
            "docs/nope.md",
        ],
    )
    parts = await ip.system()
    assert sources(parts) == [
        str(tmp_path / "global" / "AGENTS.md"),
        str(repo / "AGENTS.md"),
        str(directory / "AGENTS.md"),
        str(directory / "ETCODE.md"),
        str(repo / "docs" / "testing.md"),
        str(repo / "docs" / "style.md"),
        str(absolute),
        str(home / "rules" / "personal.md"),
    ]
    assert ip.warnings == ["instruction file not found: docs/nope.md"]


async def test_symlinked_duplicate_loads_once(repo: Path, tmp_path: Path) -> None:
    (repo / "link.md").symlink_to(repo / "AGENTS.md")
    parts = await prompt(repo, repo, tmp_path, instructions=["link.md", "./AGENTS.md"]).system()
    assert sources(parts) == [str(repo / "AGENTS.md")]


# ---- URLs ---------------------------------------------------------------------------


#: When each ``/hang`` request reached the server (``time.monotonic()``).
HANG_ARRIVALS: list[float] = []


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        if path == "/hang":
            HANG_ARRIVALS.append(time.monotonic())
            time.sleep(3)
        if path in ("/ok", "/other", "/hang"):
            body = f"remote rules from {self.path}".encode()
            self.send_response(200)
        else:
            body = b"not found"
            self.send_response(404)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    with serving(_Handler) as url:
        yield url


async def test_urls_ok_404_and_hang(repo: Path, tmp_path: Path, server: str) -> None:
    write(repo / "docs" / "a.md", "file entry")
    ip = prompt(
        repo,
        repo,
        tmp_path,
        instructions=[f"{server}/ok", f"{server}/missing", f"{server}/hang", "docs/a.md", f"{server}/ok"],
        url_timeout=0.5,
    )
    started = time.perf_counter()
    parts = await ip.system()
    elapsed = time.perf_counter() - started
    assert elapsed < 2.0  # the hanging URL is cut at the timeout, not awaited
    assert sources(parts) == [str(repo / "AGENTS.md"), str(repo / "docs" / "a.md"), f"{server}/ok"]
    assert parts[-1].text == f"Instructions from: {server}/ok\nremote rules from /ok"
    assert len(ip.warnings) == 2
    assert f"{server}/missing: HTTP 404" in ip.warnings[0]
    assert f"{server}/hang: timed out after 0.5 s" in ip.warnings[1]


async def test_urls_fetched_concurrently(repo: Path, tmp_path: Path, server: str) -> None:
    HANG_ARRIVALS.clear()
    ip = prompt(repo, repo, tmp_path, instructions=[f"{server}/hang?{i}" for i in range(3)], url_timeout=1.5)
    await ip.system()
    assert len(ip.warnings) == 3 and all("timed out after 1.5 s" in w for w in ip.warnings), ip.warnings
    # One after another, each request would reach the server a whole timeout (1.5 s) after the
    # one before; together they arrive at once (half the timeout is a 5x margin on a loaded box
    # over the few ms it takes).
    assert len(HANG_ARRIVALS) == 3 and max(HANG_ARRIVALS) - min(HANG_ARRIVALS) < 0.75, HANG_ARRIVALS


async def test_unreachable_url_is_a_warning(repo: Path, tmp_path: Path) -> None:
    ip = prompt(repo, repo, tmp_path, instructions=["http://127.0.0.1:9/rules.md"], url_timeout=1)
    parts = await ip.system()
    assert sources(parts) == [str(repo / "AGENTS.md")]
    assert ip.warnings and ip.warnings[0].startswith(
        "could not fetch instructions http://127.0.0.1:9/rules.md"
    )


async def test_system_is_cached_and_warnings_taken_once(repo: Path, tmp_path: Path) -> None:
    ip = prompt(repo, repo, tmp_path, instructions=["nope.md"])
    first = await ip.system()
    write(repo / "AGENTS.md", "changed")
    assert await ip.system() == first
    assert ip.take_warnings() == ["instruction file not found: nope.md"]
    assert ip.take_warnings() == []
    assert ip.warnings == ["instruction file not found: nope.md"]  # kept for later readers
    refreshed = await ip.system(refresh=True)
    assert refreshed[0].text.endswith("changed")


# ---- nested instructions -------------------------------------------------------------


async def test_nested_for_once_per_session(repo: Path, tmp_path: Path) -> None:
    ip = prompt(repo, repo, tmp_path)
    await ip.system()
    target = write(repo / "packages" / "app" / "src" / "main.py", "print()")
    text = await ip.nested_for(target)
    assert text == (
        f"<system-reminder>Instructions from: {repo / 'packages' / 'AGENTS.md'}\npackages rules</system-reminder>\n"
        f"<system-reminder>Instructions from: {repo / 'packages' / 'ETCODE.md'}\npackages etcode rules"
        "</system-reminder>\n"
        f"<system-reminder>Instructions from: {repo / 'packages' / 'app' / 'CLAUDE.md'}\napp claude rules"
        "</system-reminder>\n"
        f"<system-reminder>Instructions from: {repo / 'packages' / 'app' / 'src' / 'AGENTS.md'}\nsrc rules"
        "</system-reminder>"
    )
    assert await ip.nested_for(target) is None
    assert await ip.nested_for(repo / "packages" / "app" / "src" / "other.py") is None


async def test_nested_for_skips_system_prompt_files(repo: Path, tmp_path: Path) -> None:
    app = repo / "packages" / "app"
    ip = prompt(app, repo, tmp_path, instructions=[str(app / "src" / "AGENTS.md")])
    assert await ip.nested_for(repo / "README.md") is None  # the worktree root is covered
    assert await ip.nested_for(app / "x.py") is None  # the working directory is covered
    await ip.system()
    assert await ip.nested_for(app / "src" / "main.py") is None  # listed in config
    assert await ip.nested_for(tmp_path / "outside" / "x.py") is None  # outside the worktree


async def test_nested_for_relative_path_and_compat(repo: Path, tmp_path: Path) -> None:
    ip = prompt(repo, repo, tmp_path, compat=False)
    text = await ip.nested_for("packages/app/main.py")
    assert text is not None and "packages rules" in text and "app claude rules" not in text


async def test_nested_for_concurrent_calls_claim_once(repo: Path, tmp_path: Path) -> None:
    import asyncio

    ip = prompt(repo, repo, tmp_path)
    results = await asyncio.gather(*(ip.nested_for(repo / "packages" / f"f{i}.py") for i in range(5)))
    assert sum(1 for r in results if r) == 1


class _Redirecting(_Handler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).hits.append(self.path)
        if self.path.startswith("/to?u="):
            self.send_response(302)
            self.send_header("Location", self.path.split("=", 1)[1])
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            super().do_GET()


async def test_a_public_url_cannot_redirect_into_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A project's instruction URL that redirects to 169.254.169.254 or localhost is refused
    (issue 12): here 127.0.0.2 plays the public server, 127.0.0.1 the machine itself."""
    import ipaddress

    from etcode.prompt.instruction import fetch_urls
    from etcode.security import web_address

    real = web_address.is_internal
    public = ipaddress.ip_address("127.0.0.2")
    monkeypatch.setattr(web_address, "is_internal", lambda ip: ip != public and real(ip))
    outside_hits: list[str] = []
    inside_hits: list[str] = []
    servers = [
        ThreadingHTTPServer((host, 0), type("Handler", (_Redirecting,), {"hits": hits}))
        for host, hits in (("127.0.0.2", outside_hits), ("127.0.0.1", inside_hits))
    ]
    for httpd in servers:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
    outside, inside = (f"http://{h.server_address[0]}:{h.server_address[1]}" for h in servers)
    try:
        results = await fetch_urls([f"{outside}/to?u={inside}/ok", f"{outside}/to?u={outside}/ok"])
    finally:
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()
    (_, _, refused), (_, text, fine) = results
    assert refused is not None and "an address on this machine or its network" in refused
    assert fine is None and text == "remote rules from /ok"
    assert inside_hits == []  # the machine's own server got no request
    assert sorted(outside_hits) == sorted([f"/to?u={inside}/ok", f"/to?u={outside}/ok", "/ok"])  # concurrent

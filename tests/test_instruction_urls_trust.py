"""Issue 27.9: instruction URLs. A project's ``instructions`` URL is fetched at start and its
answer put in the system prompt: it needs trust. And every instruction URL (the user's
too) gets WebFetch's private-network check before any request: this machine, its network
and the cloud metadata address (169.254.169.254) are refused, in any spelling, unless a
``private_network`` rule of the user's allows the address."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from etcode.prompt.instruction import fetch_urls, rules_internal_check
from etcode.util.paths import config_dir
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import FakeLLM, Reply
from tests.http_support import QuietServer, serving, stub_dns
from tests.project_support import git_init
from tests.require import missing

METADATA_PATH = "/latest/meta-data/iam/security-credentials/role"
CREDENTIAL = "AKIAFAKECLOUDCREDENTIAL"


class _Metadata(BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802
        type(self).hits.append(self.path)
        body = json.dumps({"AccessKeyId": CREDENTIAL}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def metadata() -> Iterator[tuple[str, list[str]]]:
    """A fake cloud metadata service on 127.0.0.1: its base URL and the paths it was asked."""
    hits: list[str] = []
    with serving(type("Handler", (_Metadata,), {"hits": hits})) as url:
        yield url, hits


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_init(tmp_path / "cloned")


def user_config(data: dict) -> None:
    config_dir().mkdir(parents=True, exist_ok=True)
    (config_dir() / "etcode.json").write_text(json.dumps(data), encoding="utf-8")


def test_a_project_instruction_url_is_refused_without_trust(
    repo: Path, llm: FakeLLM, metadata: tuple[str, list[str]]
) -> None:
    base, hits = metadata
    url = base + METADATA_PATH
    write_config(repo, llm, instructions=[url])
    llm.script(Reply(text="hello"))
    proc = etcode("run", "hi", cwd=repo)
    assert proc.returncode == 1, proc.stderr
    assert hits == [] and llm.requests == []
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"error: untrusted project config {repo / 'etcode.json'}")
    assert (
        f"  - instructions[0] fetches {url} when a session starts and sends the answer to the model" in lines
    )
    assert "Traceback" not in proc.stderr

    # trusted, the URL still meets the private-network check: this machine is not fetched
    proc = etcode("run", "--trust", "hi", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert hits == []
    assert CREDENTIAL not in json.dumps(llm.requests[0].body)
    assert f"could not fetch instructions {url}: 127.0.0.1, an address on this machine or its network" in (
        proc.stderr
    )


def test_a_users_loopback_instruction_url_is_refused_unless_a_rule_allows_it(
    repo: Path, llm: FakeLLM, metadata: tuple[str, list[str]]
) -> None:
    base, hits = metadata
    url = base + METADATA_PATH
    user_config({"instructions": [url]})
    write_config(repo, llm)
    llm.script(Reply(text="hello"), Reply(text="again"))
    proc = etcode("run", "hi", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert hits == [] and CREDENTIAL not in json.dumps(llm.requests[0].body)
    (line,) = [line for line in proc.stderr.splitlines() if "could not fetch instructions" in line]
    assert line.endswith(
        f"could not fetch instructions {url}: 127.0.0.1, an address on this machine or its network "
        '(127.0.0.1): not fetched (allow it with a "private_network" rule in your own config)'
    )

    user_config({"instructions": [url], "permission": {"private_network": {f"{base}/*": "allow"}}})
    proc = etcode("run", "hi", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert hits == [METADATA_PATH]
    assert CREDENTIAL in json.dumps(llm.requests[1].body)  # the user asked for it


async def test_every_spelling_of_this_machine_is_refused(metadata: tuple[str, list[str]]) -> None:
    base, hits = metadata
    port = base.rsplit(":", 1)[1]
    urls = [
        f"http://localhost:{port}/a",
        f"http://2130706433:{port}/b",
        f"http://0x7f.1:{port}/c",
        f"http://127.1:{port}/d",
        f"http://[::ffff:127.0.0.1]:{port}/e",
        f"http://[::1]:{port}/f",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00::1]/g",
        "http://10.1.2.3/h",
    ]
    results = await fetch_urls(urls, timeout=5)
    for url, text, error in results:
        assert text == "" and error is not None and "an address on this machine or its network" in error, url
    assert hits == []
    # a rule for one address opens that one only, and a deny wins
    only = rules_internal_check({"private_network": {f"http://127.0.0.1:{port}/ok*": "allow"}})
    results = await fetch_urls([f"http://localhost:{port}/ok", f"http://127.0.0.1:{port}/other"], 5, only)
    assert [error is None for _, _, error in results] == [True, False]
    denied = rules_internal_check({"private_network": {"*": "allow", "http://localhost:*": "deny"}})
    results = await fetch_urls([f"http://localhost:{port}/ok"], 5, denied)
    assert results[0][2] is not None
    assert hits == ["/ok"]


async def test_an_instruction_url_is_fetched_from_the_address_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the name answers 127.0.0.1 when it is checked (allowed by a rule) and
    127.0.0.2 afterwards; the request still goes to the address that was checked, not to a
    second lookup's answer."""
    answers = stub_dns(monkeypatch)
    hits: dict[str, list[str]] = {"127.0.0.1": [], "127.0.0.2": []}
    first = QuietServer(("127.0.0.1", 0), type("Handler", (_Metadata,), {"hits": hits["127.0.0.1"]}))
    port = first.server_address[1]
    try:
        second = QuietServer(("127.0.0.2", port), type("Handler", (_Metadata,), {"hits": hits["127.0.0.2"]}))
    except OSError:
        first.server_close()
        missing("loopback", "127.0.0.2 cannot be bound here")
    servers = [first, second]
    for httpd in servers:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        answers["rebind.test"] = ["127.0.0.1", "127.0.0.2"]
        allowed = rules_internal_check({"private_network": {f"http://rebind.test:{port}/*": "allow"}})
        [(_, text, error)] = await fetch_urls([f"http://rebind.test:{port}/guide"], 5, allowed)
        assert error is None and CREDENTIAL in text
        assert hits == {"127.0.0.1": ["/guide"], "127.0.0.2": []}
    finally:
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()


def test_debug_prompt_leaves_out_an_untrusted_projects_instruction_url(
    repo: Path, llm: FakeLLM, metadata: tuple[str, list[str]]
) -> None:
    """``etcode debug prompt`` builds the prompt a run would send: a project's instruction URL
    that is not trusted is not fetched there either (even where the user's own rules open
    the address), and the warning names the setting."""
    base, hits = metadata
    user_config({"permission": {"private_network": {f"{base}/*": "allow"}}})
    write_config(repo, llm, instructions=[base + METADATA_PATH])
    proc = etcode("debug", "prompt", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert hits == [] and CREDENTIAL not in proc.stdout
    assert (
        "warning: left out, not trusted: instructions[0] (`etcode run --trust` approves them)" in proc.stderr
    )
    llm.script(Reply(text="trusted"))
    assert etcode("run", "--trust", "hi", cwd=repo).returncode == 0  # approved and remembered
    proc = etcode("debug", "prompt", cwd=repo)
    assert hits == [METADATA_PATH] * 2 and CREDENTIAL in proc.stdout

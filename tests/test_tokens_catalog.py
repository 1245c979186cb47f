"""Token counts (tiktoken or the offline estimate), the model catalog, and cost arithmetic."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from etcode.engine.context import ContextBudget, ContextMeter, TokenEstimator
from etcode.provider.catalog import ModelCatalog, ModelPrice, cost_of
from etcode.provider.types import Usage
from etcode.util import tokens
from etcode.util.paths import cache_dir
from tests.conftest import SHARED_TIKTOKEN
from tests.fake_llm import FakeLLM, Reply
from tests.require import needs

needs_tiktoken_files = needs(
    "tiktoken", not SHARED_TIKTOKEN.is_dir(), f"no cached tiktoken files in {SHARED_TIKTOKEN}"
)


@pytest.fixture(autouse=True)
def fresh_encodings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_encodings", {})


# ---- tokens -------------------------------------------------------------------------


@needs_tiktoken_files
def test_exact_counts_with_the_cached_encodings() -> None:
    assert tokens.tokenizer_for("openai/gpt-4o") == "o200k_base"
    assert tokens.tokenizer_for("anthropic/claude-sonnet-4") == "cl100k_base"
    assert tokens.count_tokens("hello world", "gpt-4o") == 2
    assert tokens.count_tokens("hello world", "claude-sonnet-4") == 2
    assert tokens.count_tokens("", "gpt-4o") == 0


@needs_tiktoken_files
def test_long_and_pathological_texts_do_not_crash() -> None:
    text = "def f(x):\n    return x * 2\n" * 20_000  # 540 KB: counted from samples
    exact = tokens.count_tokens(text, "gpt-4o", exact=True)
    assert abs(exact - 11 * 20_000) < 20_000 * 0.1
    assert abs(tokens.count_tokens(text, "gpt-4o") - exact) < exact * 0.02
    assert tokens.count_tokens(" " * 1_000_000, "gpt-4o") > 0  # tiktoken alone overflows its stack
    assert tokens.count_tokens("a" * 200_000, "gpt-4o") > 0


@pytest.fixture
def file_server(tmp_path: Path):
    """A local HTTP server for ``tmp_path / "served"`` (the encodings' stand-in origin)."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    root = tmp_path / "served"
    root.mkdir()

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _fetch_from(monkeypatch: pytest.MonkeyPatch, cache: Path, url: str) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    monkeypatch.setenv("ETCODE_TOKENIZER_DOWNLOAD", "1")
    monkeypatch.setattr(tokens, "_fetching", {})
    monkeypatch.setattr(tokens, "_SOURCES", {**tokens._SOURCES, "o200k_base": url})


@needs_tiktoken_files
def test_a_missing_encoding_is_fetched_once_in_the_background_then_counts_are_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_server: tuple[Path, str]
) -> None:
    root, base = file_server
    key = Path(hashlib.sha1(tokens._URLS["o200k_base"].encode()).hexdigest())
    (root / "o200k.tiktoken").write_bytes((SHARED_TIKTOKEN / key.name).read_bytes())
    cache = tmp_path / "cache"
    _fetch_from(monkeypatch, cache, f"{base}/o200k.tiktoken")
    assert tokens.tokenizer_for("gpt-4o") == "estimate"  # not there yet: estimate, fetch starts
    thread = tokens._fetching["o200k_base"]
    thread.join(60)
    assert not thread.is_alive()
    assert tokens.encoding_file("o200k_base") == cache / key.name
    assert tokens.tokenizer_for("gpt-4o") == "o200k_base"
    assert tokens.count_tokens("hello world", "gpt-4o") == 2
    assert tokens.fetch_in_background("o200k_base") is None  # once per process
    assert [p.name for p in cache.iterdir()] == [key.name]  # no partial file left


@pytest.mark.parametrize("served", ["missing.tiktoken", "portal.html"])
def test_a_failed_fetch_leaves_the_estimate_and_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_server: tuple[Path, str], served: str
) -> None:
    root, base = file_server
    (root / "portal.html").write_text("<html>Sign in to the hotel Wi-Fi</html>")  # 200, wrong bytes
    cache = tmp_path / "cache"
    _fetch_from(monkeypatch, cache, f"{base}/{served}")  # a 404, or a page that is not the file
    assert tokens.tokenizer_for("gpt-4o") == "estimate"
    tokens._fetching["o200k_base"].join(60)
    assert tokens.tokenizer_for("gpt-4o") == "estimate" and tokens.encoding_file("o200k_base") is None
    assert not cache.exists() or list(cache.iterdir()) == []


@pytest.fixture
def stalling_server():
    """A server that sends the head and the first KB of a 10 MB body, then nothing more
    until the test ends."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    release = threading.Event()

    class Stall(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(10_000_000))
            self.end_headers()
            self.wfile.write(b"x" * 1024)
            self.wfile.flush()
            release.wait(60)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Stall)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/o200k.tiktoken"
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()


EXIT_MID_DOWNLOAD = """
import os, sys, time
from pathlib import Path
from etcode.util import tokens
tokens._SOURCES["o200k_base"] = sys.argv[1]
tokens.fetch_in_background("o200k_base")
cache = Path(os.environ["TIKTOKEN_CACHE_DIR"])
deadline = time.monotonic() + 30
while not list(cache.glob("*.part")):
    if time.monotonic() > deadline:
        sys.exit("no partial file appeared")
    time.sleep(0.01)
print("exiting mid-download")
"""


def test_a_process_that_exits_mid_download_leaves_no_partial_file(
    tmp_path: Path, stalling_server: str
) -> None:
    cache = tmp_path / "cache"
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache), "ETCODE_TOKENIZER_DOWNLOAD": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_MID_DOWNLOAD, stalling_server],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "exiting mid-download", proc.stderr
    assert list(cache.iterdir()) == []


def test_the_next_fetch_removes_the_partial_files_of_killed_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, file_server: tuple[Path, str]
) -> None:
    _, base = file_server
    cache = tmp_path / "cache"
    cache.mkdir()
    key = hashlib.sha1(tokens._URLS["o200k_base"].encode()).hexdigest()
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    (cache / f"{key}.{finished.pid}.part").write_bytes(b"half a file")  # its process is gone
    running = cache / f"{key}.{os.getppid()}.part"  # a process still downloading
    running.write_bytes(b"a file on its way")
    _fetch_from(monkeypatch, cache, f"{base}/missing.tiktoken")
    assert tokens.tokenizer_for("gpt-4o") == "estimate"
    tokens._fetching["o200k_base"].join(60)
    assert list(cache.iterdir()) == [running]


def test_the_fetch_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_fetching", {})
    monkeypatch.setenv("ETCODE_TOKENIZER_DOWNLOAD", "0")
    assert tokens.fetch_in_background("o200k_base") is None and tokens._fetching == {}


def test_offline_without_the_encoding_file_is_an_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: nothing cached
    assert tokens.encoding_file("o200k_base") is None
    assert tokens.tokenizer_for("gpt-4o") == "estimate"
    assert tokens.count_tokens("x" * 400, "gpt-4o") == 100
    assert tokens.count_tokens("é" * 10) == 5  # 20 UTF-8 bytes


def test_offline_estimate_never_loads_tiktoken_or_the_network(tmp_path: Path) -> None:
    code = (
        "import socket, sys\n"
        "def no_net(*a, **k): raise AssertionError('network used')\n"
        "socket.socket.connect = no_net\n"
        "socket.create_connection = no_net\n"
        "from etcode.util.tokens import count_tokens, tokenizer_for\n"
        "print(count_tokens('hello ' * 100, 'gpt-4o'), tokenizer_for('gpt-4o'), 'tiktoken' in sys.modules)\n"
    )
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["150", "estimate", "False"]


def test_estimator_caches_per_message_and_meter_uses_reported_usage() -> None:
    from etcode.provider.types import Message, TextPart

    est = TokenEstimator("gpt-4o")
    history = [Message.user("hello there"), Message("assistant", [TextPart("hi")])]
    first = est.messages(history)
    assert first == est.messages(history) > 0
    meter = ContextMeter(est, ContextBudget(context=1000, reserve=100), ModelPrice(1.0, 2.0))
    cost, update = meter.record(Usage(500, 100, 200, 0), history)
    assert update.context_tokens == 800 and update.context_window == 1000 and update.context_percent == 80.0
    assert cost == pytest.approx((500 * 1 + 100 * 2 + 200 * 1) / 1e6)
    later = [*history, Message.user("more")]
    assert meter.estimate([], [], later) == 800 + est.message(later[-1])
    assert ContextBudget(context=1000, reserve=100, threshold=0.9).limit == 810


# ---- catalog ------------------------------------------------------------------------


def test_builtin_table_and_id_variants() -> None:
    catalog = ModelCatalog()
    sonnet = catalog.get("anthropic", "claude-sonnet-4-20250514")
    assert (sonnet.context, sonnet.output) == (200_000, 64_000)
    assert (sonnet.price.input, sonnet.price.output, sonnet.price.cache_read) == (3.0, 15.0, 0.3)
    routed = catalog.get("openrouter", "anthropic/claude-sonnet-4")
    assert routed.context == 200_000 and routed.full_id == "openrouter/anthropic/claude-sonnet-4"
    assert catalog.get("openai", "gpt-4.1").context == 1_047_576
    unknown = catalog.get("local", "my-finetune")
    assert unknown.context is None and not unknown.price.known and unknown.sources == []


def test_models_dev_file_in_the_cache_dir_then_config_overrides(tmp_path: Path) -> None:
    from etcode.config.loader import load_config

    path = cache_dir() / "models.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(
            {
                "anthropic": {
                    "id": "anthropic",
                    "models": {
                        "claude-sonnet-4-20250514": {
                            "name": "Claude Sonnet 4",
                            "limit": {"context": 1_000_000, "output": 64_000},
                            "cost": {"input": 6, "output": 22.5},
                        }
                    },
                },
                "local": {"models": {"qwen": {"limit": {"context": 32_768, "output": 4096}}}},
            }
        ),
        encoding="utf-8",
    )
    (tmp_path / "etcode.json").write_text(
        json.dumps(
            {
                "provider": [
                    {
                        "id": "local",
                        "type": "openai",
                        "baseURL": "http://127.0.0.1:1/v1",
                        "models": {"qwen": {"limit": {"context": 16_000}, "cost": {"input": 0.1}}},
                    }
                ]
            }
        ),
        encoding="utf-8",
    )
    config = load_config(tmp_path, tmp_path)
    catalog = ModelCatalog.load(config)
    sonnet = catalog.get("anthropic", "claude-sonnet-4-20250514")
    assert sonnet.context == 1_000_000 and sonnet.price.input == 6 and sonnet.price.cache_read == 0.3
    assert sonnet.name == "Claude Sonnet 4" and sonnet.sources == ["built-in", "models.dev"]
    qwen = catalog.get("local", "qwen")
    assert (qwen.context, qwen.output, qwen.price.input) == (16_000, 4096, 0.1)
    assert qwen.sources == ["models.dev", "config"]
    assert "qwen" in catalog.models_of("local")


def test_model_catalog_path_in_config_is_relative_to_the_file(tmp_path: Path) -> None:
    from etcode.config.loader import load_config

    (tmp_path / "catalog.json").write_text(
        json.dumps({"acme": {"models": {"rocket": {"limit": {"context": 4000, "output": 500}}}}}),
        encoding="utf-8",
    )
    (tmp_path / "etcode.json").write_text(json.dumps({"model_catalog": "catalog.json"}), encoding="utf-8")
    catalog = ModelCatalog.load(load_config(tmp_path, tmp_path))
    assert catalog.get("acme", "rocket").context == 4000


# ---- cost -----------------------------------------------------------------------------


def test_cost_arithmetic() -> None:
    price = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(
        input_tokens=1_000_000, output_tokens=500_000, cache_read_tokens=200_000, cache_write_tokens=100_000
    )
    assert cost_of(usage, price) == pytest.approx(3.0 + 7.5 + 0.06 + 0.375)
    no_cache_prices = ModelPrice(input=2.0, output=8.0)
    assert cost_of(Usage(1000, 1000, 1000, 1000), no_cache_prices) == pytest.approx(
        (1000 * 2 * 3 + 1000 * 8) / 1e6
    )
    assert cost_of(Usage(1000, 1000), ModelPrice()) is None
    assert cost_of(Usage(1000, 1000), None) is None


async def test_cost_per_step_and_per_session_against_the_fake_server(tmp_path: Path) -> None:
    from etcode import Agent
    from etcode.contract import events as ev
    from etcode.session.store import SessionStore

    with FakeLLM() as llm:
        entry = {
            "id": "fake",
            "type": "anthropic",
            "baseURL": llm.anthropic_base_url,
            "apiKey": "k",
            "models": {
                "test-model": {"cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}
            },
        }
        (tmp_path / "etcode.json").write_text(json.dumps({"model": "fake/test-model", "provider": [entry]}))
        llm.script(Reply(text="one", usage=(1000, 100, 2000, 400)), Reply(text="two", usage=(3000, 200)))
        agent = Agent(directory=tmp_path, builtin_tools=False, store=True)
        first = [e async for e in agent.stream("a")]
        second = [e async for e in agent.stream("b")]
        await agent.aclose()
    step1 = (1000 * 3 + 100 * 15 + 2000 * 0.3 + 400 * 3.75) / 1e6
    step2 = (3000 * 3 + 200 * 15) / 1e6
    u1 = [e for e in first if isinstance(e, ev.UsageUpdate)][-1]
    u2 = [e for e in second if isinstance(e, ev.UsageUpdate)][-1]
    assert u1.step_cost == pytest.approx(step1) and u1.cost == pytest.approx(step1)
    assert u2.step_cost == pytest.approx(step2) and u2.cost == pytest.approx(step1 + step2)
    assert u1.context_tokens == 1000 + 2000 + 400 + 100
    store = SessionStore.open()
    assert store.get_session(agent.session_id).cost == pytest.approx(step1 + step2)
    assert [row["cost"] for row in store.usage_rows(agent.session_id)] == pytest.approx([step1, step2])
    store.close()


def test_models_command_lists_limits_and_prices(tmp_path: Path) -> None:
    (tmp_path / "etcode.json").write_text(
        json.dumps(
            {
                "model": "local/qwen",
                "provider": [
                    {
                        "id": "local",
                        "type": "openai",
                        "baseURL": "http://127.0.0.1:1/v1",
                        "models": {
                            "qwen": {"limit": {"context": 32768, "output": 4096}, "cost": {"input": 0}}
                        },
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test"}

    def etcode(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "etcode", "models", *args],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    proc = etcode("--json")
    assert proc.returncode == 0, proc.stderr
    models = {m["id"]: m for m in json.loads(proc.stdout)}
    assert (
        models["local/qwen"]["limit"] == {"context": 32768, "output": 4096}
        and models["local/qwen"]["default"]
    )
    assert models["anthropic/claude-sonnet-4"]["cost"]["output"] == 15.0
    assert not models["anthropic/claude-sonnet-4"]["default"]
    table = etcode()
    assert table.returncode == 0 and "local/qwen *" in table.stdout and "32,768" in table.stdout

    empty = tmp_path / "empty"
    empty.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "etcode", "models"], cwd=empty, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1 and "ANTHROPIC_API_KEY" in proc.stderr and "Traceback" not in proc.stderr

"""Secret hygiene: API keys never reach stdout, stderr, ``--debug`` logs, the JSON event
stream, error messages or reprs; ``.env`` files are skipped by default and reading one asks."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etcode.config.schema import Config
from etcode.contract import events as ev
from etcode.provider.spec import ProviderSpec
from etcode.security import redact as redact_module
from etcode.security.redact import (
    REDACTED,
    RedactingFilter,
    Redactor,
    StreamRedactor,
    install_log_redaction,
    redact,
    redact_data,
    redact_export,
    register_config,
    register_secrets,
    reset_redactor,
    secrets_from_config,
    secrets_from_env,
)
from etcode.tools.base import PermissionDenied, ToolContext
from etcode.tools.glob_tool import GlobTool
from etcode.tools.grep import GrepTool
from etcode.tools.read_file import ReadFileTool
from etcode.tools.read_many_files import ReadManyFilesTool
from etcode.ui.jsonl import JsonLinesRenderer
from etcode.ui.plain import PlainRenderer
from tests.fake_llm import Call, FakeLLM, Fault, Reply
from tests.tool_support import make_ctx

#: A distinctive key that matches no well-known shape: only knowing it can hide it.
KEY = "etc0de-distinctive-KEY-7f3a9b2c51"
#: Another one, only in the environment (``*_API_KEY``), never in the config.
ENV_KEY = "envonly-secret-Q9x8w7v6u5t4"


@pytest.fixture(autouse=True)
def fresh_redactor():
    reset_redactor()
    yield
    reset_redactor()


# ---- the redactor ---------------------------------------------------------------------------


def test_known_values_and_well_known_shapes_are_redacted() -> None:
    r = Redactor([KEY])
    cases = {
        f"the key is {KEY}.": f"the key is {REDACTED}.",
        "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx12": REDACTED,
        "x sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx12-_ y": f"x {REDACTED} y",
        "AIzaSyA1234567890abcdefghijklmnopqrstu": REDACTED,
        "gsk_abcdefghijklmnopqrstuvwxyz0123": REDACTED,
        "Authorization: Bearer some.jwt.token-value": f"Authorization: Bearer {REDACTED}",
        '{"x-api-key": "abcd1234efgh"}': f'{{"x-api-key": "{REDACTED}"}}',
        "authorization=Basic dXNlcjpwYXNzd29yZA==": f"authorization=Basic {REDACTED}",
        "GET https://h/v1/models?key=AIzaSomething12345&alt=sse": f"GET https://h/v1/models?key={REDACTED}&alt=sse",
        "https://user:hunter2-password@host/x": f"https://user:{REDACTED}@host/x",
    }
    for text, expected in cases.items():
        assert r.redact(text) == expected, text
        assert r.redact(expected) == expected  # idempotent


def test_ordinary_text_is_left_alone() -> None:
    r = Redactor([KEY])
    for text in [
        "task-management-is-hard-to-get-right",
        "the author wrote a token parser",
        "see bob@example.com",
        "def key(self): return self._key",
        "short",
        "",
    ]:
        assert r.redact(text) == text


def test_short_and_path_like_values_are_not_secrets() -> None:
    r = Redactor(["abc", "", "   ", "/usr/local/bin", "12345678", None])  # type: ignore[list-item]
    assert r.secrets == frozenset()


def test_secrets_with_surrounding_whitespace_or_scheme() -> None:
    r = Redactor([f"  {KEY}\n", f"Bearer {ENV_KEY}"])
    assert KEY not in r.redact(f"Illegal header value b'Bearer {KEY}\\n'")
    assert ENV_KEY not in r.redact(f"token={ENV_KEY}")


@settings(max_examples=60, deadline=None)
@given(
    data=st.recursive(
        st.text(max_size=10) | st.integers() | st.none(),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
        max_leaves=10,
    ),
    before=st.text(max_size=8),
    after=st.text(max_size=8),
)
def test_redacted_json_lines_stay_valid_json_without_the_key(data: Any, before: str, after: str) -> None:
    r = Redactor([KEY, 'we"ird\\key-123'])
    payload = {"data": data, "text": before + KEY + after, "odd": 'x we"ird\\key-123 y'}
    for ascii_only in (False, True):
        line = r.redact(json.dumps(payload, ensure_ascii=ascii_only))
        parsed = json.loads(line)  # still valid JSON
        assert KEY not in line and "ird\\\\key" not in line
        assert parsed["data"] == r.redact_data(data)


def test_redact_data_walks_structures() -> None:
    r = Redactor([KEY])
    out = r.redact_data({"a": [KEY, {"b": f"x{KEY}"}], "n": 3, KEY: "key names are kept"})
    assert out == {"a": [REDACTED, {"b": f"x{REDACTED}"}], "n": 3, KEY: "key names are kept"}


def test_cheap_on_ordinary_events() -> None:
    import time

    r = Redactor([KEY, ENV_KEY])
    text = "Some ordinary streamed answer text, with code: x = compute(a, b)\n" * 2
    r.redact(text)
    started = time.perf_counter()
    for _ in range(2000):
        r.redact(text)
    per_call = (time.perf_counter() - started) / 2000
    assert per_call < 100e-6, per_call  # measured ~5 µs


# ---- where secrets come from --------------------------------------------------------------------


def test_secrets_from_env_takes_key_token_and_secret_variables() -> None:
    env = {
        "OPENAI_API_KEY": "sk-openai-value-1234",
        "MY_SERVICE_TOKEN": "token-value-5678",
        "DB_PASSWORD": "password-value-9",
        "AWS_SECRET_ACCESS_KEY": "aws-secret-value-0",
        "PATH": "/usr/bin:/bin",
        "EDITOR": "vim-is-the-editor",
        "TOKENIZERS_PARALLELISM": "false-or-true",
    }
    found = secrets_from_env(env)
    assert {"sk-openai-value-1234", "token-value-5678", "password-value-9", "aws-secret-value-0"} <= found
    assert not any(v in found for v in ("/usr/bin:/bin", "vim-is-the-editor", "false-or-true"))


def test_secrets_from_config_providers_and_mcp() -> None:
    config = Config.model_validate(
        {
            "provider": [
                {
                    "id": "x",
                    "type": "openai",
                    "baseURL": "http://h/v1",
                    "apiKey": KEY,
                    "headers": {"Authorization": "Bearer hdr-token-123456", "X-Title": "etcode-app-title"},
                }
            ],
            "mcp": {
                "gh": {
                    "command": ["gh-mcp"],
                    "environment": {"GITHUB_TOKEN": "ghenv-token-123456", "LOG": "verbose-level"},
                },
                "remote": {"url": "https://mcp.example/mcp", "headers": {"x-api-key": "mcp-header-key-1234"}},
            },
        }
    )
    found = secrets_from_config(config)
    assert {KEY, "hdr-token-123456", "ghenv-token-123456", "mcp-header-key-1234"} <= found
    assert "etcode-app-title" not in found and "verbose-level" not in found
    assert secrets_from_config(config.model_dump(by_alias=True)) == found  # the dict form too


def test_process_wide_redactor_reads_env_and_learns_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOMETHING_API_KEY", ENV_KEY)
    reset_redactor()
    assert redact(f"a {ENV_KEY} b") == f"a {REDACTED} b"
    assert KEY in redact(KEY)
    register_config({"provider": [{"id": "p", "apiKey": KEY}]})
    assert redact(KEY) == REDACTED
    register_secrets("explicit-secret-arg")
    assert redact_data(["explicit-secret-arg"]) == [REDACTED]
    assert redact_export({"messages": [{"text": f"{KEY} and {ENV_KEY}"}]}) == {
        "messages": [{"text": f"{REDACTED} and {REDACTED}"}]
    }
    assert redact_export(
        f"# export\n{KEY}\n", config={"provider": [{"id": "q", "apiKey": "other-key-987654"}]}
    ) == (f"# export\n{REDACTED}\n")
    assert redact("other-key-987654") == REDACTED


# ---- reprs ------------------------------------------------------------------------------------------


def test_reprs_never_show_keys() -> None:
    spec = ProviderSpec(
        id="x", type="openai", base_url="http://h", model="m", api_key=KEY, headers={"authorization": KEY}
    )
    assert KEY not in repr(spec) and KEY not in str(spec)
    config = Config.model_validate(
        {
            "provider": [{"id": "x", "apiKey": KEY, "headers": {"authorization": KEY}}],
            "mcp": {
                "s": {"command": ["s"], "environment": {"TOKEN": KEY}},
                "r": {"url": "http://h", "headers": {"a": KEY}},
            },
        }
    )
    assert KEY not in repr(config) and KEY not in str(config)
    assert KEY not in repr(config.provider[0])


# ---- front ends and logging -------------------------------------------------------------------------


def test_json_lines_renderer_redacts_every_event() -> None:
    register_secrets(KEY)
    out = io.StringIO()
    renderer = JsonLinesRenderer(out)
    renderer.handle(ev.TextDeltaEvent(f"here: {KEY}"))
    renderer.handle(ev.ToolCallStart("c1", "Bash", {"command": f"curl -H 'x-api-key: {KEY}'"}, "curl"))
    renderer.handle(ev.ErrorEvent(f"openai: 401 invalid_api_key: Incorrect API key provided: {KEY}"))
    renderer.handle(ev.DoneEvent({"type": "result", "result": KEY, "error": KEY}))
    text = out.getvalue()
    assert KEY not in text
    lines = [json.loads(line) for line in text.splitlines()]
    # the delta's last word is held back until the next event, then written as its own delta
    assert [line["type"] for line in lines] == [
        "text_delta",
        "text_delta",
        "tool_call_start",
        "error",
        "result",
    ]
    assert "".join(line["text"] for line in lines[:2]) == f"here: {REDACTED}"


def test_json_lines_renderer_catches_a_key_split_across_deltas() -> None:
    register_secrets(KEY)
    out = io.StringIO()
    renderer = JsonLinesRenderer(out)
    pieces = ["Your key: ", KEY[:5], KEY[5:17], KEY[17:], " — and more text"]
    for piece in pieces:
        renderer.handle(ev.TextDeltaEvent(piece))
    renderer.handle(ev.ReasoningDeltaEvent("thinking " + KEY[:9]))
    renderer.handle(ev.ReasoningDeltaEvent(KEY[9:]))
    renderer.handle(ev.DoneEvent({"type": "result", "result": "".join(pieces)}))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    text = "".join(line["text"] for line in lines if line["type"] == "text_delta")
    reasoning = "".join(line["text"] for line in lines if line["type"] == "reasoning_delta")
    assert text == f"Your key: {REDACTED} — and more text"
    assert reasoning == f"thinking {REDACTED}"
    assert lines[-1] == {"type": "result", "version": 1, "result": f"Your key: {REDACTED} — and more text"}


WORDS = [
    KEY, ENV_KEY, "Bearer", "Authorization:", "x-api-key:", '"x-api-key":', '"', "word", "é世", "token=",
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrSt", "https://u:pw-secret-1@h/p?key=AIzaQQQQQQQQ", f'"{KEY}"',
]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    words=st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from([" ", "\n", "  ", ", "])), max_size=14),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_stream_redactor_equals_redacting_the_whole_text(
    words: list[tuple[str, str]], cuts: list[int]
) -> None:
    r = Redactor([KEY, ENV_KEY])
    whole = "".join(word + sep for word, sep in words)
    points = sorted({min(c, len(whole)) for c in cuts})
    pieces = [whole[a:b] for a, b in zip([0, *points], [*points, len(whole)], strict=True)]
    stream = StreamRedactor(r)
    shown = "".join(stream.feed(p) for p in pieces) + stream.drain()
    assert shown == r.redact(whole)
    assert KEY not in shown and ENV_KEY not in shown


@settings(max_examples=100, deadline=None)
@given(
    parts=st.lists(st.sampled_from([*"ab :\"'=-_", KEY, "Bearer ", "key="]), max_size=30),
    cuts=st.lists(st.integers(0, 600), max_size=12),
)
def test_stream_redactor_never_shows_a_known_key_however_it_is_split(
    parts: list[str], cuts: list[int]
) -> None:
    text = "".join(parts)
    r = Redactor([KEY])
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    stream = StreamRedactor(r)
    shown = "".join(stream.feed(p) for p in pieces) + stream.drain()
    assert KEY not in shown


def test_plain_renderer_redacts_stdout_and_stderr() -> None:
    register_secrets(KEY)
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, err, live=False, color=False)
    renderer.handle(ev.TextDeltaEvent(f"the key {KEY[:10]}"))  # split across two deltas
    renderer.handle(ev.TextDeltaEvent(f"{KEY[10:]}\n"))
    renderer.handle(ev.RetryEvent(1, 0.1, f"401 for key {KEY}"))
    renderer.handle(ev.WarningEvent(f"warn {KEY}"))
    renderer.handle(ev.ErrorEvent(f"error {KEY}"))
    assert KEY not in out.getvalue() + err.getvalue()
    assert REDACTED in out.getvalue() and err.getvalue().count(REDACTED) == 3


def test_logging_filter_redacts_messages_args_and_tracebacks() -> None:
    register_secrets(KEY)
    stream = io.StringIO()
    logger = logging.getLogger("etcode.test.redaction")
    logger.propagate = False
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        install_log_redaction(logger)
        install_log_redaction(logger)  # idempotent: one filter per handler
        assert sum(isinstance(f, RedactingFilter) for f in handler.filters) == 1
        logger.info("HTTP Request: POST %s", f"http://user:{KEY}@127.0.0.1/v1")
        logger.debug("headers %r", {"authorization": f"Bearer {KEY}"})
        try:
            raise ValueError(f"Illegal header value b'Bearer {KEY}'")
        except ValueError:
            logger.debug("tool raised", exc_info=True)
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert KEY not in text
    assert "HTTP Request: POST" in text and "Traceback" in text and "ValueError" in text


# ---- end to end: the real CLI against the fake LLM server ----------------------------------------------


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def write_config(project: Path, base_url: str, wire: str = "openai", **extra: Any) -> None:
    config = {
        "model": "fake/test-model",
        "provider": [{"id": "fake", "type": wire, "baseURL": base_url, "apiKey": KEY}],
        **extra,
    }
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


def etcode(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "etcode", *args],
        cwd=cwd,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SOMETHING_API_KEY": ENV_KEY, **(env or {})},
    )


def assert_clean(proc: subprocess.CompletedProcess) -> None:
    for secret in (KEY, ENV_KEY):
        assert secret not in proc.stdout, proc.stdout
        assert secret not in proc.stderr, proc.stderr


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_json_debug_run_never_shows_the_key(project: Path, llm: FakeLLM, wire: str) -> None:
    # The key is also in the URL's user info, which httpx writes to its --debug log line.
    base = llm.openai_base_url if wire == "openai" else llm.anthropic_base_url
    write_config(project, base.replace("http://", f"http://user:{KEY}@"), wire)
    llm.script(
        Reply(
            text=f"Running it. {KEY}",
            calls=[Call("Bash", {"command": f"echo {KEY} {ENV_KEY} $SOMETHING_API_KEY"})],
        ),
        Reply(text=f"Your keys are {KEY} and {ENV_KEY}."),
    )
    proc = etcode("run", "--format", "json", "--debug", "--yes", "show me the key", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "HTTP Request: POST" in proc.stderr  # the debug log is on
    assert_clean(proc)
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["type"] == "result" and REDACTED in lines[-1]["result"]
    tool = next(line for line in lines if line["type"] == "tool_result")
    # The command printed both keys; the variable was not in its environment (issue 12).
    assert tool["output"].count(REDACTED) == 2
    # What the model gets back from the tool has the known key values replaced too.
    result = json.dumps(llm.requests[1].body["messages"][-1])
    assert KEY not in result and ENV_KEY not in result and REDACTED in result


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_provider_error_echoing_the_key_is_redacted(project: Path, llm: FakeLLM, fmt: str) -> None:
    write_config(project, llm.openai_base_url)
    llm.script(Fault(status=401, body=f"Incorrect API key provided: {KEY} (also tried {ENV_KEY})"))
    proc = etcode("run", "--format", fmt, "--debug", "hi", cwd=project)
    assert proc.returncode == 1
    assert "401" in proc.stdout + proc.stderr
    assert_clean(proc)


def test_stream_error_event_echoing_the_key_is_redacted(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm.anthropic_base_url, "anthropic")
    llm.script(Fault(error_event={"type": "authentication_error", "message": f"bad key {ENV_KEY}"}))
    proc = etcode("run", "--format", "json", "hi", cwd=project)
    assert proc.returncode == 1
    assert "authentication_error" in proc.stdout
    assert_clean(proc)


def test_config_errors_never_show_the_key(project: Path) -> None:
    # a key pasted where the model belongs: the error quotes the model string
    (project / "etcode.json").write_text(
        json.dumps({"model": f"sk-ant-api03-{KEY}", "provider": [{"id": "fake", "apiKey": KEY}]}),
        encoding="utf-8",
    )
    proc = etcode("run", "--debug", "hi", cwd=project)
    assert proc.returncode == 1 and "error:" in proc.stderr
    assert "sk-ant-api03" not in proc.stderr
    assert_clean(proc)
    # a broken file around the key
    (project / "etcode.json").write_text(
        '{"provider": [{"id": "fake", "apiKey": "' + KEY + '",}, ]', encoding="utf-8"
    )
    proc = etcode("run", "--debug", "hi", cwd=project)
    assert proc.returncode == 1 and "etcode.json:" in proc.stderr
    assert_clean(proc)
    # a bad value next to the key
    (project / "etcode.json").write_text(
        json.dumps({"provider": [{"id": "fake", "apiKey": KEY, "timeout": -1, "apiKeys": KEY}]}),
        encoding="utf-8",
    )
    proc = etcode("run", "--format", "json", "--debug", "hi", cwd=project)
    assert proc.returncode == 1 and "error:" in proc.stderr
    assert_clean(proc)


def test_key_in_the_environment_only_is_redacted_in_plain_output(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm.openai_base_url)
    llm.script(Reply(text=f"Echo: {ENV_KEY}"))
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"Echo: {REDACTED}\n"
    assert_clean(proc)


# ---- .env files ---------------------------------------------------------------------------------------


def asking_ctx(root: Path, calls: list[tuple[str, list[str]]], deny: str = "read") -> ToolContext:
    """A context that records each permission asked and refuses ``deny`` for ``.env*`` files."""

    async def check(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        calls.append((permission, list(patterns)))
        if permission == deny and any(p.rsplit("/", 1)[-1].startswith(".env") for p in patterns):
            raise PermissionDenied("asked and refused")

    return make_ctx(root, check_permission=check)


@pytest.fixture
def env_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    root = tmp_path / "p"
    (root / "app").mkdir(parents=True)
    (root / ".env").write_text(f"API_KEY={KEY}\n")
    (root / "app" / ".env.local").write_text(f"API_KEY={KEY}\n")
    (root / "app" / "main.py").write_text("API_KEY = os.environ['API_KEY']\n")
    return root


async def test_glob_skips_env_files_unless_named(env_project: Path) -> None:
    tool = GlobTool()
    calls: list[tuple[str, list[str]]] = []
    result = await tool.run(tool.parse({"pattern": "**/*"}), asking_ctx(env_project, calls))
    assert result.data["files"] == ["app/main.py"]
    result = await tool.run(tool.parse({"pattern": "**/.env*"}), asking_ctx(env_project, calls))
    assert sorted(result.data["files"]) == [".env", "app/.env.local"]  # names only, nothing read


async def test_read_many_files_skips_env_and_asks_for_a_named_one(env_project: Path) -> None:
    tool = ReadManyFilesTool()
    calls: list[tuple[str, list[str]]] = []
    result = await tool.run(tool.parse({"paths": ["**"]}), asking_ctx(env_project, calls))
    assert [f["path"] for f in result.data["files"]] == ["app/main.py"]
    assert KEY not in result.output
    result = await tool.run(tool.parse({"paths": [".env", "app/main.py"]}), asking_ctx(env_project, calls))
    assert ("read", [".env"]) in calls
    assert KEY not in result.output and "asked and refused" in result.output


async def test_grep_skips_env_and_asks_before_searching_one(env_project: Path) -> None:
    tool = GrepTool()
    calls: list[tuple[str, list[str]]] = []
    for include in (None, ".env*", "*"):
        args = {"pattern": "API_KEY"} | ({"include": include} if include else {})
        result = await tool.run(tool.parse(args), asking_ctx(env_project, calls))
        assert KEY not in result.output, include
        assert ("main.py" in result.output) == (include != ".env*"), include
    with pytest.raises(PermissionDenied):
        await tool.run(tool.parse({"pattern": "API_KEY", "path": ".env"}), asking_ctx(env_project, calls))
    assert ("read", [".env"]) in calls


async def test_read_file_asks_for_env_files(env_project: Path) -> None:
    tool = ReadFileTool()
    calls: list[tuple[str, list[str]]] = []
    for name in (".env", "app/.env.local"):
        with pytest.raises(PermissionDenied):
            await tool.run(tool.parse({"file_path": name}), asking_ctx(env_project, calls))
    assert ("read", [".env"]) in calls and ("read", ["app/.env.local"]) in calls


def test_default_rules_ask_for_env_reads() -> None:
    from etcode.permission.rules import DEFAULT_RULES, evaluate

    for path in (".env", "app/.env.local", "/abs/elsewhere/.env"):
        assert evaluate(DEFAULT_RULES, "read", path).action == "ask", path
    assert evaluate(DEFAULT_RULES, "read", ".env.example").action == "allow"


def test_module_exports_the_export_hook() -> None:
    assert callable(redact_module.redact_export)
    assert "redact_export" in redact_module.__all__

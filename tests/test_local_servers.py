"""What a local-model user meets: llama.cpp's own error shapes, replayed byte for byte from
``../shared/fixtures/llama-server/`` through the real ``etcode run`` and the fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from etcode.provider.errors import ContextOverflowError
from etcode.provider.http_errors import error_from_response
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import FakeLLM, Fault, Reply
from tests.test_fault_matrix import error_line, ok

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "llama-server"
RECORDED_OVERFLOW = (
    '{"error":{"code":400,"message":"request (6050 tokens) exceeds the available context size '
    '(4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":6050,'
    '"n_ctx":4096}}'
)


def overflow_body() -> dict[str, Any]:
    """llama-server's 400 body (the recording when it is there, else the same bytes inline)."""
    recording = FIXTURES / "overflow-400.txt"
    if recording.is_file():
        head, _, body = recording.read_text(encoding="utf-8").partition("\n\n")
        assert "400 Bad Request" in head and "llama.cpp" in head
        return json.loads(body)
    return json.loads(RECORDED_OVERFLOW)


def test_llama_overflow_is_an_overflow_with_its_window() -> None:
    body = json.dumps(overflow_body())
    err = error_from_response("local", 400, {}, body, secret="x")
    assert isinstance(err, ContextOverflowError)
    assert err.window == 4096
    # a short "apiKey" like the README's "x" is not a secret to mask in every word
    assert "exceeds the available context size (4096 tokens)" in str(err)
    assert "***" not in str(err)


def test_a_real_secret_is_still_hidden_in_provider_errors() -> None:
    key = "sk-local-0123456789abcdef"
    err = error_from_response(
        "local", 401, {}, json.dumps({"error": {"message": f"bad key {key}"}}), secret=key
    )
    assert key not in str(err) and "***" in str(err)


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.",
        "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded "
        "with context length of only 4096 tokens, which is not enough.",
    ],
    ids=["vllm-openrouter", "lm-studio"],
)
def test_other_local_servers_overflow_messages(message: str) -> None:
    err = error_from_response("local", 400, {}, json.dumps({"error": {"message": message}}), secret=None)
    assert isinstance(err, ContextOverflowError)
    assert err.window == 4096


def bigger_window(body: dict[str, Any], n_ctx: int) -> dict[str, Any]:
    """The recorded overflow, as a server started with a ``n_ctx`` window would send it."""
    error = dict(body["error"])
    error["message"] = error["message"].replace("(4096 tokens)", f"({n_ctx} tokens)")
    error["n_prompt_tokens"], error["n_ctx"] = n_ctx + 100, n_ctx
    return {"error": error}


def test_llama_overflow_compacts_and_the_run_succeeds(project: Path, llm: FakeLLM) -> None:
    """The window is unknown to the catalog; the server's 400 names it (n_ctx): etcode
    compacts the older turns and the retry goes through."""
    write_config(project, llm, api_key="x")
    llm.script(Reply(text="An earlier answer about the build."))
    ok(etcode("run", "how do I build it?", cwd=project))
    llm.script(
        Fault(status=400, body=bigger_window(overflow_body(), 32768)),
        Reply(text="Summary: the user asked how to build."),  # the compaction's summary request
        Reply(text="Now the tests."),
    )
    proc = etcode("run", "-c", "and the tests?", cwd=project)
    ok(proc)
    assert proc.stdout.endswith("Now the tests.\n")
    retried = llm.requests[-1].body["messages"]
    assert "and the tests?" in json.dumps(retried)  # the newest message, word for word
    # The user's own earlier message stays word for word (the summary, longer than the short
    # answer it would replace, is not kept: issue 34).
    assert "how do I build it?" in json.dumps(retried)


def test_llama_overflow_replans_the_request_for_the_window_it_states(project: Path, llm: FakeLLM) -> None:
    """The full prompt overflows the 4,096 tokens the server states: the same run retries at
    once with the lean prompt and the tools fitted to that window, and answers."""
    write_config(project, llm, api_key="x")
    llm.script(Fault(status=400, body=overflow_body()), Reply(text="done"))
    proc = etcode("run", "explain this", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "done"
    first, second = (r.body for r in llm.requests)
    assert len(json.dumps(second)) < len(json.dumps(first)) / 2  # lean and fitted


def test_llama_overflow_with_nothing_to_compact_is_one_clear_line(project: Path, llm: FakeLLM) -> None:
    """A window the prompt cannot fit even lean and without tools (512 tokens): one line
    naming that window, and nothing doomed sent again."""
    write_config(project, llm, api_key="x")
    body = overflow_body()
    body["error"]["n_ctx"] = 512
    body["error"]["message"] = body["error"]["message"].replace("(4096 tokens)", "(512 tokens)")
    llm.script(Fault(status=400, body=body))
    line = error_line(etcode("run", "explain this", cwd=project))
    assert "512-token window" in line
    assert "***" not in line
    assert len(llm.requests) == 1  # nothing doomed was sent again


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_cut_answer_is_never_silent(project: Path, llm: FakeLLM, wire: str) -> None:
    """finish_reason "length" / stop_reason "max_tokens": a notice on stderr, the JSON result
    says max_tokens, and the exit status is 1 — a script must not take a cut answer as done."""
    write_config(project, llm, wire)
    llm.script(Reply(text="The first part of a long", stop_reason="max_tokens"))
    proc = etcode("run", "explain everything", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.startswith("The first part of a long")
    assert "The answer was cut off" in proc.stderr
    llm.script(Reply(text="Cut again", stop_reason="max_tokens"))
    proc = etcode("run", "--format", "json", "-c", "more", cwd=project)
    assert proc.returncode == 1
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert lines[-1]["type"] == "result" and lines[-1]["stop_reason"] == "max_tokens"
    assert any(e["type"] == "stopped" and e.get("reason") == "max_tokens" for e in lines)


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "the input length exceeds the context length", "type": "api_error"}},
        {"error": "prompt too long; exceeded max context length by 1024 tokens"},
    ],
    ids=["ollama-openai-endpoint", "ollama-native"],
)
def test_ollama_overflow_messages(body: dict[str, Any]) -> None:
    """Ollama states no window in its errors: an overflow still (the window comes from
    /api/show), not a bad request."""
    err = error_from_response("ollama", 400, {}, json.dumps(body), secret=None)
    assert isinstance(err, ContextOverflowError)

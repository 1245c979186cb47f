"""`--model ollama/NAME` with no etcode.json: Ollama's usual address, no key, and Ollama's own
`OLLAMA_HOST` honoured (as the `ollama` command reads it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.config.resolve import resolve_model
from etcode.config.schema import Config
from etcode.provider.spec import known_base_url
from tests.cli_helpers import etcode
from tests.fake_llm import FakeLLM, Reply


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("", "http://127.0.0.1:11434/v1"),
        ("127.0.0.1:5000", "http://127.0.0.1:5000/v1"),
        ("gpu-box", "http://gpu-box:11434/v1"),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0:8000", "http://127.0.0.1:8000/v1"),
        ("http://gpu-box", "http://gpu-box:80/v1"),
        ("https://ollama.example.com/proxy/", "https://ollama.example.com:443/proxy/v1"),
        ("http://[::1]:9000", "http://[::1]:9000/v1"),
        ("[::]", "http://127.0.0.1:11434/v1"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(host: str, url: str) -> None:
    assert known_base_url("ollama", {"OLLAMA_HOST": host}) == url


def test_ollama_base_url_wins_over_ollama_host_and_other_ids_ignore_it() -> None:
    env = {"OLLAMA_HOST": "gpu-box", "OLLAMA_BASE_URL": "http://127.0.0.1:7/v1"}
    assert known_base_url("ollama", env) == "http://127.0.0.1:7/v1"
    assert known_base_url("lmstudio", {"OLLAMA_HOST": "gpu-box"}) == "http://127.0.0.1:1234/v1"


def test_ollama_model_needs_no_config_and_no_key() -> None:
    spec = resolve_model(Config(), "ollama/qwen2.5-coder", env={"OLLAMA_HOST": "gpu-box:9"})
    assert (spec.type, spec.base_url, spec.model, spec.api_key) == (
        "openai",
        "http://gpu-box:9/v1",
        "qwen2.5-coder",
        None,
    )


def test_etcode_run_with_ollama_host_reaches_that_server(tmp_path: Path) -> None:
    """The README's `OLLAMA_HOST=… etcode run --model ollama/NAME`, no etcode.json, no key."""
    project = tmp_path / "p"
    project.mkdir()
    with FakeLLM() as llm:
        llm.script(Reply(text="hello from ollama"))
        proc = etcode(
            "run",
            "--model",
            "ollama/qwen2.5-coder",
            "hi",
            cwd=project,
            env={"OLLAMA_HOST": f"127.0.0.1:{llm.port}"},
        )
        assert proc.returncode == 0, proc.stderr
        assert "hello from ollama" in proc.stdout
        request = llm.requests[0]
    assert request.body["model"] == "qwen2.5-coder"
    assert "authorization" not in request.headers

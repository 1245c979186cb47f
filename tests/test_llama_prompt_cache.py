"""The prompt cache of the real llama.cpp ``llama-server`` (issue 34, item 6): the same
question asked in a second folder is served mostly from the cache, because what changes per
folder and day (the ``<env>`` block) comes after the system text and the tools. Before, the
working directory sat early in the system text and only ~210 of ~2,640 tokens were reused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import etcode
from tests.llama_servers import LLAMA_TEST, LLAMA_TIMEOUT
from tests.test_llama_server import result_of

pytestmark = LLAMA_TEST


@pytest.fixture
def tools_server(llama_tools: Callable[[int], int]) -> int:
    """A llama-server with a tool-capable template (Qwen2.5's: system text, then tools)."""
    return llama_tools(4096)


def ask_in(folder: Path, port: int) -> dict[str, Any]:
    folder.mkdir(parents=True)
    provider = {
        "id": "local",
        "type": "openai",
        "baseURL": f"http://127.0.0.1:{port}/v1",
        "apiKey": "x",
        "options": {"temperature": 0, "seed": 1, "max_tokens": 4},
    }
    config = {"model": "local/smollm2", "max_steps": 1, "provider": [provider]}
    (folder / "etcode.json").write_text(json.dumps(config))
    proc = etcode("run", "--format", "json", "What is 2+2?", cwd=folder, timeout=LLAMA_TIMEOUT)
    result = result_of(proc)
    assert result["type"] == "result", proc.stderr[-2000:]
    return dict(result["usage"])


def test_a_second_folder_is_served_from_the_cache(
    tmp_path: Path, tools_server: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")
    ask_in(tmp_path / "first-project", tools_server)
    usage = ask_in(tmp_path / "another" / "second-project", tools_server)
    prompt = usage["input_tokens"] + usage["cache_read_tokens"]
    assert prompt > 1000  # the system text and the tools were sent
    # llama.cpp's prompt_tokens_details.cached_tokens, read into cache_read_tokens: all but
    # the first user message (the env block and the question, well under 10% of it)
    assert usage["cache_read_tokens"] > 0.9 * prompt, usage

"""The recording proxy of the llama-server tests, against the fake LLM server: bodies
recorded, SSE streamed through, ``/props`` held at 503 for a number of asks, ``max_tokens``
capped on the way."""

from __future__ import annotations

import json

import httpx

from tests.fake_llm import FakeLLM, Reply
from tests.llama_proxy import LOADING, llama_proxy


def test_the_proxy_records_forwards_and_holds_props() -> None:
    with FakeLLM() as llm, llama_proxy(llm.port) as (port, bodies, controls):
        llm.page("GET /props", {"default_generation_settings": {"n_ctx": 4096}})
        llm.script(Reply(text="hello there"))
        controls.props_status, controls.props_left, controls.max_tokens_cap = 503, 1, 8
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(timeout=30) as client:
            held = client.get(f"{base}/props")
            assert held.status_code == 503 and held.json() == LOADING
            assert client.get(f"{base}/props").json()["default_generation_settings"]["n_ctx"] == 4096
            body = {
                "model": "m",
                "messages": [{"role": "user", "content": "hi"}],
                "stream": True,
                "max_tokens": 99,
            }
            with client.stream("POST", f"{base}/v1/chat/completions", json=body) as response:
                text = "".join(response.iter_text())
        assert response.status_code == 200 and "hello there" in "".join(
            json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
            for line in text.splitlines()
            if line.startswith("data: {") and json.loads(line[6:])["choices"]
        )
        assert bodies == [body]  # what the client sent
        assert llm.requests[-1].body["max_tokens"] == 8  # what the server got
        assert controls.props_refused == 1
        assert controls.paths == ["GET /props", "GET /props", "POST /v1/chat/completions"]

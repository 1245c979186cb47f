"""Window discovery: what llama.cpp, vLLM, Ollama and LM Studio say about their window, asked
once per base URL + model over real HTTP (the fake server answers the side pages), cached on
disk, never holding up the first request for long."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from etcode.provider import discovery
from etcode.provider.discovery import (
    ServerFacts,
    ServerProbe,
    parse_lmstudio,
    parse_models,
    parse_ollama_show,
    parse_props,
    server_kind,
)
from etcode.provider.spec import ProviderSpec
from tests.fake_llm import FakeLLM

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "servers"
#: Long enough for a local answer on a loaded machine: these tests need the answer, not speed.
WAIT = 60.0


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture(autouse=True)
def fresh_memory():
    discovery.forget_all()
    yield
    discovery.forget_all()


def local_spec(llm: FakeLLM, provider: str = "local", model: str = "qwen") -> ProviderSpec:
    return ProviderSpec(provider, "openai", llm.openai_base_url, model, api_key="x")


# ---- reading real answers ---------------------------------------------------------------


def test_llama_props_recorded_from_the_real_server() -> None:
    facts = parse_props(fixture("llama-props.json"))
    assert facts == ServerFacts(
        2048, False, "llama.cpp", "/props", images=False, template="ChatML"
    )  # modalities.vision


def test_llama_models_list_has_the_running_window() -> None:
    data = fixture("llama-models.json")
    model = data["data"][0]["id"]
    facts = parse_models(data, model)
    assert facts is not None and facts.context == 2048  # meta.n_ctx, not n_ctx_train (8192)
    assert parse_models(data, "any-name") is not None  # a one-model server answers to any name


def test_vllm_ollama_lmstudio_answers() -> None:
    vllm = parse_models(fixture("vllm-models.json"), "Qwen/Qwen2.5-Coder-7B-Instruct")
    assert vllm is not None and (vllm.context, vllm.server) == (32768, "vllm")
    ollama = parse_ollama_show(fixture("ollama-show.json"))
    # num_ctx: the window it runs with; no "vision" capability: no images
    assert ollama == ServerFacts(8192, True, "ollama", "/api/show", images=False)
    lmstudio = parse_lmstudio(fixture("lmstudio-model.json"))
    assert lmstudio == ServerFacts(4096, True, "lmstudio", "/api/v0/models")  # the loaded window


def test_answers_without_a_window_say_nothing() -> None:
    assert parse_props({"build_info": "b1"}) is None
    assert parse_models({"data": [{"id": "a"}, {"id": "b"}]}, "c") is None
    assert parse_ollama_show({"model_info": {}}) is None
    assert parse_models("not json", "m") is None


def test_which_servers_are_asked() -> None:
    assert (
        server_kind(ProviderSpec("local", "openai", "http://127.0.0.1:8080/v1", "m")) == "openai-compatible"
    )
    assert server_kind(ProviderSpec("ollama", "openai", "http://127.0.0.1:11434/v1", "m")) == "ollama"
    assert server_kind(ProviderSpec("box", "openai", "http://gpu-box:1234/v1", "m")) == "lmstudio"
    assert server_kind(ProviderSpec("openai", "openai", "https://api.openai.com/v1", "m")) is None
    assert server_kind(ProviderSpec("anthropic", "anthropic", "https://api.anthropic.com", "m")) is None


# ---- asking over HTTP -----------------------------------------------------------------------


async def test_llama_cpp_is_asked_once_and_remembered_on_disk(llm: FakeLLM, isolated_env: Path) -> None:
    llm.page("GET /props", fixture("llama-props.json"))
    probe = ServerProbe(local_spec(llm), grace=WAIT)
    facts = await probe.settle()
    assert facts is not None and facts.context == 2048 and facts.tools is False
    assert llm.side_requests == ["GET /props"]  # one side request, no chat request
    assert llm.requests == []
    cache = json.loads((isolated_env / ".cache" / "etcode" / "servers.json").read_text())
    assert next(iter(cache.values()))["facts"]["context"] == 2048

    discovery.forget_all()  # a new process: only the disk cache is left
    again = ServerProbe(local_spec(llm))
    assert again.ready() == facts
    assert llm.side_requests == ["GET /props"]  # nobody was asked again


async def test_vllm_is_asked_for_its_model_list(llm: FakeLLM) -> None:
    llm.page("GET /v1/models", fixture("vllm-models.json"))
    facts = await ServerProbe(local_spec(llm, model="Qwen/Qwen2.5-Coder-7B-Instruct"), grace=WAIT).settle()
    assert facts is not None and facts.context == 32768
    assert llm.side_requests == ["GET /props", "GET /v1/models"]  # /props is llama.cpp's: a 404 here


async def test_ollama_and_lmstudio_use_their_own_endpoints(llm: FakeLLM) -> None:
    llm.page("POST /api/show", fixture("ollama-show.json"))
    ollama = await ServerProbe(local_spec(llm, provider="ollama"), grace=WAIT).settle()
    assert ollama is not None and ollama.context == 8192
    llm.page("GET /api/v0/models/qwen2.5-coder-7b-instruct", fixture("lmstudio-model.json"))
    lmstudio = await ServerProbe(
        local_spec(llm, provider="lmstudio", model="qwen2.5-coder-7b-instruct")
    ).settle()
    assert lmstudio is not None and lmstudio.context == 4096
    assert llm.side_requests == ["POST /api/show", "GET /api/v0/models/qwen2.5-coder-7b-instruct"]


async def test_a_slow_server_does_not_hold_up_the_first_request(llm: FakeLLM) -> None:
    llm.page("GET /props", fixture("llama-props.json"), delay=30)
    probe = ServerProbe(local_spec(llm), grace=0.3)
    started = time.monotonic()
    assert await probe.settle() is None
    assert time.monotonic() - started < 3  # waited about 0.3 s, not the server's 30 s
    await probe.aclose()  # nothing left running


async def test_a_server_that_cannot_be_reached_is_not_remembered(isolated_env: Path) -> None:
    spec = ProviderSpec("local", "openai", "http://127.0.0.1:9/v1", "m")  # port 9: nobody there
    probe = ServerProbe(spec, grace=5)
    assert await probe.settle() is None
    assert discovery.cached(spec) == (False, None)


async def test_an_answer_without_a_window_is_remembered_so_nobody_is_asked_again(llm: FakeLLM) -> None:
    await ServerProbe(local_spec(llm), grace=WAIT).settle()  # 404 for both pages
    assert llm.side_requests == ["GET /props", "GET /v1/models"]
    assert discovery.cached(local_spec(llm)) == (True, None)
    await ServerProbe(local_spec(llm), grace=WAIT).settle()
    assert len(llm.side_requests) == 2


def test_an_overflow_error_corrects_the_cached_window(llm: FakeLLM) -> None:
    spec = local_spec(llm)
    discovery.remember(spec, ServerFacts(8192, None, "llama.cpp", "/props"))
    discovery.correct_window(spec, 2048)
    discovery.forget_all()
    found, facts = discovery.cached(spec)
    assert found and facts is not None and facts.context == 2048 and facts.server == "llama.cpp"


def test_the_cache_expires(llm: FakeLLM) -> None:
    spec = local_spec(llm)
    discovery.remember(spec, ServerFacts(4096), now=time.time() - discovery.CACHE_TTL - 1)
    discovery.forget_all()
    assert discovery.cached(spec) == (False, None)


def test_the_wait_can_be_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "2.5")
    assert discovery.configured_grace() == 2.5
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "soon")
    assert discovery.configured_grace() == discovery.GRACE


def test_probe_runs_inside_an_event_loop_only_when_needed(llm: FakeLLM) -> None:
    async def begin() -> Any:
        return ServerProbe.begin(ProviderSpec("openai", "openai", llm.openai_base_url, "gpt-4o"))

    assert asyncio.run(begin()) is None
    assert llm.side_requests == []

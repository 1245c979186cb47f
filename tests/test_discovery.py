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
    assert parse_models("not json", "m") is None
    assert parse_models({"data": [{"id": "a"}, {"id": "b"}]}, "a") is None
    # a list without the model says what it lists instead (a warning names them)
    unlisted = parse_models({"data": [{"id": "a"}, {"id": "b"}]}, "c")
    assert unlisted is not None and unlisted.context is None and unlisted.listed == ("a", "b")


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
    again = ServerProbe(local_spec(llm), grace=WAIT)
    assert again.ready() == facts  # at once, before any request
    assert llm.side_requests == ["GET /props"]
    assert await again.settle() == facts  # and asked again in the background (a restart?)
    assert llm.side_requests == ["GET /props", "GET /props"]


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
        local_spec(llm, provider="lmstudio", model="qwen2.5-coder-7b-instruct"), grace=WAIT
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


# ---- what is remembered, what is asked again (issue 34) ------------------------------------

LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


def llama_props(n_ctx: int) -> dict[str, Any]:
    return {"default_generation_settings": {"n_ctx": n_ctx}, "chat_template_caps": {"supports_tools": True}}


async def test_a_401_is_not_remembered_the_next_run_asks_again(llm: FakeLLM) -> None:
    """A mistyped key: the server's 401 says nothing about its window. It used to be kept as
    "the server said nothing" for an hour (no window, no compaction, no tools warning)."""
    llm.page(
        "GET /props", {"error": {"message": "Invalid API Key", "type": "authentication_error"}}, status=401
    )
    assert await ServerProbe(local_spec(llm), grace=WAIT).settle() is None
    assert llm.side_requests == ["GET /props"]  # a 401 is not asked again in the run
    assert discovery.cached(local_spec(llm)) == (False, None)
    discovery.forget_all()  # the next run, with the key corrected
    llm.page("GET /props", llama_props(4096))
    facts = await ServerProbe(local_spec(llm), grace=WAIT).settle()
    assert facts is not None and facts.context == 4096
    assert llm.side_requests == ["GET /props", "GET /props"]


async def test_a_503_while_loading_is_asked_again_in_the_same_run(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """llama.cpp answers 503 "Loading model" on /props and /v1/models while it loads: the
    probe keeps asking (a growing pause) and ``ready()`` returns the facts once they come."""
    monkeypatch.setattr(discovery, "RETRY_FIRST", 0.05)
    llm.page("GET /props", LOADING, status=503).page("GET /v1/models", LOADING, status=503)
    probe = ServerProbe(local_spec(llm), grace=0.2)
    try:
        assert await probe.settle() is None  # the first request does not wait for the load
        while len(llm.side_requests) < 2:  # asked again, not remembered
            await asyncio.sleep(0.02)
        assert discovery.cached(local_spec(llm)) == (False, None)
        llm.page("GET /props", llama_props(2048))  # the model is loaded
        for _ in range(3000):  # the retry comes within a few seconds; 60 s at most
            if probe.ready() is not None:
                break
            await asyncio.sleep(0.02)
        facts = probe.ready()
        assert facts is not None and facts.context == 2048
        assert discovery.cached(local_spec(llm))[1] == facts  # a real answer: remembered
    finally:
        await probe.aclose()


async def test_the_retries_end_with_the_session(llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(discovery, "RETRY_FIRST", 0.01)
    llm.page("GET /props", LOADING, status=503).page("GET /v1/models", LOADING, status=503)
    probe = ServerProbe(local_spec(llm), grace=0)
    while len(llm.side_requests) < 2:
        await asyncio.sleep(0.02)
    await probe.aclose()
    asked = len(llm.side_requests)
    await asyncio.sleep(0.3)  # 30 retry pauses' worth: nothing asks any more
    assert len(llm.side_requests) == asked
    assert probe.ready() is None


async def test_a_404_is_remembered_as_no_such_page(llm: FakeLLM) -> None:
    """A proxy without /props and /v1/models: a real answer, kept, nobody asked again."""
    gone = {"error": {"message": "Not Found"}}
    llm.page("GET /props", gone, status=404).page("GET /v1/models", gone, status=404)
    await ServerProbe(local_spec(llm), grace=WAIT).settle()
    assert discovery.cached(local_spec(llm)) == (True, None)
    probe = ServerProbe(local_spec(llm), grace=WAIT)
    assert await probe.settle() is None
    assert llm.side_requests == ["GET /props", "GET /v1/models"]


async def test_a_restarted_server_with_a_larger_window_replaces_the_remembered_one(llm: FakeLLM) -> None:
    llm.page("GET /props", llama_props(2048))
    await ServerProbe(local_spec(llm), grace=WAIT).settle()
    llm.page("GET /props", llama_props(8192))  # restarted with -c 8192
    discovery.forget_all()
    probe = ServerProbe(local_spec(llm), grace=WAIT)
    assert probe.ready() is not None and probe.ready().context == 2048  # type: ignore[union-attr]
    facts = await probe.settle()
    assert facts is not None and facts.context == 8192
    discovery.forget_all()
    assert discovery.cached(local_spec(llm))[1] == facts  # on disk for the next run


async def test_an_overflow_window_stays_until_the_server_states_another(llm: FakeLLM) -> None:
    """/props said 8192, an overflow error proved 4096: a fresh /props saying 8192 again does
    not undo it (no overflow every run); a restart that states 16384 does."""
    spec = local_spec(llm)
    llm.page("GET /props", llama_props(8192))
    await ServerProbe(spec, grace=WAIT).settle()
    discovery.correct_window(spec, 4096)
    discovery.forget_all()
    kept = await ServerProbe(spec, grace=WAIT).settle()
    assert kept is not None and (kept.context, kept.source) == (4096, "overflow error")
    llm.page("GET /props", llama_props(16384))
    discovery.forget_all()
    grown = await ServerProbe(spec, grace=WAIT).settle()
    assert grown is not None and (grown.context, grown.source) == (16384, "/props")


def test_a_fresh_answer_keeps_what_only_a_run_learns_for_an_hour() -> None:
    learned = 1_000_000.0
    old = ServerFacts(
        4096, True, "llama.cpp", "/props", images=False, token_ratio=1.18, ratio_at=learned, images_at=learned
    )
    fresh = ServerFacts(8192, True, "llama.cpp", "/props")
    assert discovery.renewed(old, fresh, now=learned + 60) == ServerFacts(
        8192, True, "llama.cpp", "/props", images=False, token_ratio=1.18, ratio_at=learned, images_at=learned
    )
    assert discovery.renewed(old, fresh, now=learned + discovery.CACHE_TTL + 1) == fresh  # expired
    assert discovery.renewed(old, None) == old  # a proxy without the page: the old answer stays
    assert discovery.renewed(None, fresh) == fresh


async def test_an_answer_that_says_nothing_new_does_not_keep_the_old_one_alive(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/props said 4096, then the server became a proxy without it: each run still uses the
    old answer while it is fresh, but the renewal does not save it again with a new time, so
    an hour after it was given it is gone."""
    spec = local_spec(llm)
    llm.page("GET /props", {**llama_props(4096), "chat_template_caps": {"supports_tools": False}})
    await ServerProbe(spec, grace=WAIT).settle()
    gone = {"error": {"message": "Not Found"}}
    llm.page("GET /props", gone, status=404).page("GET /v1/models", gone, status=404)
    start = time.time()
    seen = []
    for run in (1, 2):  # one run every 50 minutes
        monkeypatch.setattr(discovery.time, "time", lambda at=start + run * 3000: at)
        discovery.forget_all()
        facts = await ServerProbe(spec, grace=WAIT).settle()
        seen.append(facts.context if facts is not None else None)
    assert seen == [4096, None]


@pytest.mark.parametrize("learn", ["images", "overflow"])
async def test_what_a_run_learned_expires_although_the_server_answers_every_run(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, learn: str
) -> None:
    """A refusal of images, a window an overflow error taught: renewed with each run's fresh
    answer, but only for an hour from when they were learned."""
    spec = local_spec(llm, model="qwen")
    llm.page("GET /v1/models", {"object": "list", "data": [{"id": "qwen", "max_model_len": 32768}]})  # vLLM
    await ServerProbe(spec, grace=WAIT).settle()
    if learn == "images":
        discovery.refuse_images(spec)
    else:
        discovery.correct_window(spec, 16384)
    start = time.time()
    seen = []
    for run in (1, 2):
        monkeypatch.setattr(discovery.time, "time", lambda at=start + run * 3000: at)
        discovery.forget_all()
        facts = await ServerProbe(spec, grace=WAIT).settle()
        assert facts is not None
        seen.append(facts.images if learn == "images" else facts.context)
    assert seen == ([False, None] if learn == "images" else [16384, 32768])


async def test_lm_studio_without_api_v0_that_lists_the_model_gets_no_warning(llm: FakeLLM) -> None:
    """An older LM Studio (no /api/v0): /v1/models lists the model, so it is served."""
    llm.listed_models = ["qwen2.5-coder-7b-instruct"]
    spec = local_spec(llm, provider="lmstudio", model="qwen2.5-coder-7b-instruct")
    facts = await ServerProbe(spec, grace=WAIT).settle()
    assert facts is None or facts.listed is None, facts
    assert llm.side_requests == [
        "GET /api/v0/models/qwen2.5-coder-7b-instruct",
        "GET /props",
        "GET /v1/models",
    ]
    llm.listed_models = ["qwen2.5-coder-7b-instruct", "llama-3.2-3b-instruct"]
    other = local_spec(llm, provider="lmstudio", model="gemma-3-4b")  # not there: still said
    unlisted = await ServerProbe(other, grace=WAIT).settle()
    assert unlisted is not None and unlisted.listed == tuple(llm.listed_models)
    assert discovery.cached(other) == (False, None)  # it may be loaded in a minute


async def test_a_llama_server_on_port_1234_is_asked_its_props(
    llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(discovery, "_LMSTUDIO_PORT", llm.port)  # as if started with --port 1234
    llm.page("GET /props", llama_props(4096))
    llm.listed_models = ["qwen"]
    facts = await ServerProbe(local_spec(llm, model="qwen"), grace=WAIT).settle()
    assert facts is not None and (facts.context, facts.server, facts.listed) == (4096, "llama.cpp", None)


# ---- Ollama's real window (issue 34) --------------------------------------------------------


def ollama_show(parameters: str, trained: int = 32768) -> dict[str, Any]:
    show = fixture("ollama-show.json")
    show["parameters"] = parameters
    show["model_info"] = {"qwen2.context_length": trained}
    return show


def test_ollama_without_num_ctx_runs_its_default_window() -> None:
    facts = parse_ollama_show(ollama_show('stop "<|im_end|>"'))
    assert facts is not None and facts.context == discovery.OLLAMA_DEFAULT_CONTEXT == 4096
    assert facts.trained == 32768  # the warning says what it could be
    small = parse_ollama_show(ollama_show("", trained=2048))
    assert small is not None and (small.context, small.trained) == (2048, None)  # nothing lost
    stated = parse_ollama_show(ollama_show("num_ctx 16384"))
    assert stated is not None and (stated.context, stated.trained) == (16384, None)


async def test_ollama_shows_the_window_of_a_loaded_model_in_api_ps(llm: FakeLLM) -> None:
    llm.page("POST /api/show", ollama_show('stop "<|im_end|>"'))
    spec = local_spec(llm, provider="ollama", model="qwen2.5-coder")
    unloaded = await ServerProbe(spec, grace=WAIT).settle()
    assert unloaded is not None and (unloaded.context, unloaded.trained) == (4096, 32768)
    assert llm.side_requests == ["POST /api/show", "GET /api/ps"]
    ps = {
        "models": [{"name": "qwen2.5-coder:latest", "model": "qwen2.5-coder:latest", "context_length": 8192}]
    }
    llm.page("GET /api/ps", ps)  # loaded with OLLAMA_CONTEXT_LENGTH=8192
    discovery.forget_all()
    loaded = await ServerProbe(spec, grace=WAIT).settle()
    assert loaded is not None and (loaded.context, loaded.source, loaded.trained) == (8192, "/api/ps", 32768)


async def test_an_ollama_model_not_pulled_yet_lists_what_is_there_and_is_not_remembered(llm: FakeLLM) -> None:
    llm.page("POST /api/show", {"error": "model 'qwen3' not found"}, status=404)
    llm.page("GET /api/tags", {"models": [{"name": "llama3.2:latest"}, {"name": "qwen2.5-coder:7b"}]})
    spec = local_spec(llm, provider="ollama", model="qwen3")
    facts = await ServerProbe(spec, grace=WAIT).settle()
    assert facts is not None and facts.listed == ("llama3.2:latest", "qwen2.5-coder:7b")
    assert discovery.cached(spec) == (False, None)  # pulled in a minute: asked again


def test_which_names_a_server_lists() -> None:
    gguf = "/models/Qwen2.5-Coder-7B-Instruct-Q4_K_M.gguf"
    assert discovery.lists_model([gguf], "qwen2.5-coder")  # a short name of the file
    assert discovery.lists_model([gguf], "Qwen2.5-Coder-7B-Instruct-Q4_K_M")
    assert not discovery.lists_model([gguf], "gemma-3-270m")
    facts = parse_props({**llama_props(2048), "model_alias": gguf, "model_path": gguf}, "gemma-3-270m")
    assert facts is not None and facts.listed == (gguf,)

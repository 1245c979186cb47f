"""Which models take images: the catalog's ``modalities.input``, a text-only model's requests
with a notice in place of each image (the session keeps the image), and an unknown model tried:
a refusal sends the same request again with the notices, warns once and is remembered with the
server's facts, so the next run sends none at once."""

from __future__ import annotations

import asyncio
import io
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from etcode.contract import events as ev
from etcode.contract.tools import ToolResult
from etcode.engine.images import ImageSupport, image_not_sent, replace_images
from etcode.engine.loop import AgentLoop
from etcode.engine.settings import LoopSettings
from etcode.provider import discovery
from etcode.provider.catalog import ModelCatalog
from etcode.provider.errors import ImagesRefusedError, ProviderError
from etcode.provider.http_errors import error_from_response
from etcode.provider.types import ImagePart, Message, TextPart, ToolResultPart
from etcode.session.store import SessionStore
from etcode.tools.base import tool
from etcode.tools.registry import ToolRegistry
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import FakeLLM, Fault, Recorded, Reply, image_parts, refusing_images
from tests.scripted import Answer, ScriptedProvider
from tests.test_fault_matrix import db_path, ok

NOTICE = "image not sent: model"


def png(width: int = 64, height: int = 48) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, "PNG")
    return buffer.getvalue()


def image_part(name: str = "screenshot.png", width: int = 64, height: int = 48) -> ImagePart:
    from etcode.provider.images import image_from_bytes

    return image_from_bytes(png(width, height), name)


# ---- the catalog ------------------------------------------------------------------------


def test_the_catalog_reads_modalities_input(tmp_path: Path) -> None:
    models = {
        "local": {
            "models": {
                "vision-7b": {"modalities": {"input": ["text", "image"], "output": ["text"]}},
                "coder-7b": {"modalities": {"input": ["text"], "output": ["text"]}},
                "plain": {"limit": {"context": 8192}},
            }
        }
    }
    path = tmp_path / "models.json"
    path.write_text(json.dumps(models))
    catalog = ModelCatalog.load(path=path)
    assert catalog.get("local", "vision-7b").takes_images is True
    assert catalog.get("local", "coder-7b").takes_images is False
    assert catalog.get("local", "plain").takes_images is None  # not stated: tried
    assert catalog.get("local", "never-heard-of").takes_images is None
    assert catalog.get("openai", "gpt-4o").takes_images is True  # the built-in table
    assert catalog.get("openai", "o3-mini").takes_images is False
    assert catalog.get("deepseek", "deepseek-chat").to_dict()["takes_images"] is False
    # the config's own entry wins
    overridden = catalog.get("local", "vision-7b", {"modalities": {"input": ["text"]}})
    assert overridden.takes_images is False


def test_the_config_states_it_and_a_wrong_shape_is_one_clear_error(project: Path, llm: FakeLLM) -> None:
    from etcode.config.loader import load_config

    write_config(project, llm, provider={"models": {"test-model": {"modalities": {"input": ["text"]}}}})
    config = load_config(project, project)
    assert ModelCatalog.load(config).get("fake", "test-model").takes_images is False
    write_config(project, llm, provider={"models": {"test-model": {"modalities": {"input": "image"}}}})
    proc = etcode("run", "hello", cwd=project)
    assert proc.returncode == 1 and "models.test-model.modalities.input" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


# ---- the request: notices in place of images -------------------------------------------


def test_replace_images_keeps_the_originals() -> None:
    image = image_part()
    user = Message("user", [TextPart("look"), image])
    tool = Message(
        "tool", [ToolResultPart("c1", "ReadFile", "read a.png", images=[image_part("a.png", 8, 8)])]
    )
    plain = Message.user("no image")
    out = replace_images([user, tool, plain], lambda i: image_not_sent("m", i))
    assert out[2] is plain
    assert out[0].images == [] and out[1].images == []
    assert (
        out[0].text == "look\n" + "image not sent: model m does not take images [image: screenshot.png 64×48]"
    )
    assert out[1].tool_results[0].output == (
        "read a.png\nimage not sent: model m does not take images [image: a.png 8×8]"
    )
    assert user.images == [image] and tool.images  # the session's messages are not changed


def loop_with(tmp_path: Path, provider: ScriptedProvider, images: ImageSupport, prompt: Message) -> AgentLoop:
    settings = LoopSettings(
        provider=provider,
        model="smol",
        system=["You are a test."],
        tools=ToolRegistry([]),
        directory=tmp_path,
        worktree=tmp_path,
        session_id="ses_test",
        images=images,
    )
    return AgentLoop(settings, [], prompt)


async def run(loop: AgentLoop) -> list[ev.Event]:
    return [event async for event in loop.events()]


async def test_a_text_only_model_gets_the_notice_and_the_history_keeps_the_image(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer("I cannot see it."))
    image = image_part()
    loop = loop_with(
        tmp_path, provider, ImageSupport("smol", False), Message("user", [TextPart("see? "), image])
    )
    events = await run(loop)
    assert not [e for e in events if isinstance(e, ev.WarningEvent)]
    (request,) = provider.requests
    sent = request.messages[0]
    assert sent.images == [] and "image not sent: model smol does not take images" in sent.text
    assert loop.messages[0].images == [image]  # only the request changed


@tool(read_only=True)
def screenshot() -> ToolResult:
    """Take a screenshot of the page."""
    return ToolResult("page.png (PNG)", images=[image_part("page.png", 32, 24)])


async def test_a_tools_image_becomes_a_line_of_its_result_for_a_text_only_model(tmp_path: Path) -> None:
    provider = ScriptedProvider(Answer(calls=[("screenshot", {})]), Answer("Described."))
    loop = loop_with(tmp_path, provider, ImageSupport("smol", False), Message.user("look"))
    loop.settings.tools.add(screenshot)
    await run(loop)
    result = provider.requests[1].messages[-1].tool_results[0]
    assert result.images is None
    assert (
        result.output
        == "page.png (PNG)\nimage not sent: model smol does not take images [image: page.png 32×24]"
    )
    assert loop.messages[2].tool_results[0].images  # the session keeps it


async def test_an_unknown_model_that_refuses_is_asked_again_without_images(tmp_path: Path) -> None:
    learned: list[bool] = []
    support = ImageSupport("smol", None, lambda: learned.append(True))
    refusal = ProviderError("local: 400 invalid_request_error: image input", kind="bad_request", status=400)
    provider = ScriptedProvider(Answer(error=refusal), Answer("ok"), Answer("again"))
    loop = loop_with(tmp_path, provider, support, Message("user", [TextPart("see? "), image_part()]))
    events = await run(loop)
    assert loop.result is not None and loop.result.stop_reason == "end_turn"
    first, second = provider.requests
    assert first.messages[0].images  # tried with the image
    assert second.messages[0].images == [] and NOTICE in second.messages[0].text
    warnings = [e.message for e in events if isinstance(e, ev.WarningEvent)]
    assert len(warnings) == 1 and "smol does not take images" in warnings[0]
    assert support.takes_images is False and learned == [True]
    # the next run of the session strips at once: one request, no second warning
    loop = AgentLoop(loop.settings, loop.messages, Message.user("and now?"))
    events = await run(loop)
    assert len(provider.requests) == 3 and NOTICE in provider.requests[2].messages[0].text
    assert not [e for e in events if isinstance(e, ev.WarningEvent)]


async def test_a_400_that_comes_back_without_the_images_was_not_about_them(tmp_path: Path) -> None:
    learned: list[bool] = []
    support = ImageSupport("smol", None, lambda: learned.append(True))
    bad = ProviderError("local: 400 invalid_request_error: bad tool schema", kind="bad_request", status=400)
    provider = ScriptedProvider(Answer(error=bad), Answer(error=bad), Answer("never"))
    loop = loop_with(tmp_path, provider, support, Message("user", [TextPart("see? "), image_part()]))
    await run(loop)
    assert loop.result is not None and loop.result.stop_reason == "error"
    assert len(provider.requests) == 2
    assert support.takes_images is None and learned == []  # unknown again, nothing remembered


async def test_a_resend_that_fails_otherwise_teaches_nothing(tmp_path: Path) -> None:
    """A bare 400, then a 503 on the request without images: nothing shows that the images
    were refused (the server was only busy); the model stays unknown, nothing is remembered."""
    learned: list[bool] = []
    support = ImageSupport("smol", None, lambda: learned.append(True))
    bad = ProviderError("local: 400 invalid_request_error: bad tool schema", kind="bad_request", status=400)
    busy = ProviderError("local: 503 overloaded", kind="server", status=503)
    provider = ScriptedProvider(Answer(error=bad), Answer(error=busy), Answer("never"))
    loop = loop_with(tmp_path, provider, support, Message("user", [TextPart("see? "), image_part()]))
    await run(loop)
    assert loop.result is not None and loop.result.stop_reason == "error"
    assert len(provider.requests) == 2
    assert support.takes_images is None and learned == []


async def test_a_refusal_the_server_states_is_kept_whatever_the_resend_meets(tmp_path: Path) -> None:
    learned: list[bool] = []
    support = ImageSupport("smol", None, lambda: learned.append(True))
    said = ImagesRefusedError("local: 500 server_error: image input is not supported", status=500)
    busy = ProviderError("local: 503 overloaded", kind="server", status=503)
    provider = ScriptedProvider(Answer(error=said), Answer(error=busy))
    loop = loop_with(tmp_path, provider, support, Message("user", [TextPart("see? "), image_part()]))
    await run(loop)
    assert support.takes_images is False and learned == [True]


async def test_an_interrupted_resend_teaches_nothing(tmp_path: Path) -> None:
    learned: list[bool] = []
    support = ImageSupport("smol", None, lambda: learned.append(True))
    bad = ProviderError("local: 400 invalid_request_error: bad tool schema", kind="bad_request", status=400)
    provider = ScriptedProvider(Answer(error=bad), Answer("slow words that never end", delay=60.0))
    loop = loop_with(tmp_path, provider, support, Message("user", [TextPart("see? "), image_part()]))
    task = asyncio.ensure_future(run(loop))
    for _ in range(2000):  # until the second request is under way (at most 20 s)
        if len(provider.requests) == 2 or task.done():
            break
        await asyncio.sleep(0.01)
    loop.interrupt()
    await asyncio.wait_for(task, 30)
    assert loop.result is not None and loop.result.stop_reason == "interrupted"
    assert len(provider.requests) == 2
    assert support.takes_images is None and learned == []


async def test_a_learned_refusal_expires_like_the_servers_other_facts(llm: FakeLLM) -> None:
    """``images: false`` learned from a refusal (no endpoint says it) lasts as long as the
    other facts kept of the server, not for ever: the model behind a local server's name
    may change (restarted with a vision projector)."""
    from etcode.provider.discovery import CACHE_TTL, ServerFacts, ServerProbe
    from etcode.provider.spec import ProviderSpec

    model = "Qwen/Qwen2.5-Coder-7B-Instruct"
    spec = ProviderSpec("local", "openai", llm.openai_base_url, model, api_key="x")
    discovery.forget_all()
    discovery.remember(spec, ServerFacts(32768, None, "vllm", "/v1/models", images=False))
    fresh = discovery.cached(spec)[1]
    assert fresh is not None and fresh.images is False  # kept while fresh
    discovery.remember(
        spec, ServerFacts(32768, None, "vllm", "/v1/models", images=False), now=time.time() - CACHE_TTL - 1
    )
    discovery.forget_all()
    fixtures = Path(__file__).resolve().parent / "fixtures" / "servers"
    llm.page("GET /v1/models", json.loads((fixtures / "vllm-models.json").read_text(encoding="utf-8")))
    facts = await ServerProbe(spec, grace=60.0).settle()
    assert facts is not None and facts.context == 32768
    assert facts.images is None  # tried again
    discovery.forget_all()


@pytest.mark.parametrize("takes", [None, True])
async def test_a_400_without_images_or_for_a_model_known_to_take_them_fails_as_before(
    tmp_path: Path, takes: bool | None
) -> None:
    refusal = ProviderError("local: 400 invalid_request_error: bad", kind="bad_request", status=400)
    provider = ScriptedProvider(Answer(error=refusal), Answer("never"))
    prompt = Message.user("no image") if takes is None else Message("user", [TextPart("x"), image_part()])
    support = ImageSupport("smol", takes)
    loop = loop_with(tmp_path, provider, support, prompt)
    events = await run(loop)
    assert loop.result is not None and loop.result.stop_reason == "error"
    assert len(provider.requests) == 1 and support.takes_images is takes
    assert not [e for e in events if isinstance(e, ev.WarningEvent)]


def test_llama_cpp_refusal_is_not_retried_and_is_told_apart() -> None:
    """llama.cpp answers a text-only model's image with a 500 (recorded from the real server)."""
    body = (
        '{"error":{"code":500,"message":"image input is not supported - hint: if this is unexpected, '
        'you may need to provide the mmproj","type":"server_error"}}'
    )
    err = error_from_response("local", 500, {}, body)
    assert isinstance(err, ImagesRefusedError) and not err.retryable and err.status == 500
    assert ImageSupport("m").refused(err, [Message("user", [image_part()])])
    plain = error_from_response("local", 500, {}, '{"error":{"message":"boom","type":"server_error"}}')
    assert not isinstance(plain, ImagesRefusedError) and plain.retryable
    assert not ImageSupport("m").refused(plain, [Message("user", [image_part()])])


# ---- through the real CLI -----------------------------------------------------------------


def session_with_image(project: Path, llm: FakeLLM) -> tuple[str, ImagePart]:
    """A stored session (made by a real run) whose history holds a user's screenshot."""
    llm.script(Reply(text="Hello."))
    ok(etcode("run", "hello", cwd=project))
    store = SessionStore.open(db_path())
    try:
        (info,) = store.list_sessions(None)
        image = image_part()
        store.append_messages(
            info.id,
            [
                Message("user", [TextPart("Here is the page:"), image]),
                Message("assistant", [TextPart("Noted.")]),
            ],
            turn=info.turn + 1,
        )
    finally:
        store.close()
    return info.id, image


def bodies(llm: FakeLLM) -> list[str]:
    return [r.text for r in llm.requests]


def test_a_text_only_catalog_model_gets_the_notice_through_the_cli(project: Path, llm: FakeLLM) -> None:
    (project / "models.json").write_text(
        json.dumps({"fake": {"models": {"test-model": {"modalities": {"input": ["text"]}}}}})
    )
    write_config(project, llm, model_catalog="models.json")
    _, image = session_with_image(project, llm)
    llm.script(refusing_images(Reply(text="I cannot see images.")))
    proc = etcode("run", "--format", "json", "-c", "what is wrong with it?", cwd=project)
    ok(proc)
    body = bodies(llm)[-1]
    assert image.data not in body and "image_url" not in body
    assert "image not sent: model test-model does not take images [image: screenshot.png 64×48]" in body
    # the notice is a line of its own after the user's words (OpenAI's wire joins the texts)
    contents = [m["content"] for m in llm.requests[-1].body["messages"] if m["role"] == "user"]
    assert (
        "Here is the page:\nimage not sent: model test-model does not take images "
        "[image: screenshot.png 64×48]"
    ) in contents
    assert '"warning"' not in proc.stdout
    # the session keeps the image: its bytes are in the store, not lost
    store = SessionStore.open(db_path())
    try:
        (info,) = store.list_sessions(None)
        assert [i.data for m in store.load_messages(info.id) for i in m.images] == [image.data]
    finally:
        store.close()


def servers_cache() -> dict[str, Any]:
    path = Path(os.environ["XDG_CACHE_HOME"]) / "etcode" / "servers.json"
    return json.loads(path.read_text(encoding="utf-8"))


#: How servers refuse a text-only model's image: OpenAI's 400, and llama.cpp's 500 (its body as
#: the real llama-server answers it: tests/test_llama_images.py asks it).
REFUSALS = {
    "openai-400": Fault(
        status=400, body="Invalid content type. image_url is only supported by certain models."
    ),
    "llama-500": Fault(
        status=500,
        body={
            "error": {
                "code": 500,
                "message": "image input is not supported - hint: if this is unexpected, you may need to "
                "provide the mmproj",
                "type": "server_error",
            }
        },
    ),
}


@pytest.mark.parametrize("refusal", list(REFUSALS))
def test_an_unknown_model_refusing_images_is_asked_again_and_remembered(
    project: Path, llm: FakeLLM, refusal: str
) -> None:
    write_config(project, llm)  # fake/test-model: in no catalog, a local server with nothing to say
    _, image = session_with_image(project, llm)
    llm.script(REFUSALS[refusal], refusing_images(Reply(text="Seen in words.")))
    proc = etcode("run", "--format", "json", "-c", "what is wrong with it?", cwd=project)
    ok(proc)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert len(warnings) == 1 and "test-model does not take images" in warnings[0], warnings
    first, second = bodies(llm)[-2:]  # at once: a 500 saying so is not retried
    assert NOTICE not in first and not [e for e in events if e["type"] == "retry"]
    assert image.data not in second and NOTICE in second
    assert json.loads(second)["messages"][1:] != json.loads(first)["messages"][1:]
    (facts,) = [entry["facts"] for entry in servers_cache().values()]
    assert facts["images"] is False

    # the next run sends the notice at once: one request, no warning
    discovery.forget_all()
    before = len(llm.requests)
    llm.script(refusing_images(Reply(text="Still words.")))
    proc = etcode("run", "--format", "json", "-c", "and now?", cwd=project)
    ok(proc)
    assert len(llm.requests) == before + 1
    assert NOTICE in bodies(llm)[-1] and image.data not in bodies(llm)[-1]
    assert '"warning"' not in proc.stdout


def test_the_fake_server_sees_images_in_either_wire() -> None:
    url = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    openai = {"messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, url]}]}
    anthropic = {
        "messages": [
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t", "content": [block]}, block],
            }
        ]
    }
    assert (image_parts(openai), image_parts(anthropic), image_parts({"messages": [{"content": "x"}]})) == (
        1,
        2,
        0,
    )
    entry = refusing_images(Reply(text="ok"))
    assert isinstance(entry(Recorded("/v1/chat/completions", {}, openai)), Fault)
    assert isinstance(entry(Recorded("/v1/chat/completions", {}, {"messages": []})), Reply)


def test_a_400_without_images_still_fails_the_run(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Fault(status=400, body="Invalid request."), Reply(text="never"))
    proc = etcode("run", "hello", cwd=project)
    assert proc.returncode == 1 and "400" in proc.stderr
    assert len(llm.requests) == 1


def test_a_text_only_models_window_counts_the_notices_not_the_images(project: Path, llm: FakeLLM) -> None:
    """Ten screenshots to a text-only model with an 8k window: the request carries ten
    one-line notices (a few hundred tokens), so it fits; counting them as images (~1100
    tokens each) refused it as too long."""
    write_config(
        project,
        llm,
        provider={"models": {"test-model": {"limit": {"context": 8192}, "modalities": {"input": ["text"]}}}},
    )
    flags: list[str] = []
    for index in range(10):
        (project / f"shot{index}.png").write_bytes(png(1500, 1000))
        flags += ["--image", f"shot{index}.png"]
    llm.script(refusing_images(Reply(text="I read the notes.")))
    proc = etcode("run", *flags, "what do these show?", cwd=project)
    ok(proc)
    (body,) = bodies(llm)
    assert body.count(NOTICE) == 10 and "image_url" not in body

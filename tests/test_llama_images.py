"""A text-only model on the real llama.cpp ``llama-server`` (SmolLM2-135M, no vision projector):
what it answers to an image (a 500 "image input is not supported", which etcode tells apart
from a server error and never retries), and that its ``/props`` (``modalities.vision: false``)
makes etcode send the notice in place of a stored image at once."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import httpx

from etcode.engine.images import ImageSupport
from etcode.provider.errors import ImagesRefusedError
from etcode.provider.http_errors import error_from_response
from etcode.provider.images import image_from_bytes
from etcode.provider.types import ImagePart, Message, TextPart
from etcode.session.store import SessionStore
from tests.cli_helpers import etcode
from tests.llama_servers import LLAMA_TEST, LLAMA_TIMEOUT
from tests.test_fault_matrix import db_path
from tests.test_image_models import png
from tests.test_llama_server import configure, events_of, patient_probe  # noqa: F401  (fixture)

pytestmark = LLAMA_TEST


def shot() -> ImagePart:
    return image_from_bytes(png(64, 48), "screenshot.png")


def test_llama_refuses_an_image_in_a_way_etcode_tells_apart(llama: Callable[..., int]) -> None:
    port = llama()
    image = shot()
    content = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}},
    ]
    body = {"model": "smollm2", "max_tokens": 4, "messages": [{"role": "user", "content": content}]}
    answer = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=120)
    assert answer.status_code in (400, 500), answer.text
    err = error_from_response("local", answer.status_code, answer.headers, answer.text)
    assert isinstance(err, ImagesRefusedError), str(err)
    assert not err.retryable
    assert ImageSupport("smollm2").refused(err, [Message("user", [TextPart("see"), image])])


def test_a_text_only_llama_model_gets_the_notice_at_once(project: Path, llama: Callable[..., int]) -> None:
    configure(project, llama(), max_tokens=8)
    first = etcode("run", "--format", "json", "Say hi.", cwd=project, timeout=LLAMA_TIMEOUT)
    assert events_of(first)[-1]["type"] == "result", first.stderr
    store = SessionStore.open(db_path())
    try:
        (info,) = store.list_sessions(None)
        store.append_messages(
            info.id,
            [Message("user", [TextPart("The page:"), shot()]), Message("assistant", [TextPart("Noted.")])],
            turn=info.turn + 1,
        )
    finally:
        store.close()
    proc = etcode(
        "run", "--format", "json", "-c", "What is wrong with it?", cwd=project, timeout=LLAMA_TIMEOUT
    )
    events = events_of(proc)
    result = events[-1]
    assert result["type"] == "result" and result["stop_reason"] in ("end_turn", "max_tokens"), proc.stdout[
        -2000:
    ]
    assert not [e for e in events if e["type"] in ("error", "retry")]
    assert not [e for e in events if e["type"] == "warning" and "images" in e["message"]]
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "etcode" / "servers.json"
    (entry,) = json.loads(cache.read_text(encoding="utf-8")).values()
    assert entry["facts"]["images"] is False  # llama.cpp's /props: modalities.vision


def test_an_unknown_llama_model_refusing_the_image_is_asked_again(
    project: Path,
    llama: Callable[..., int],
) -> None:
    """The server's facts were cached without ``images`` (an older etcode asked it): the run
    asks the server again in the background (issue 34), so ``/props``' ``modalities.vision``
    usually arrives before the first request and the image is never sent; when it does not
    (a loaded machine), the model is tried, llama.cpp's 500 refusal is sent again without the
    image in the same run with one warning. Either way ``images: false`` is cached."""
    port = llama()
    configure(project, port, max_tokens=8)
    first = etcode("run", "--format", "json", "Say hi.", cwd=project, timeout=LLAMA_TIMEOUT)
    assert events_of(first)[-1]["type"] == "result", first.stderr
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "etcode" / "servers.json"
    data = json.loads(cache.read_text(encoding="utf-8"))
    (key,) = data
    data[key]["facts"].pop("images")
    cache.write_text(json.dumps(data), encoding="utf-8")
    store = SessionStore.open(db_path())
    try:
        (info,) = store.list_sessions(None)
        store.append_messages(
            info.id,
            [Message("user", [TextPart("The page:"), shot()]), Message("assistant", [TextPart("Noted.")])],
            turn=info.turn + 1,
        )
    finally:
        store.close()
    proc = etcode(
        "run", "--format", "json", "-c", "What is wrong with it?", cwd=project, timeout=LLAMA_TIMEOUT
    )
    events = events_of(proc)
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] in ("end_turn", "max_tokens"), (
        proc.stdout
    )
    assert not [e for e in events if e["type"] in ("error", "retry")]
    warnings = [e["message"] for e in events if e["type"] == "warning" and "images" in e["message"]]
    facts = json.loads(cache.read_text(encoding="utf-8"))[key]["facts"]
    assert len(warnings) <= 1 and all("image input is not supported" in w for w in warnings), warnings
    assert facts["images"] is False

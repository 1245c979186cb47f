"""Images a user hands in: ``Agent.run(images=…)`` / ``Agent.stream(images=…)`` put them in
the user's message beside the task's text (real files made with Pillow, the scripted server),
and a path a terminal pastes for a dropped file is read back (``pasted_path``)."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

import pytest

from etcode import Agent
from etcode.prompt.image_inputs import pasted_path
from etcode.provider.images import ImageError, image_from_bytes
from etcode.provider.types import ImagePart, Message, TextPart
from tests.fake_llm import FakeLLM, Reply


def png(width: int, height: int, color: str = "red") -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, "PNG")
    return buffer.getvalue()


def jpeg(width: int, height: int) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), "blue").save(buffer, "JPEG")
    return buffer.getvalue()


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def _user(messages: list[Message]) -> Message:
    return next(m for m in messages if m.role == "user")


async def test_run_images_paths_bytes_and_parts_reach_the_user_message(llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "shot.png").write_bytes(png(64, 48))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "photo.jpg").write_bytes(jpeg(30, 20))
    ready = image_from_bytes(png(8, 8, "green"), "ready.png")
    raw = png(5, 7)
    llm.script(Reply(text="a red square"))
    agent = Agent("myvllm/vision", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    result = await agent.run(
        "what is in these?", images=["shot.png", tmp_path / "sub" / "photo.jpg", raw, ready]
    )
    await agent.aclose()
    assert result.text == "a red square"
    user = _user(result.messages)
    assert isinstance(user.parts[0], TextPart) and user.parts[0].text == "what is in these?"
    images = user.images
    assert [(i.name, i.media_type, i.width, i.height) for i in images] == [
        ("shot.png", "image/png", 64, 48),
        (str(tmp_path / "sub" / "photo.jpg"), "image/jpeg", 30, 20),
        ("image 3", "image/png", 5, 7),
        ("ready.png", "image/png", 8, 8),
    ]
    assert base64.b64decode(images[2].data) == raw  # small enough to go as it is
    assert images[2].sha256 == hashlib.sha256(raw).hexdigest()
    assert images[3] is ready
    assert len(llm.requests) == 1
    assert agent.history[0].images == images  # the conversation keeps them for the next turn


async def test_stream_images_and_a_bad_one_fails_before_any_request(llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "notes.png").write_text("not an image at all", encoding="utf-8")
    agent = Agent("myvllm/vision", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    with pytest.raises(ImageError, match=r"notes\.png: not a PNG, JPEG, GIF or WebP image"):
        async for _ in agent.stream("look", images=["notes.png"]):
            pass
    with pytest.raises(ImageError, match=r"missing\.png: No such file"):
        await agent.run("look", images=["missing.png"])
    with pytest.raises(TypeError, match="images: expected a path, bytes or an ImagePart, not int"):
        await agent.run("look", images=[3])
    await agent.aclose()
    assert llm.requests == []
    (tmp_path / "ok.gif").write_bytes(_gif())
    llm.script(Reply(text="a gif"))
    events = [event async for event in agent.stream("and this?", images=["ok.gif"])]
    await agent.aclose()
    assert events[-1].type == "done"
    assert [(i.media_type, i.width) for i in _user(agent.history).images] == [("image/gif", 3)]


def test_run_sync_takes_images(llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "a.webp").write_bytes(_webp())
    llm.script(Reply(text="ok"))
    agent = Agent("myvllm/vision", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    result = agent.run_sync("describe", images=["a.webp"])
    assert [i.media_type for i in _user(result.messages).images] == ["image/webp"]


def test_without_images_the_user_message_is_text_only(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(text="ok"))
    agent = Agent("myvllm/vision", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    result = agent.run_sync("hello", images=[])
    user = _user(result.messages)
    assert user.parts == [TextPart("hello")] and not any(isinstance(p, ImagePart) for p in user.parts)


def _gif() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("P", (3, 2)).save(buffer, "GIF")
    return buffer.getvalue()


def _webp() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "white").save(buffer, "WEBP")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("pasted", "path"),
    [
        ("/home/me/shot.png", "/home/me/shot.png"),
        ("  /home/me/shot.png \n", "/home/me/shot.png"),
        ("'/home/me/my shot.png'", "/home/me/my shot.png"),
        ('"/home/me/my shot.png"', "/home/me/my shot.png"),
        ("file:///home/me/my%20shot.png", "/home/me/my shot.png"),
        ("/home/me/my\\ screen\\ shot.png", "/home/me/my screen shot.png"),
        ("look at /home/me/shot.png", None),
        ("/a.png\n/b.png", None),
        ("", None),
    ],
)
def test_pasted_path(pasted: str, path: str | None) -> None:
    assert pasted_path(pasted) == path

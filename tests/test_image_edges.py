"""Edge cases of images handed in: one image given alone (not in a list) to ``Agent.run``,
and an ``@image`` mention of a file too big (or not a regular file) to read whole."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from etcode import Agent
from etcode.provider.types import ImagePart, Message
from tests.fake_llm import FakeLLM, Reply


def png(width: int, height: int, color: str = "red") -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def _user(messages: list[Message]) -> Message:
    return next(m for m in messages if m.role == "user")


@pytest.mark.parametrize("kind", ["str", "path", "bytes", "part"])
async def test_one_image_alone_is_one_image(llm: FakeLLM, tmp_path: Path, kind: str) -> None:
    """``agent.run(task, images="shot.png")``: a string is one path, bytes one file, as
    ``Agent(skills="folder")`` takes one folder."""
    from etcode.provider.images import image_from_bytes

    data = png(64, 48)
    (tmp_path / "shot.png").write_bytes(data)
    single: str | Path | bytes | ImagePart = {
        "str": "shot.png",
        "path": tmp_path / "shot.png",
        "bytes": data,
        "part": image_from_bytes(data, "shot.png"),
    }[kind]
    llm.script(Reply(text="a red square"))
    agent = Agent("myvllm/vision", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    try:
        result = await agent.run("what is this?", images=single)
    finally:
        await agent.aclose()
    assert result.text == "a red square"
    assert [(i.media_type, i.width, i.height) for i in _user(result.messages).images] == [
        ("image/png", 64, 48)
    ]
    assert len(llm.requests) == 1

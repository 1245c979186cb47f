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


def test_an_image_mention_of_a_huge_file_is_refused_without_reading_it(tmp_path: Path) -> None:
    """``@big.png`` naming a 600 MB file: one note, not 600 MB read into memory."""
    import resource

    from etcode.prompt.mentions import resolve_mentions
    from etcode.provider.images import MAX_FILE_READ

    big = tmp_path / "big.png"
    with big.open("wb") as handle:  # sparse: takes no disk space
        handle.write(png(8, 8))
        handle.truncate(600 * 1024 * 1024)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    (found,) = resolve_mentions("what is @big.png", tmp_path)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert found.image is None
    assert found.note == f"not attached: larger than {MAX_FILE_READ // (1024 * 1024)}.0 MB"
    assert grown < 100 * 1024 * 1024  # not the file's 600 MB (nor the cap's 64 MB)

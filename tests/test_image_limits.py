"""How many images one request carries: Anthropic refuses more than 100 ("Too much media: 0
document pages + 102 images > 100"), OpenAI-compatible servers have their own limits. Above
the limit the oldest images go as their labels (the session keeps them all), and a "too much
media" answer is never taken for a model that takes no images."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.engine.images import MAX_IMAGES, ImageSupport
from etcode.provider.http_errors import error_from_response
from etcode.provider.types import ImagePart, Message, TextPart, ToolResultPart
from tests.scripted import Answer, ScriptedProvider
from tests.test_image_models import image_part, loop_with, run

TOO_MUCH = (
    '{"type":"error","error":{"type":"invalid_request_error",'
    '"message":"Too much media: 0 document pages + 102 images > 100"}}'
)


def history(count: int) -> list[Message]:
    """``count`` turns, each a user's screenshot and the model's answer."""
    messages: list[Message] = []
    for index in range(count):
        messages.append(Message("user", [TextPart(f"shot {index}"), image_part(f"s{index}.png", 8, 8)]))
        messages.append(Message("assistant", [TextPart("seen")]))
    return messages


@pytest.mark.parametrize("family", ["anthropic", "openai"])
async def test_past_the_limit_the_oldest_images_go_as_labels(tmp_path: Path, family: str) -> None:
    limit = MAX_IMAGES[family]
    provider = ScriptedProvider(Answer("ok"))
    support = ImageSupport("claude-sonnet-4", True, max_images=limit)
    newest = Message("user", [TextPart("and these?"), image_part("new1.png", 8, 8), image_part("new2.png")])
    loop = loop_with(tmp_path, provider, support, newest)
    loop.messages[:0] = history(limit + 3)
    await run(loop)
    assert loop.result is not None and loop.result.stop_reason == "end_turn"
    (request,) = provider.requests
    sent = [image.name for message in request.messages for image in message.images]
    assert len(sent) == limit
    assert sent[-2:] == ["new1.png", "new2.png"]  # the newest are sent
    assert sent[0] == "s5.png"  # the five oldest (of limit + 5) are labels
    texts = [m.text for m in request.messages[:10]]
    assert texts[0] == "shot 0\n[image: s0.png 8×8]" and texts[8] == "shot 4\n[image: s4.png 8×8]"
    # the session keeps every image
    assert sum(len(m.images) for m in loop.messages) == limit + 5


def test_a_tool_results_images_are_capped_one_by_one() -> None:
    images = [image_part(f"p{i}.png", 8, 8) for i in range(4)]
    tool_message = Message("tool", [ToolResultPart("c1", "ReadManyFiles", "read 4 files", images=images)])
    (out,) = ImageSupport("m", True, max_images=2).prepare([tool_message])
    result = out.tool_results[0]
    assert [i.name for i in result.images or []] == ["p2.png", "p3.png"]
    assert result.output == "read 4 files\n[image: p0.png 8×8]\n[image: p1.png 8×8]"
    assert len(tool_message.tool_results[0].images or []) == 4  # the original is unchanged


def test_within_the_limit_the_messages_are_the_same_objects() -> None:
    messages = history(3)
    assert all(a is b for a, b in zip(ImageSupport("m", True).prepare(messages), messages, strict=True))


def test_the_images_bytes_in_one_request_are_capped_too() -> None:
    """Anthropic takes 32 MB per request: 100 images of 5 MB would never go."""
    from etcode.engine.images import MAX_IMAGE_BYTES

    data = "A" * (MAX_IMAGE_BYTES // 3)
    messages = [
        Message("user", [TextPart(f"{i}"), ImagePart("image/png", data, 8, 8, f"big{i}.png", "x")])
        for i in range(4)
    ]
    out = ImageSupport("m", True).prepare(messages)
    assert [len(m.images) for m in out] == [0, 1, 1, 1]


async def test_too_much_media_is_not_a_refusal_of_images(tmp_path: Path) -> None:
    """An unknown model answered "Too much media": its images are not refused, nothing is
    learned or remembered."""
    learned: list[bool] = []
    err = error_from_response("anthropic", 400, {}, TOO_MUCH)
    provider = ScriptedProvider(Answer(error=err), Answer("never"))
    support = ImageSupport("claude-new-model", None, lambda: learned.append(True))
    loop = loop_with(tmp_path, provider, support, Message("user", [TextPart("see"), image_part()]))
    await run(loop)
    assert loop.result is not None and loop.result.stop_reason == "error"
    assert len(provider.requests) == 1
    assert support.takes_images is None and learned == []

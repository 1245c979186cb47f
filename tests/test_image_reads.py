"""Images read by ReadFile and ReadManyFiles reach the model: the real `etcode run` process
against the fake LLM server in both wire formats, the image bytes decoded from the request."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from etcode.engine.context import TokenEstimator
from etcode.provider.images import MAX_BYTES, MAX_EDGE, image_tokens
from etcode.provider.types import ImagePart, Message, TextPart, ToolResultPart
from etcode.tools.base import ToolError
from etcode.tools.read_file import ReadFileParams, ReadFileTool
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.image_making import decode, gradient, noise, write_image
from tests.tool_support import make_ctx

WIRES = ["openai", "anthropic"]


def _tool_images(body: dict[str, Any], wire: str) -> dict[str, list[dict[str, Any]]]:
    """Each tool call's images in a request body, as ``{call id: [{"type", "data"}]}``,
    read the way each wire format carries them."""
    found: dict[str, list[dict[str, Any]]] = {}
    messages = body["messages"]
    if wire == "anthropic":
        for message in messages:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block["type"] == "tool_result" and isinstance(block["content"], list):
                    found[block["tool_use_id"]] = [
                        {"type": b["source"]["media_type"], "data": b["source"]["data"]}
                        for b in block["content"]
                        if b["type"] == "image"
                    ]
        return found
    for index, message in enumerate(messages):
        if message["role"] != "user" or not isinstance(message["content"], list):
            continue
        assert messages[index - 1]["role"] == "tool"  # right after the turn's tool messages
        current: list[dict[str, Any]] = []
        for part in message["content"]:
            if part["type"] == "text":
                call_id = part["text"].removeprefix("Images from tool call ").split(" ")[0]
                current = found.setdefault(call_id, [])
            else:
                head, _, data = part["image_url"]["url"].partition(",")
                current.append({"type": head.removeprefix("data:").removesuffix(";base64"), "data": data})
    return found


def _tool_texts(body: dict[str, Any], wire: str) -> dict[str, str]:
    """Each tool result's text in a request body."""
    texts: dict[str, str] = {}
    for message in body["messages"]:
        if wire == "openai" and message["role"] == "tool":
            texts[message["tool_call_id"]] = message["content"]
        elif wire == "anthropic" and isinstance(message["content"], list):
            for block in message["content"]:
                if block["type"] == "tool_result":
                    content = block["content"]
                    texts[block["tool_use_id"]] = content if isinstance(content, str) else content[0]["text"]
    return texts


@pytest.mark.parametrize("wire", WIRES)
def test_read_file_sends_a_png_and_a_downscaled_6000_by_4000_image(
    project: Path, llm: FakeLLM, wire: str
) -> None:
    write_config(project, llm, wire)
    small = write_image(project / "screenshot.png", gradient(1280, 720))
    write_image(project / "photo.png", gradient(6000, 4000))
    llm.script(
        Reply(
            calls=[
                Call("ReadFile", {"file_path": "screenshot.png"}, id="call_small"),
                Call("ReadFile", {"file_path": "photo.png"}, id="call_big"),
            ]
        ),
        Reply(text="A gradient."),
    )
    proc = etcode("run", "what is in the screenshots?", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Read image (1280×720)" in proc.stderr and "Read image (1568×1045)" in proc.stderr
    body = llm.requests[1].body
    images = _tool_images(body, wire)
    assert [i["type"] for i in images["call_small"]] == ["image/png"]
    assert base64.b64decode(images["call_small"][0]["data"]) == small  # sent as the file's own bytes
    [big] = images["call_big"]
    assert len(big["data"]) <= MAX_BYTES
    sent = decode(big["data"])
    assert sent.format == "PNG" and max(sent.size) <= MAX_EDGE and sent.size == (1568, 1045)
    texts = _tool_texts(body, wire)
    assert texts["call_small"].startswith("Image screenshot.png (1280×720, PNG, ")
    assert "downscaled from 6000×4000 PNG" in texts["call_big"]


@pytest.mark.parametrize("wire", WIRES)
def test_read_many_files_sends_text_and_images(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    (project / "notes.md").write_text("the diagram shows the flow\n", encoding="utf-8")
    write_image(project / "diagram.jpg", noise(2000, 1000), "JPEG", quality=90)
    llm.script(
        Reply(calls=[Call("ReadManyFiles", {"paths": ["notes.md", "diagram.jpg"]}, id="call_many")]),
        Reply(text="Seen."),
    )
    proc = etcode("run", "read the notes and the diagram", cwd=project)
    assert proc.returncode == 0, proc.stderr
    body = llm.requests[1].body
    [image] = _tool_images(body, wire)["call_many"]
    assert image["type"] == "image/jpeg"
    assert decode(image["data"]).size == (MAX_EDGE, 784)
    text = _tool_texts(body, wire)["call_many"]
    assert "the diagram shows the flow" in text
    assert "=== Image: diagram.jpg (1568×784, JPEG, " in text and "downscaled from 2000×1000 JPEG" in text


@pytest.mark.parametrize("wire", WIRES)
def test_a_truncated_png_is_a_one_line_error_result(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    data = write_image(project / "broken.png", noise(400, 300))
    (project / "broken.png").write_bytes(data[: len(data) // 2])
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "broken.png"}, id="call_broken")]),
        Reply(text="It is damaged."),
    )
    proc = etcode("run", "look at broken.png", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    body = llm.requests[1].body
    assert _tool_images(body, wire) == {}
    error = _tool_texts(body, wire)["call_broken"]
    assert error.startswith("broken.png: cannot read the image (") and "\n" not in error.strip()


@pytest.mark.parametrize("wire", WIRES)
def test_requests_without_images_keep_plain_string_content(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    (project / "notes.txt").write_text("plain text\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"}, id="call_text")]),
        Reply(text="Done."),
    )
    proc = etcode("run", "read notes.txt", cwd=project)
    assert proc.returncode == 0, proc.stderr
    body = llm.requests[1].body
    raw = json.dumps(body["messages"])
    assert "image_url" not in raw and '"type": "image"' not in raw
    if wire == "openai":
        assert all(isinstance(m["content"], (str, type(None))) for m in body["messages"])
    else:
        results = [b for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
        assert [type(b["content"]) for b in results] == [str]


async def test_read_file_knows_an_image_by_its_content_not_its_name(tmp_path: Path) -> None:
    write_image(tmp_path / "capture", gradient(300, 200), "WEBP")  # no suffix at all
    (tmp_path / "fake.png").write_text("not an image\n", encoding="utf-8")
    tool = ReadFileTool()
    result = await tool.run(ReadFileParams(file_path="capture"), make_ctx(tmp_path))
    assert result.images is not None and result.images[0].media_type == "image/jpeg"  # a WebP is re-encoded
    assert tool.result_summary({}, result) == "Read image (300×200)"
    with pytest.raises(ToolError, match="Cannot read binary file: fake.png"):
        await tool.run(ReadFileParams(file_path="fake.png"), make_ctx(tmp_path))


def test_the_window_counts_an_image_by_the_formula_not_its_base64() -> None:
    data = base64.b64encode(b"\x89PNG" + bytes(300_000)).decode()
    image = ImagePart("image/png", data, 1280, 720, "shot.png")
    plain = Message("tool", [ToolResultPart("c", "ReadFile", "Image shot.png")])
    with_image = Message("tool", [ToolResultPart("c", "ReadFile", "Image shot.png", images=[image])])
    user = Message("user", [TextPart("look"), image])
    for family in ("anthropic", "openai"):
        for rough in (False, True):
            est = TokenEstimator("gpt-4o", rough=rough, family=family)
            extra = est.message(with_image) - est.message(plain)
            assert extra == image_tokens(image, family), (family, rough)
            assert est.message(user) < 2000
    assert image_tokens(image, "anthropic") == 1229 and image_tokens(image, "openai") == 1105


def test_openai_history_reads_image_url_parts_back() -> None:
    from etcode.provider.anthropic import to_anthropic_messages
    from etcode.provider.openai_format import messages_from_openai, messages_to_openai
    from etcode.provider.types import ToolCallPart

    image = ImagePart("image/png", base64.b64encode(b"png bytes").decode(), 2, 2, "a.png")
    history = [
        Message("user", [TextPart("look at "), image, TextPart(" please")]),
        Message("assistant", [ToolCallPart("c1", "ReadFile", "{}"), ToolCallPart("c2", "ReadFile", "{}")]),
        Message(
            "tool",
            [
                ToolResultPart("c1", "ReadFile", "Image a.png", images=[image]),
                ToolResultPart("c2", "ReadFile", "plain"),
            ],
        ),
    ]
    wire = messages_to_openai(history)
    assert [m["role"] for m in wire] == ["user", "assistant", "tool", "tool", "user"]
    assert wire[0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{image.data}"},
    }
    assert wire[4]["content"][0] == {"type": "text", "text": "Images from tool call c1 (ReadFile):"}
    back = messages_from_openai(wire)
    assert len(back) == 3  # the images went back to their tool result
    assert [(p.media_type, p.data) for p in back[0].images] == [("image/png", image.data)]
    assert back[2].tool_results[0].images is not None and back[2].tool_results[0].images[0].data == image.data
    assert back[2].tool_results[1].images is None
    assert messages_to_openai(back) == wire
    # a user's own message of text and a web URL stays a user message
    theirs = messages_from_openai(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}]
    )
    assert theirs[0].parts == [TextPart("[image: https://x/y.png]")]
    blocks = to_anthropic_messages(history)[0]["content"]
    assert blocks[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": image.data},
    }


async def test_an_image_read_asks_the_read_permission_first(tmp_path: Path) -> None:
    from etcode.tools.base import PermissionDenied

    write_image(tmp_path / "private.png", gradient(50, 50))
    asked: list[list[str]] = []

    async def deny(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        asked.append(patterns)
        raise PermissionDenied("denied by rule")

    with pytest.raises(PermissionDenied):
        await ReadFileTool().run(
            ReadFileParams(file_path="private.png"), make_ctx(tmp_path, check_permission=deny)
        )
    assert asked == [["private.png"]]


async def test_read_many_files_caps_the_images_and_reports_a_damaged_one(tmp_path: Path) -> None:
    from etcode.tools.read_many_files import MAX_IMAGES, ReadManyFilesParams, ReadManyFilesTool

    names = [f"shot{i:02}.png" for i in range(MAX_IMAGES + 2)]
    for name in names:
        write_image(tmp_path / name, gradient(40, 30))
    data = write_image(tmp_path / "broken.png", noise(100, 100))
    (tmp_path / "broken.png").write_bytes(data[:500])
    tool = ReadManyFilesTool()
    result = await tool.run(ReadManyFilesParams(paths=[*names, "broken.png"]), make_ctx(tmp_path))
    assert result.images is not None and [i.name for i in result.images] == names[:MAX_IMAGES]
    errors = {e["path"]: e["error"] for e in result.data["errors"]}
    assert errors["broken.png"].startswith("cannot read the image (")
    assert errors[names[-1]] == f"Skipped: image (at most {MAX_IMAGES} per call; read it alone)"
    assert tool.result_summary({}, result).startswith(f"Read {MAX_IMAGES} files (")
    assert f"{MAX_IMAGES} images)" in tool.result_summary({}, result)


@pytest.mark.parametrize("wire", WIRES)
def test_a_run_without_images_never_imports_pillow(project: Path, llm: FakeLLM, wire: str) -> None:
    from tests.cli_helpers import etcode_imports

    write_config(project, llm, wire)
    (project / "notes.txt").write_text("text\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]), Reply(text="Done."))
    proc, imported = etcode_imports("run", "read notes.txt", cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "● ReadFile (notes.txt)" in proc.stderr and "etcode.provider.images" in imported
    assert not any(name == "PIL" or name.startswith("PIL.") for name in imported)


def test_json_lines_describe_an_image_the_same_way_for_both_tools(project: Path, llm: FakeLLM) -> None:
    """``--format json``: ReadFile's and ReadManyFiles' ``data`` say what an image is in one
    shape (the type, the size sent and the file's own), never its bytes."""
    write_config(project, llm)
    write_image(project / "big.png", gradient(6000, 4000))
    original = len((project / "big.png").read_bytes())
    llm.script(
        Reply(
            calls=[
                Call("ReadFile", {"file_path": "big.png"}, id="call_one"),
                Call("ReadManyFiles", {"paths": ["big.png"]}, id="call_many"),
            ]
        ),
        Reply(text="Seen."),
    )
    proc = etcode("run", "--format", "json", "look", cwd=project)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    results = {e["call_id"]: e["data"] for e in events if e["type"] == "tool_result"}
    expected = {
        "mediaType": "image/png",
        "width": 1568,
        "height": 1045,
        "originalWidth": 6000,
        "originalHeight": 4000,
        "originalBytes": original,
    }
    assert results["call_one"]["image"] == expected
    assert results["call_many"]["files"][0]["image"] == expected
    assert "base64" not in proc.stdout and max(len(line) for line in proc.stdout.splitlines()) < 2000


async def test_read_many_files_reads_no_image_past_the_cap(tmp_path: Path) -> None:
    """Past MAX_IMAGES an image file is skipped without being read (60 images of 15 MB were
    all kept in memory): a FIFO named like an image there is never opened; an image known by
    its content (no suffix) counts as one."""
    import os

    from etcode.tools.read_many_files import MAX_IMAGES, ReadManyFilesParams, ReadManyFilesTool

    write_image(tmp_path / "0capture", gradient(30, 20), "WEBP")  # an image by its content
    names = [f"a{i:02}.png" for i in range(MAX_IMAGES)]
    for name in names:
        write_image(tmp_path / name, gradient(40, 30))
    (tmp_path / "notes.txt").write_text("text is read as ever\n", encoding="utf-8")
    for fifo in ("z0.png", "z1.png"):
        os.mkfifo(tmp_path / fifo)
    tool = ReadManyFilesTool()
    paths = ["0capture", *names, "notes.txt", "z*.png"]  # a glob takes a FIFO too
    params = ReadManyFilesParams(paths=paths, use_default_excludes=False)
    result = await tool.run(params, make_ctx(tmp_path))
    assert result.images is not None
    assert [i.name for i in result.images] == ["0capture", *names[: MAX_IMAGES - 1]]
    errors = {e["path"]: e["error"] for e in result.data["errors"]}
    reason = f"image (at most {MAX_IMAGES} per call; read it alone)"
    assert errors == {names[-1]: f"Skipped: {reason}"}  # named: its skip is an error entry
    skipped = {e["path"]: e["reason"] for e in result.data["skipped"]}
    assert skipped == {names[-1]: reason, "z0.png": reason, "z1.png": reason}  # never opened
    assert "text is read as ever" in result.output

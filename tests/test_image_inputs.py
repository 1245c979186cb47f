"""Images a user hands in: ``Agent.run(images=…)`` / ``Agent.stream(images=…)`` put them in
the user's message beside the task's text (real files made with Pillow, the scripted server),
and a path a terminal pastes for a dropped file is read back (``pasted_path``)."""

from __future__ import annotations

import base64
import hashlib
import io
from pathlib import Path

import pytest
from PIL import Image

from etcode import Agent
from etcode.prompt.image_inputs import pasted_path
from etcode.provider.images import ImageError, image_from_bytes
from etcode.provider.types import ImagePart, Message, TextPart
from tests.fake_llm import FakeLLM, Reply, user_images


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


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_run_images_paths_bytes_and_parts_reach_the_user_message(
    llm: FakeLLM, tmp_path: Path, wire: str
) -> None:
    (tmp_path / "shot.png").write_bytes(png(64, 48))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "photo.jpg").write_bytes(jpeg(30, 20))
    ready = image_from_bytes(png(8, 8, "green"), "ready.png")
    raw = png(5, 7)
    llm.script(Reply(text="a red square"))
    model, base_url = (
        ("myvllm/vision", llm.openai_base_url)
        if wire == "openai"
        else ("anthropic/claude-sonnet-4", llm.anthropic_base_url)
    )
    agent = Agent(model, base_url=base_url, api_key="k", directory=tmp_path)
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
    sent = user_images(llm.requests[0].body)  # the request carries them, bytes and all
    assert sent[0] == ("image/png", (tmp_path / "shot.png").read_bytes())
    assert sent[1] == ("image/jpeg", (tmp_path / "sub" / "photo.jpg").read_bytes())
    assert sent[2] == ("image/png", raw)
    assert sent[3] == ("image/png", base64.b64decode(ready.data)) and len(sent) == 4
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
    assert [(i.media_type, i.width) for i in _user(agent.history).images] == [
        ("image/png", 3)
    ]  # a GIF is re-encoded


def test_run_sync_takes_images(llm: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "a.webp").write_bytes(_webp())
    llm.script(Reply(text="ok"))
    agent = Agent("myvllm/vision", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    result = agent.run_sync("describe", images=["a.webp"])
    assert [i.media_type for i in _user(result.messages).images] == ["image/jpeg"]  # a WebP is re-encoded


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


# ---- etcode run --image / @image.png ----------------------------------------------------


def _session_images(proc_stdout: str) -> list[ImagePart]:
    """The images of the stored session's first user message (``--format json``'s session)."""
    import json

    from etcode.session.store import SessionStore

    session_id = json.loads(proc_stdout.strip().splitlines()[-1])["session_id"]
    store = SessionStore.open()
    try:
        return _user(store.load_messages(session_id)).images
    finally:
        store.close()


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_run_image_flags_and_mention(project: Path, llm: FakeLLM, wire: str) -> None:
    from tests.cli_helpers import etcode, write_config

    write_config(project, llm, wire)
    (project / "shot.png").write_bytes(png(120, 80))
    (project / "docs").mkdir()
    (project / "docs" / "diagram.jpg").write_bytes(jpeg(40, 30))
    (project / "page.webp").write_bytes(_webp())
    llm.script(Reply(text="three pictures"))
    proc = etcode(
        "run", "--format", "json", "--image", "shot.png", "--image=docs/diagram.jpg",
        "compare with @page.webp please", cwd=project,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    images = _session_images(proc.stdout)
    assert [(i.name, i.width, i.height) for i in images] == [
        ("shot.png", 120, 80),
        ("docs/diagram.jpg", 40, 30),
        ("page.webp", 4, 4),
    ]
    assert base64.b64decode(images[0].data) == (project / "shot.png").read_bytes()
    # the model's request carries the three, as the files' own bytes, in the user's message
    # the model's request carries the three in the user's message: the PNG and the JPEG as the
    # files' own bytes, the WebP re-encoded (servers like llama.cpp cannot decode WebP)
    sent_images = user_images(llm.requests[0].body)
    assert sent_images[:2] == [
        ("image/png", (project / "shot.png").read_bytes()),
        ("image/jpeg", (project / "docs" / "diagram.jpg").read_bytes()),
    ]
    assert sent_images[2][0] in ("image/png", "image/jpeg")
    with Image.open(io.BytesIO(sent_images[2][1])) as webp_sent:
        assert webp_sent.size == (4, 4)
    sent = str(llm.requests[0].body)
    assert "compare with @page.webp please" in sent  # the text keeps the mention
    assert '<file path="page.webp" note="image, attached: 4×4" />' in sent
    # the JSON lines carry no image bytes
    assert "base64" not in proc.stdout and images[0].data[:40] not in proc.stdout


def test_run_image_with_piped_stdin(project: Path, llm: FakeLLM) -> None:
    from tests.cli_helpers import etcode, write_config

    write_config(project, llm)
    (project / "shot.png").write_bytes(png(10, 10))
    llm.script(Reply(text="seen"))
    proc = etcode("run", "--format", "json", "--image", "shot.png", cwd=project, stdin="the error log\n")
    assert proc.returncode == 0, proc.stderr
    assert "the error log" in str(llm.requests[0].body)
    assert [i.name for i in _session_images(proc.stdout)] == ["shot.png"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (None, "error: --image missing.png: No such file or directory"),
        (b"hello, not an image", "error: --image missing.png: not a PNG, JPEG, GIF or WebP image"),
        (b"\x89PNG\r\n\x1a\n broken", "error: --image missing.png: cannot read the image"),
    ],
)
def test_run_bad_image_flag_is_a_usage_error_before_any_request(
    project: Path, llm: FakeLLM, make: bytes | None, message: str
) -> None:
    from tests.cli_helpers import etcode, write_config

    write_config(project, llm)
    if make is not None:
        (project / "missing.png").write_bytes(make)
    proc = etcode("run", "--image", "missing.png", "look", cwd=project)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr
    assert llm.requests == []


def test_run_mention_of_a_broken_image_warns_and_runs(project: Path, llm: FakeLLM) -> None:
    from tests.cli_helpers import etcode, write_config

    write_config(project, llm)
    (project / "fake.png").write_text("text", encoding="utf-8")
    llm.script(Reply(text="ok"))
    proc = etcode("run", "--format", "json", "what about @fake.png and @absent.png", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "warning: @fake.png: not attached: not a PNG, JPEG, GIF or WebP image" in proc.stderr
    assert "absent.png" not in proc.stderr  # a mention that names no file stays text
    assert _session_images(proc.stdout) == []


async def test_the_workflow_agent_says_its_turns_take_no_images(llm: FakeLLM, tmp_path: Path) -> None:
    from tests.test_workflow import plan, report, verdict

    (tmp_path / "shot.png").write_bytes(png(10, 10))
    llm.script(plan(("1", "Look", "high")), report("looked"), verdict(True, summary="Looked."))
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", agent="workflow", directory=tmp_path)
    warnings = [e.message async for e in agent.stream("look", images=["shot.png"]) if e.type == "warning"]
    await agent.aclose()
    assert warnings == ["images not sent: the workflow agent's turns take text only"]


def test_a_run_without_images_imports_no_imaging(project: Path, llm: FakeLLM) -> None:
    from tests.cli_helpers import etcode_imports, write_config

    write_config(project, llm)
    (project / "shot.png").write_bytes(png(10, 10))
    llm.script(Reply(text="done"))
    proc, imported = etcode_imports("run", "say done", cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "etcode.cli.run" in imported  # the measurement itself works
    lean = {"PIL", "etcode.provider.images", "etcode.prompt.image_inputs"}
    assert sorted(name for name in imported if name.split(".")[0] in lean or name in lean) == []
    llm.script(Reply(text="done"))
    proc, imported = etcode_imports("run", "tell @nobody about @shot.png.txt", cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "etcode.cli.run" in imported and "PIL" not in imported  # mentions of no image: no Pillow
    llm.script(Reply(text="seen"))
    proc, imported = etcode_imports("run", "--image", "shot.png", "look", cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {"PIL", "etcode.provider.images"} <= imported


def test_a_custom_commands_image_mention_goes_as_an_image(project: Path, llm: FakeLLM) -> None:
    """Through the Python Agent (its own expansion) and through ``etcode run`` (the CLI's)."""
    from tests.cli_helpers import etcode, write_config

    write_config(project, llm)
    commands = project / ".etcode" / "commands"
    commands.mkdir(parents=True)
    (commands / "look.md").write_text("Look at @shot.png and $ARGUMENTS", encoding="utf-8")
    (project / "shot.png").write_bytes(png(30, 20))
    (project / "b.png").write_bytes(png(5, 5))
    llm.script(Reply(text="api"), Reply(text="cli"))
    agent = Agent(directory=project)
    result = agent.run_sync("/look @b.png")
    assert [(i.name, i.width) for i in _user(result.messages).images] == [("shot.png", 30), ("b.png", 5)]
    proc = etcode("run", "--format", "json", "/look", "@b.png", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert [(i.name, i.width) for i in _session_images(proc.stdout)] == [("shot.png", 30), ("b.png", 5)]
    assert "Look at @shot.png and @b.png" in str(llm.requests[1].body)

"""A session with images resumed through the real CLI: ``etcode run --continue`` and
``--session ID`` send the stored images again with their own bytes (read back from the
session's image files), a tool's image included, and a text-only model resumed on that session
gets the notice in their place, never the bytes."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from etcode.session import image_files
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply, image_parts, refusing_images, user_images
from tests.image_making import decode, gradient, write_image
from tests.test_fault_matrix import db_path, ok

WIRES = ["openai", "anthropic"]


def _session_id(stdout: str) -> str:
    return str(json.loads(stdout.strip().splitlines()[-1])["session_id"])


def _tool_image_data(body: dict[str, Any]) -> list[str]:
    """The base64 data of every image a request carries outside the users' own top-level blocks
    and data URLs: Anthropic ``tool_result`` contents, OpenAI's images after a tool's turn
    (which are top-level too: they are counted in ``user_images`` of their message)."""
    found: list[str] = []
    for message in body["messages"]:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                found += [b["source"]["data"] for b in block["content"] if b["type"] == "image"]
            elif block.get("type") == "image_url":
                found.append(block["image_url"]["url"].partition(",")[2])
            elif block.get("type") == "image":
                found.append(block["source"]["data"])
    return found


@pytest.mark.parametrize("wire", WIRES)
def test_a_resumed_session_sends_its_images_again(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    shot = write_image(project / "shot.png", gradient(1280, 720))
    write_image(project / "big.png", gradient(6000, 4000))
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "big.png"}, id="call_big")]),
        Reply(text="A gradient, twice."),
    )
    first = etcode("run", "--format", "json", "--image", "shot.png", "what is in these?", cwd=project)
    ok(first)
    sid = _session_id(first.stdout)
    assert user_images(llm.requests[0].body) == [("image/png", shot)]
    # the files are gone from the project: the session's own copies are what is sent again
    (project / "shot.png").unlink()
    (project / "big.png").unlink()
    stored = sorted(p.name for p in image_files.folder_of(db_path()).iterdir())
    assert len(stored) == 2, stored

    for how in (["--continue"], ["--session", sid]):
        before = len(llm.requests)
        llm.script(Reply(text="Still a gradient."))
        proc = etcode("run", "--format", "json", *how, "which is lighter?", cwd=project)
        ok(proc)
        assert len(llm.requests) == before + 1
        body = llm.requests[-1].body
        assert user_images(body, index=0) == [("image/png", shot)], how  # the user's, byte for byte
        assert user_images(body) == []  # the follow-up question has none of its own
        assert "which is lighter?" in json.dumps(body["messages"][-1])
        datas = _tool_image_data(body)
        assert len(datas) == 2 and image_parts(body) == 2, how
        assert decode(datas[1]).size == (1568, 1045)  # the tool's downscaled image, as first sent
        assert base64.b64decode(datas[0]) == shot


def test_a_text_only_model_resumed_on_it_gets_the_notice(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    shot = write_image(project / "shot.png", gradient(320, 200))
    llm.script(Reply(text="A gradient."))
    first = etcode("run", "--format", "json", "--image", "shot.png", "what is this?", cwd=project)
    ok(first)
    sid = _session_id(first.stdout)
    assert user_images(llm.requests[0].body) == [("image/png", shot)]

    (project / "models.json").write_text(
        json.dumps({"fake": {"models": {"test-model": {"modalities": {"input": ["text"]}}}}})
    )
    write_config(project, llm, model_catalog="models.json")
    llm.script(refusing_images(Reply(text="I cannot see it.")))
    proc = etcode("run", "--format", "json", "--session", sid, "and now?", cwd=project)
    ok(proc)
    body = llm.requests[-1].body
    raw = llm.requests[-1].text
    assert image_parts(body) == 0 and base64.b64encode(shot).decode()[:200] not in raw
    assert "image not sent: model test-model does not take images [image: shot.png 320×200]" in raw
    assert '"warning"' not in proc.stdout


def test_images_handed_to_a_text_only_model_are_said_not_sent(project: Path, llm: FakeLLM) -> None:
    """``--image`` to a model the catalog says takes text only: the model reads the notice and
    the user is told on stderr, one line, that the image did not go (never a silent loss)."""
    (project / "models.json").write_text(
        json.dumps({"fake": {"models": {"test-model": {"modalities": {"input": ["text"]}}}}})
    )
    write_config(project, llm, model_catalog="models.json")
    write_image(project / "shot.png", gradient(320, 200))
    llm.script(refusing_images(Reply(text="I cannot see it.")))
    proc = etcode("run", "--image", "shot.png", "what is this?", cwd=project)
    ok(proc)
    assert image_parts(llm.requests[-1].body) == 0
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: images not sent: model test-model does not take images"], proc.stderr


@pytest.mark.parametrize("wire", WIRES)
def test_a_6000_by_4000_image_handed_in_is_downscaled(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    write_image(project / "big.png", gradient(6000, 4000))
    llm.script(Reply(text="Seen."))
    ok(etcode("run", "--image", "big.png", "what is this?", cwd=project))
    [(media_type, data)] = user_images(llm.requests[0].body)
    sent = decode(base64.b64encode(data).decode())
    assert media_type == f"image/{sent.format.lower()}" and sent.size == (1568, 1045)

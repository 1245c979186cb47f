"""Images from an editor over ACP: ``promptCapabilities.image`` is offered, an ``image``
block of ``session/prompt`` (base64 data and mimeType) reaches the user's message as an image,
and one that is no image is the prompt's error, not the agent's end."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, image_block, text_block

from etcode.provider.types import Message
from tests.acp_support import RecordingClient, acp_agent, capabilities, step
from tests.cli_helpers import write_config
from tests.fake_llm import FakeLLM, Reply, user_images
from tests.test_image_inputs import jpeg, png


def _stored_user_messages(session_id: str) -> list[Message]:
    from etcode.session.store import SessionStore

    store = SessionStore.open()
    try:
        return [m for m in store.load_messages(session_id) if m.role == "user"]
    finally:
        store.close()


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_image_blocks_reach_the_users_message(llm: FakeLLM, project: Path, wire: str) -> None:
    write_config(project, llm, wire)
    shot, photo = png(200, 100), jpeg(16, 12)
    llm.script(Reply(text="two pictures"), Reply(text="still here"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        init = await step(
            conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        )
        assert init.agent_capabilities.prompt_capabilities.image is True
        assert init.agent_capabilities.prompt_capabilities.audio is False
        session_id = (await step(conn.new_session(cwd=str(project), mcp_servers=[]))).session_id
        prompt = [
            text_block("what is wrong here?"),
            image_block(base64.b64encode(shot).decode(), "image/png", uri=f"file://{project}/shot.png"),
            image_block(base64.b64encode(photo).decode(), "image/jpeg"),
        ]
        response = await step(conn.prompt(session_id=session_id, prompt=prompt))
        assert response.stop_reason == "end_turn"
        # a broken image is this prompt's error; the session goes on
        broken = image_block(base64.b64encode(b"\x89PNG\r\n\x1a\nbroken").decode(), "image/png")
        with pytest.raises(RequestError) as raised:
            await step(conn.prompt(session_id=session_id, prompt=[text_block("and this?"), broken]))
        assert "image 1: cannot read the image" in str(raised.value.data)
        not_base64 = image_block("%%% not base64 %%%", "image/png")
        with pytest.raises(RequestError) as raised:
            await step(conn.prompt(session_id=session_id, prompt=[text_block("and this?"), not_base64]))
        assert "image 1: the image block's data is not base64" in str(raised.value.data)
        response = await step(conn.prompt(session_id=session_id, prompt=[text_block("still there?")]))
        assert response.stop_reason == "end_turn"
    loaded = RecordingClient()  # session/load shows the images by their labels
    async with acp_agent(loaded, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        await step(conn.load_session(cwd=str(project), session_id=session_id, mcp_servers=[]))
    replayed = loaded.message_text("user_message_chunk")
    assert "what is wrong here?" in replayed
    assert "[image: shot.png 200×100]" in replayed and "[image: image 2 16×12]" in replayed
    assert len(llm.requests) == 2
    sent = str(llm.requests[0].body)
    assert "what is wrong here?" in sent
    assert '<file path="shot.png" note="image, attached: 200×100" />' in sent
    assert '<file path="image 2" note="image, attached: 16×12" />' in sent
    # the editor's bytes reach the model in the user's message; the next turn's message has none
    assert user_images(llm.requests[0].body) == [("image/png", shot), ("image/jpeg", photo)]
    assert user_images(llm.requests[1].body) == []
    assert user_images(llm.requests[1].body, index=0) == [("image/png", shot), ("image/jpeg", photo)]
    first, second = _stored_user_messages(session_id)
    assert [(i.name, i.media_type, i.width, i.height) for i in first.images] == [
        ("shot.png", "image/png", 200, 100),
        ("image 2", "image/jpeg", 16, 12),
    ]
    assert first.images[0].sha256 == hashlib.sha256(shot).hexdigest()
    assert second.images == [] and "still there?" in second.text


async def test_a_commands_image_mention_and_the_editors_image_both_go(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    commands = project / ".etcode" / "commands"
    commands.mkdir(parents=True)
    (commands / "compare.md").write_text("Compare @design.png with the screenshot.", encoding="utf-8")
    (project / "design.png").write_bytes(png(40, 30))
    llm.script(Reply(text="compared"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        session_id = (await step(conn.new_session(cwd=str(project), mcp_servers=[]))).session_id
        shot = image_block(base64.b64encode(png(20, 10)).decode(), "image/png")
        response = await step(conn.prompt(session_id=session_id, prompt=[text_block("/compare"), shot]))
        assert response.stop_reason == "end_turn"
    (user,) = _stored_user_messages(session_id)
    assert [(i.name, i.width) for i in user.images] == [("design.png", 40), ("image 1", 20)]
    assert "Compare @design.png with the screenshot." in user.text

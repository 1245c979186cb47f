"""``etcode acp``: one model request per prompt however big, retries told to the editor,
errors whose message names what is at fault, and the model chosen from the editor
(session config options: mode and model). Driven by the ACP SDK's client over real pipes, with the fake LLM."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION, RequestError, text_block
from acp.schema import EmbeddedResourceContentBlock, TextResourceContents

from tests.acp_support import RecordingClient, acp_agent, capabilities, step
from tests.cli_helpers import write_config
from tests.fake_llm import FakeLLM, Fault, Reply

MIB = 1024 * 1024


async def _start(conn, project: Path):
    await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
    return await step(conn.new_session(cwd=str(project), mcp_servers=[]))


#: A server's overflow error that names no window (only the server knows it is too long).
OVERFLOW = Fault(
    status=400,
    body={"message": "Input is too long for the requested model.", "code": "context_length_exceeded"},
)


async def test_a_5_mib_prompt_is_sent_once(llm: FakeLLM, project: Path) -> None:
    """After a short exchange, a 5 MiB paste the server refuses as too long is not sent again
    after summarising the exchange (which cannot make room): one request of that size (and
    the title request, bounded)."""
    write_config(project, llm, small_model="fake/test-model")
    llm.script(*[lambda request: OVERFLOW if len(request.raw) > MIB else Reply(text="ok")] * 6)
    big = "\n".join(f"line {n}: " + "x" * 60 for n in range(5 * MIB // 70))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session = await _start(conn, project)
        await step(conn.prompt(session_id=session.session_id, prompt=[text_block("hello there")]))
        with pytest.raises(RequestError) as refused:
            await step(conn.prompt(session_id=session.session_id, prompt=[text_block(big)]))
    sizes = [len(request.raw) for request in llm.requests]
    assert len([size for size in sizes if size > MIB]) == 1, sizes
    assert len(sizes) == 3, sizes  # the title, the first prompt, the paste: no summary, no retry
    message = str(refused.value)
    assert "newest message does not fit" in message and "cannot make room" in message, message
    assert "Input is too long" in message and "\n" not in message


async def test_a_refused_paste_is_not_kept_and_the_session_goes_on(llm: FakeLLM, project: Path) -> None:
    """The paste refused as too long leaves the history: the next prompts are answered and
    no later request (nor a summary) carries it again — as text or as an attached file —
    nor after the session is loaded again."""
    write_config(project, llm, small_model="fake/test-model")
    llm.script(*[lambda request: OVERFLOW if len(request.raw) > MIB else Reply(text="ok")] * 8)
    big = "\n".join(f"line {n}: " + "x" * 60 for n in range(5 * MIB // 70))
    attached = EmbeddedResourceContentBlock(
        type="resource", resource=TextResourceContents(uri=f"file://{project}/big.log", text=big)
    )
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session = await _start(conn, project)
        sid = session.session_id
        await step(conn.prompt(session_id=sid, prompt=[text_block("hello there")]))
        for paste in ([text_block(big)], [text_block("look at this log"), attached]):
            with pytest.raises(RequestError):
                await step(conn.prompt(session_id=sid, prompt=paste))
            answered = await step(conn.prompt(session_id=sid, prompt=[text_block("a small question")]))
            assert answered.stop_reason == "end_turn"
    async with acp_agent(RecordingClient(), project) as (conn, _proc):
        await step(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities()))
        await step(conn.load_session(cwd=str(project), session_id=sid, mcp_servers=[]))
        answered = await step(conn.prompt(session_id=sid, prompt=[text_block("after a reload")]))
        assert answered.stop_reason == "end_turn"
    sizes = [len(request.raw) for request in llm.requests]
    assert len([size for size in sizes if size > MIB]) == 2, sizes  # each paste once, then never
    assert max(sizes) < 6 * MIB, sizes  # an attached file's text goes out once
    assert len(sizes) == 7, sizes  # title, hello, paste, question, paste, question, after a reload
    assert "look at this log" not in llm.requests[-1].raw.decode()


async def test_a_retry_after_429_is_told_to_the_editor_before_the_answer(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(Fault(status=429, headers={"retry-after": "1"}), Reply(text="the answer"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session = await _start(conn, project)
        response = await step(conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]))
    assert response.stop_reason == "end_turn" and len(llm.requests) == 2
    kinds = client.kinds()
    said = [u.content.text for u in client.of_kind("agent_thought_chunk")]
    assert any("Rate limited (429); retrying in 1.0 s (attempt 2 of 3)" in text for text in said), said
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk"), kinds
    assert client.message_text() == "the answer"


async def test_errors_name_what_is_at_fault_in_their_message(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session = await _start(conn, project)
        with pytest.raises(RequestError) as unopened:
            await step(conn.prompt(session_id="ses_abc123", prompt=[text_block("hi")]))
        with pytest.raises(RequestError) as unstored:
            await step(conn.load_session(cwd=str(project), session_id="ses_abc123", mcp_servers=[]))
        with pytest.raises(RequestError) as mode:
            await step(conn.set_session_mode(session_id=session.session_id, mode_id="nope"))
        with pytest.raises(RequestError) as schema:  # the SDK's own check of the params
            await step(conn._conn.send_request("session/prompt", {"sessionId": session.session_id}))
        with pytest.raises(RequestError) as method:
            await step(conn._conn.send_request("session/nope", {}))
    assert unopened.value.code == unstored.value.code == -32602
    assert str(unopened.value).startswith("unknown session ses_abc123: not open here"), unopened.value
    assert str(unstored.value) == "unknown session ses_abc123: no stored session has this id"
    assert "ses_abc123" in json.dumps(unstored.value.data)  # the details stay in data
    assert str(mode.value).startswith("unknown mode nope; modes: build"), mode.value
    assert str(schema.value) == "Invalid params: prompt: Field required", schema.value
    assert str(method.value) == "Method not found: session/nope", method.value


async def test_the_editor_chooses_the_model_among_those_configured(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, provider={"models": {"test-model": {}, "other-model": {}}})
    llm.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session = await _start(conn, project)
        [mode, model] = session.config_options
        assert (mode.id, mode.category, mode.current_value) == ("mode", "mode", "build")
        assert "plan" in [option.value for option in mode.options]
        assert (model.id, model.category, model.current_value) == ("model", "model", "fake/test-model")
        offered = [option.value for option in model.options]
        assert offered[:2] == ["fake/test-model", "fake/other-model"], offered
        await step(conn.prompt(session_id=session.session_id, prompt=[text_block("first")]))
        changed = await step(
            conn.set_config_option(config_id="model", session_id=session.session_id, value="fake/other-model")
        )
        assert changed.config_options[1].current_value == "fake/other-model"
        await step(conn.prompt(session_id=session.session_id, prompt=[text_block("second")]))
        with pytest.raises(RequestError) as unknown:
            await step(
                conn.set_config_option(config_id="model", session_id=session.session_id, value="fake/nope")
            )
        planning = await step(
            conn.set_config_option(config_id="mode", session_id=session.session_id, value="plan")
        )
        assert [option.current_value for option in planning.config_options] == ["plan", "fake/other-model"]
        # session/load offers the same choices; a loaded session starts with the configured model
        loaded = await step(
            conn.load_session(cwd=str(project), session_id=session.session_id, mcp_servers=[])
        )
        assert [o.value for o in loaded.config_options[1].options] == offered
        assert loaded.config_options[1].current_value == "fake/test-model"
        await step(conn.prompt(session_id=session.session_id, prompt=[text_block("third")]))
    assert [r.body["model"] for r in llm.requests] == ["test-model", "other-model", "test-model"]
    assert unknown.value.code == -32602
    assert str(unknown.value).startswith("unknown model fake/nope; models: fake/test-model, fake/other-model")


async def test_older_editors_set_the_model_with_session_set_model(llm: FakeLLM, project: Path) -> None:
    """ACP's unstable ``session/set_model`` and ``models`` (which the SDK no longer has), as
    editors built before session config options send and read them: raw JSON-RPC."""
    write_config(project, llm, provider={"models": {"test-model": {}, "other-model": {}}})
    llm.script(Reply(text="one"))
    client = RecordingClient()
    answers: list[dict] = []
    async with acp_agent(client, project) as (conn, _proc):
        conn._conn.add_observer(lambda event: answers.append(event.message))
        session = await _start(conn, project)
        [new] = [a for a in answers if isinstance(a.get("result"), dict) and "sessionId" in a["result"]]
        models = new["result"]["models"]
        assert models["currentModelId"] == "fake/test-model"
        ids = [model["modelId"] for model in models["availableModels"]]
        assert ids[:2] == ["fake/test-model", "fake/other-model"], ids
        params = {"sessionId": session.session_id, "modelId": "fake/other-model"}
        await step(conn._conn.send_request("session/set_model", params))
        await step(conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]))
        with pytest.raises(RequestError) as unknown:
            params = {"sessionId": session.session_id, "modelId": "fake/nope"}
            await step(conn._conn.send_request("session/set_model", params))
    assert [request.body["model"] for request in llm.requests] == ["other-model"]
    assert str(unknown.value).startswith("unknown model fake/nope; models: fake/test-model")


async def test_a_model_chosen_during_a_turn_applies_from_the_next(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm, provider={"models": {"test-model": {}, "other-model": {}}})
    llm.script(Fault(hang=True), Reply(text="next"))
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        session = await _start(conn, project)
        sid = session.session_id
        running = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("first")]))
        while not llm.requests:  # the first turn has reached the model
            await asyncio.sleep(0.02)
        chosen = await step(
            conn.set_config_option(config_id="model", session_id=sid, value="fake/other-model")
        )
        planned = await step(conn.set_config_option(config_id="mode", session_id=sid, value="plan"))
        assert [o.current_value for o in planned.config_options] == ["plan", "fake/other-model"]
        assert chosen.config_options[1].current_value == "fake/other-model"
        await conn.cancel(session_id=sid)
        assert (await step(running)).stop_reason == "cancelled"
        await step(conn.prompt(session_id=sid, prompt=[text_block("second")]))
    assert [request.body["model"] for request in llm.requests] == ["test-model", "other-model"]
    tools = [tool["function"]["name"] for tool in llm.requests[-1].body["tools"]]
    assert "Edit" not in tools  # the plan agent's turn


async def test_a_prompt_sent_right_after_choosing_a_model_waits_for_the_switch(
    llm: FakeLLM, project: Path
) -> None:
    """An editor sends session/set_config_option and, without waiting for its answer, the
    prompt: the switch closes the session's agent, so the turn must not begin on it (it
    failed with 'the turn ended: error'). Every turn is answered and kept."""
    write_config(project, llm, provider={"models": {"test-model": {}, "other-model": {}}})
    llm.script(*[Reply(text=f"answer {n}") for n in range(4)])
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        sid = (await _start(conn, project)).session_id
        for n, model in enumerate(["fake/other-model", "fake/test-model", "fake/other-model"]):
            chosen = asyncio.ensure_future(
                conn.set_config_option(config_id="model", session_id=sid, value=model)
            )
            answered = await step(conn.prompt(session_id=sid, prompt=[text_block(f"turn {n}")]))
            assert answered.stop_reason == "end_turn"
            assert (await step(chosen)).config_options[1].current_value == model
        await step(conn.prompt(session_id=sid, prompt=[text_block("last")]))
    last = json.dumps(llm.requests[-1].body["messages"])
    assert all(f"turn {n}" in last and f"answer {n}" in last for n in range(3)), last
    assert llm.requests[-1].body["model"] == "other-model"

"""Skills through ``etcode acp`` (the ACP SDK's client side, real pipes, the fake LLM
server): a published skill in the prompt, loaded by the ``Skill`` tool (a ``read`` in the
editor), and its bundled file read through the editor's ``fs/read_text_file``."""

from __future__ import annotations

import shutil
from pathlib import Path

from acp import PROTOCOL_VERSION, text_block

from tests.acp_support import RecordingClient, acp_agent, capabilities, step
from tests.cli_helpers import write_config
from tests.fake_llm import Call, FakeLLM, Reply

FIXTURES = Path(__file__).parent / "fixtures" / "skills"


async def test_a_skill_loaded_and_its_file_read_through_the_editor(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    folder = project / ".agents" / "skills" / "internal-comms"
    shutil.copytree(FIXTURES / "internal-comms", folder)
    example = folder / "examples" / "3p-updates.md"
    llm.script(
        Reply(calls=[Call("Skill", {"name": "internal-comms"}, id="call_skill")]),
        Reply(calls=[Call("ReadFile", {"file_path": str(example)}, id="call_read")]),
        Reply(text="Drafted the 3P update."),
    )
    client = RecordingClient()
    async with acp_agent(client, project) as (conn, _proc):
        await step(
            conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities(fs=True))
        )
        session = await step(conn.new_session(cwd=str(project), mcp_servers=[]))
        response = await step(conn.prompt(session_id=session.session_id, prompt=[text_block("a 3P update")]))
    assert response.stop_reason == "end_turn"
    assert "- internal-comms: A set of resources" in "\n".join(
        m["content"] for m in llm.requests[0].body["messages"] if m["role"] == "system"
    )
    skill_call = next(u for u in client.of_kind("tool_call") if u.tool_call_id == "call_skill")
    assert skill_call.kind == "read" and "internal-comms" in skill_call.title
    assert client.tool_updates("call_skill")[-1].status == "completed"
    loaded = llm.requests[1].body["messages"][-1]["content"]
    assert f"Its folder is {folder}:" in loaded and "- examples/3p-updates.md" in loaded
    assert ("read", str(example.resolve())) in [(kind, str(Path(p).resolve())) for kind, p in client.fs_calls]
    assert "3P" in llm.requests[2].body["messages"][-1]["content"]  # the file, as the editor served it

"""Skills in the Python API: ``Agent(skills=[...])``, ``etcode.discover_skills``, the lean
prompt's bounded list, a Task subagent's skills, ``allowed-tools`` that grant nothing, and a
project's skill folder outside it needing trust — against the fake LLM server."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import etcode
from etcode import Agent
from etcode.config.trust import UntrustedConfigError
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import git_init

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
REAL = ["brand-guidelines", "internal-comms", "webapp-testing"]


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def agent_for(llm: FakeLLM, directory: Path, **settings: Any) -> Agent:
    return Agent("fake/m", base_url=llm.openai_base_url, api_key="k", directory=directory, **settings)


async def test_agent_skills_and_discover_skills(llm: FakeLLM, tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    shutil.copytree(FIXTURES / "webapp-testing", project / ".claude" / "skills" / "webapp-testing")
    mine = tmp_path / "mine"
    shutil.copytree(FIXTURES / "internal-comms", mine / "internal-comms")
    shutil.copytree(FIXTURES / "brand-guidelines", mine / "brand-guidelines")
    found = etcode.discover_skills(project, skills=[mine])
    assert [(s.name, s.source) for s in found] == [
        ("brand-guidelines", "api"),
        ("internal-comms", "api"),
        ("webapp-testing", "project"),
    ]
    assert isinstance(found[0], etcode.Skill)
    assert [s.name for s in etcode.discover_skills(project)] == ["webapp-testing"]
    llm.script(Reply(calls=[Call("Skill", {"name": "internal-comms"})]), Reply(text="written"))
    agent = agent_for(llm, project, skills=[str(mine)])
    result = await agent.arun("write a 3P update")
    assert [s.name for s in await agent.available_skills()] == [
        "brand-guidelines",
        "internal-comms",
        "webapp-testing",
    ]
    await agent.aclose()
    assert result.text == "written"
    system = system_text(llm.requests[0].body)
    for name in REAL:
        assert f"\n- {name}: " in system
    loaded = llm.requests[1].body["messages"][-1]["content"]
    assert f"Its folder is {mine / 'internal-comms'}:" in loaded and "- examples/3p-updates.md" in loaded


async def test_the_lean_prompt_lists_a_bounded_number(llm: FakeLLM, tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    (project / "etcode.json").write_text(json.dumps({"prompt": "lean"}))
    for index in range(20):
        folder = project / ".etcode" / "skills" / f"s{index:02d}"
        folder.mkdir(parents=True)
        long = "First sentence here. " + "x" * 900
        (folder / "SKILL.md").write_text(f"---\nname: s{index:02d}\ndescription: {long}\n---\nbody\n")
    llm.script(Reply(text="ok"))
    agent = agent_for(llm, project)
    await agent.arun("hi")
    await agent.aclose()
    system = system_text(llm.requests[0].body)
    assert system.count("\n- s") == 12 and "- s11: First sentence here.\n" in system
    assert '- … and 8 more: call Skill with name "?" for the full list.' in system
    assert "x" * 50 not in system


async def test_a_subagent_has_its_parents_skills(llm: FakeLLM, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    shutil.copytree(FIXTURES / "brand-guidelines", mine / "brand-guidelines")
    llm.script(
        Reply(
            calls=[
                Call(
                    "Task", {"description": "style", "prompt": "apply the brand", "subagent_type": "general"}
                )
            ]
        ),
        Reply(text="child done"),
        Reply(text="parent done"),
    )
    agent = agent_for(llm, git_init(tmp_path / "project"), skills=[mine])
    await agent.arun("style the slides")
    await agent.aclose()
    child = llm.requests[1].body
    assert "Task" not in tool_names(child) and "Skill" in tool_names(child)
    assert "- brand-guidelines: Applies Anthropic's official brand colors" in system_text(child)


async def test_allowed_tools_grant_nothing(llm: FakeLLM, tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    folder = project / ".claude" / "skills" / "cleanup"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: cleanup\ndescription: Removes build output.\nallowed-tools: Bash(rm:*) Bash\n---\nRun rm -rf build.\n"
    )
    (project / "etcode.json").write_text(json.dumps({"permission": {"bash": "ask"}}))
    (project / "build").mkdir()
    llm.script(
        Reply(calls=[Call("Skill", {"name": "cleanup"})]),
        Reply(calls=[Call("Bash", {"command": "rm -rf build"})]),
        Reply(text="could not"),
    )
    agent = agent_for(llm, project, trust=True)  # the project's ask rule is the user's choice here
    await agent.arun("clean up")
    await agent.aclose()
    loaded = llm.requests[1].body["messages"][-1]["content"]
    assert "allowed-tools (Bash(rm:*), Bash)" in loaded and "not a permission" in loaded
    denied = llm.requests[2].body["messages"][-1]["content"]
    assert "not allowed" in denied.lower(), denied  # refused: no permission from the skill
    assert (project / "build").is_dir()


async def test_a_projects_skill_folder_outside_it_needs_trust(llm: FakeLLM, tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    shutil.copytree(FIXTURES / "webapp-testing", tmp_path / "shared" / "webapp-testing")
    (project / "etcode.json").write_text(json.dumps({"skills": {"paths": ["../shared"]}}))
    agent = agent_for(llm, project)
    with pytest.raises(UntrustedConfigError, match=r"skills\.paths\[0\]"):
        await agent.arun("hi")
    await agent.aclose()
    assert not llm.requests
    llm.script(Reply(text="ok"))
    trusted = agent_for(llm, project, trust=True)
    await trusted.arun("hi")
    await trusted.aclose()
    assert "- webapp-testing: " in system_text(llm.requests[0].body)


async def test_every_place_reaches_the_agent(llm: FakeLLM, tmp_path: Path) -> None:
    """The runtime's quick check that a skill folder exists knows every place discovery reads."""
    import os

    home = Path(os.environ["HOME"])
    project = git_init(tmp_path / "project")
    sub = project / "services" / "api"
    sub.mkdir(parents=True)
    places = {
        "user-etcode": Path(os.environ["XDG_CONFIG_HOME"]) / "etcode" / "skills",
        "user-claude": home / ".claude" / "skills",
        "root-etcode": project / ".etcode" / "skills",
        "root-claude": project / ".claude" / "skills",
        "sub-agents": sub / ".agents" / "skills",
    }
    for name, where in places.items():
        (where / name).mkdir(parents=True)
        (where / name / "SKILL.md").write_text(f"---\nname: {name}\ndescription: From {name}.\n---\nbody\n")
        llm.script(Reply(text="ok"))
        agent = agent_for(llm, sub)
        await agent.arun("hi")
        await agent.aclose()
        assert f"- {name}: From {name}." in system_text(llm.requests[-1].body), name
        shutil.rmtree(where)


async def test_a_skill_only_the_user_loads(llm: FakeLLM, tmp_path: Path) -> None:
    """``disable-model-invocation: true`` (Claude Code's): not in the prompt nor the Skill
    tool; the agent still has it (``/skills NAME`` loads it by hand)."""
    project = git_init(tmp_path / "project")
    deploy = project / ".claude" / "skills" / "deploy"
    deploy.mkdir(parents=True)
    (deploy / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploys to production.\ndisable-model-invocation: true\n---\nSteps.\n"
    )
    llm.script(Reply(text="ok"))
    agent = agent_for(llm, project)
    await agent.arun("hi")
    assert [s.name for s in await agent.available_skills()] == ["deploy"]
    await agent.aclose()
    body = llm.requests[0].body
    assert "Skill" not in tool_names(body) and "deploy" not in system_text(body)
    shutil.copytree(FIXTURES / "brand-guidelines", project / ".claude" / "skills" / "brand-guidelines")
    llm.script(Reply(calls=[Call("Skill", {"name": "deploy"})]), Reply(text="no such skill"))
    agent = agent_for(llm, project)
    await agent.arun("deploy it")
    await agent.aclose()
    assert "- brand-guidelines: " in system_text(llm.requests[1].body)
    assert "deploy" not in system_text(llm.requests[1].body)
    answer = llm.requests[2].body["messages"][-1]["content"]
    assert 'No skill is named "deploy"' in answer and "- brand-guidelines: " in answer


def test_discover_skills_leaves_a_projects_folder_outside_it_out_unless_trusted(tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    shutil.copytree(FIXTURES / "webapp-testing", tmp_path / "shared" / "webapp-testing")
    (project / "etcode.json").write_text(json.dumps({"skills": {"paths": ["../shared"]}}))
    warnings: list[str] = []
    assert etcode.discover_skills(project, on_warning=warnings.append) == []
    [warning] = warnings
    assert warning.startswith("left out skills.paths[0] of ") and "(pass trust=True)" in warning
    assert [s.name for s in etcode.discover_skills(project, trust=True)] == ["webapp-testing"]


async def test_the_designs_skills_dir_is_one_more_skill_folder(llm: FakeLLM, tmp_path: Path) -> None:
    """``Agent(skills_dir=...)``, as the agent-loop design names it: its skills are offered
    (it was refused as an unknown model option)."""
    project = git_init(tmp_path / "project")
    mine, more = tmp_path / "mine", tmp_path / "more"
    shutil.copytree(FIXTURES / "internal-comms", mine / "internal-comms")
    shutil.copytree(FIXTURES / "brand-guidelines", more / "brand-guidelines")
    llm.script(Reply(text="ok"))
    agent = agent_for(llm, project, skills=[mine], skills_dir=str(more))
    await agent.arun("hi")
    assert [s.name for s in await agent.available_skills()] == ["brand-guidelines", "internal-comms"]
    await agent.aclose()
    assert "\n- brand-guidelines: " in system_text(llm.requests[0].body)

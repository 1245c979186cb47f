"""Agents: built-ins, config agents, markdown agents, precedence, unknown names."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from etcode.agent import AgentInfo, builtin_agents, get_agent, load_agents, read_only_bash
from etcode.util.errors import ConfigError, UsageError
from tests.permission_support import command_decision


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def bash_decision(permission: dict[str, object], command: str, directory: Path) -> str:
    """What the real pipeline decides for an agent with these rules."""
    return command_decision(directory, None, command, agent=permission)


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    directory = root / "sub"
    directory.mkdir()
    return root, directory, tmp_path / "global"


def test_builtins() -> None:
    agents = builtin_agents()
    assert list(agents) == ["build", "plan", "general", "explore", "workflow"]
    build, plan, general, explore, workflow = agents.values()
    assert workflow.mode == "primary" and workflow.prompt is None and not workflow.tool_enabled("TodoWrite")
    assert build.prompt is None and build.mode == "primary" and build.builtin
    assert all(build.tool_enabled(t) for t in ("ReadFile", "WriteFile", "Edit", "Bash", "Task"))
    assert plan.mode == "primary" and not plan.tool_enabled("WriteFile") and not plan.tool_enabled("Edit")
    assert plan.tool_enabled("Bash") and plan.tool_enabled("ReadManyFiles")
    assert plan.prompt and plan.prompt_builtin and plan.source == "agent/plan.txt"
    assert general.mode == "subagent" and general.tool_enabled("Edit") and not general.tool_enabled("Task")
    assert (
        explore.mode == "subagent"
        and not explore.tool_enabled("Edit")
        and not explore.tool_enabled("WriteFile")
    )


@pytest.mark.parametrize(
    ("command", "decision"),
    [
        ("ls", "allow"),
        ("ls -la src", "allow"),
        ("cat README.md", "allow"),
        ("git status", "allow"),
        ("git diff HEAD~1", "allow"),
        ("git log --oneline -5", "allow"),
        ("grep -rn foo .", "ask"),  # issue 27: the folder holds .env
        ("grep -rn foo src", "allow"),
        ("grep -rn --exclude='*env' foo .", "allow"),
        ("rg TODO", "allow"),
        ("find . -name '*.py'", "allow"),
        ("head -n 5 a.txt", "allow"),
        ("tail a.log", "allow"),
        ("wc -l a.txt", "allow"),
        ("rm -rf build", "ask"),
        ("python setup.py install", "ask"),
        ("git commit -m x", "ask"),
        ("git push", "ask"),
        ("lsblk", "ask"),
        ("find . -name x -delete", "ask"),
        ("find . -exec rm {} ;", "ask"),
        ("cat a > b", "deny"),  # plan denies edits: a redirection is one
        ("ls; rm -rf /", "ask"),
        ("ls && rm x", "ask"),
        ("cat x | sh", "ask"),
        ("ls $(rm x)", "ask"),
        # issue 12: a flag in first position, process substitution, -exec/--pre programs
        ("find -delete", "ask"),
        ("find -fprint X", "ask"),
        ("find . -fprint0 X", "ask"),
        ("rg --pre rm needle e", "ask"),
        ("rg --pre=rm needle e", "ask"),
        ("ls <(rm p1)", "ask"),
        ("ls >(rm p1)", "ask"),
        ("cat <<< $(rm p1)", "ask"),
        ("find -exec rm {} +", "ask"),
        ("find . -execdir rm {} ;", "ask"),
        ("git -c core.pager=rm log", "ask"),
        ("git log --output=x", "ask"),
        # issue 27, item 11: git takes any unambiguous prefix of a long option
        ("git diff --outp=x", "ask"),
        ("git log -p --outpu x", "ask"),
        ("git diff --ext", "ask"),
        ("git show --textc", "ask"),
        ("git diff --text", "allow"),  # an option of its own, not --textconv
        ("git diff --stat --no-ext-diff", "allow"),
        ("ls > out.txt", "deny"),
        ("cat .env", "ask"),
        ("grep KEY .env", "ask"),
        ("cat < .env", "ask"),
        ("X=rm; $X f", "ask"),
        ("$(echo rm) f", "ask"),
        ("ls 2>&1 >/dev/null", "allow"),
        ("grep 'a|b;c' README.md", "allow"),
        ("find . -name '*.py' -exec grep -n TODO {} +", "allow"),
        ("git log --oneline | head -5", "allow"),
    ],
)
def test_plan_bash_is_read_only(command: str, decision: str, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KEY=1\n")
    for name in ("plan", "explore"):
        permission = builtin_agents()[name].permission
        assert isinstance(permission, dict) and permission["Bash"] == read_only_bash()
        assert bash_decision(permission, command, tmp_path) == decision, (name, command)


def test_plan_denies_edits() -> None:
    permission = builtin_agents()["plan"].permission
    assert isinstance(permission, dict)
    assert permission["WriteFile"] == "deny" and permission["Edit"] == "deny"


def test_tools_wildcards_last_match_wins() -> None:
    agent = AgentInfo("x", tools={"*": False, "ReadFile": True, "github_*": True, "github_delete": False})
    assert agent.filter_tools(["ReadFile", "Bash", "github_search", "github_delete"]) == [
        "ReadFile",
        "github_search",
    ]


def test_config_agent_dicts_and_objects(project: tuple[Path, Path, Path]) -> None:
    root, directory, global_dir = project
    config = {
        "reviewer": {
            "description": "Reviews diffs",
            "prompt": "Review carefully.",
            "model": "anthropic/claude-opus-4",
            "tools": {"Bash": False},
            "permission": {"Edit": "deny"},
            "steps": 20,
            "temperature": 0.1,
        },
        "docs": SimpleNamespace(
            description="Writes docs",
            prompt="Write docs.",
            model=None,
            tools=None,
            permission=None,
            steps=None,
            mode="subagent",
            temperature=None,
        ),
    }
    agents = load_agents(config, directory, root, global_dir)
    assert list(agents) == ["build", "plan", "general", "explore", "workflow", "docs", "reviewer"]
    reviewer = agents["reviewer"]
    assert reviewer == AgentInfo(
        "reviewer",
        "Reviews diffs",
        "Review carefully.",
        "anthropic/claude-opus-4",
        {"Bash": False},
        {"Edit": "deny"},
        20,
        "all",
        0.1,
        builtin=False,
        source="config agent.reviewer",
    )
    assert agents["docs"].mode == "subagent" and agents["docs"].description == "Writes docs"


def test_config_overrides_builtin_field_by_field(project: tuple[Path, Path, Path]) -> None:
    root, directory, global_dir = project
    agents = load_agents(
        {"plan": {"model": "openai/o3", "permission": {"Bash": {"npm test": "allow"}}}},
        directory,
        root,
        global_dir,
    )
    plan = agents["plan"]
    assert plan.model == "openai/o3" and plan.builtin and plan.prompt_builtin
    assert not plan.tool_enabled("Edit")
    assert isinstance(plan.permission, dict)
    assert bash_decision(plan.permission, "npm test", directory) == "allow"
    assert bash_decision(plan.permission, "git status", directory) == "allow"
    assert bash_decision(plan.permission, "rm x", directory) == "ask"
    assert list(plan.permission["Bash"])[-1] == "npm test"  # appended: last match wins


def test_markdown_agent_front_matter(project: tuple[Path, Path, Path]) -> None:
    root, directory, global_dir = project
    path = write(
        root / ".etcode" / "agent" / "security.md",
        "---\n"
        "description: Finds security problems\n"
        "model: anthropic/claude-sonnet-4\n"
        "mode: subagent\n"
        "temperature: 0.2\n"
        "steps: 7\n"
        "tools:\n"
        "  WriteFile: false\n"
        "  Edit: false\n"
        "permission:\n"
        "  Bash: ask\n"
        "color: red\n"
        "---\n"
        "\n"
        "You audit code for vulnerabilities.\n\nReport file:line.\n",
    )
    agent = load_agents({}, directory, root, global_dir)["security"]
    assert agent.description == "Finds security problems"
    assert agent.model == "anthropic/claude-sonnet-4"
    assert agent.mode == "subagent" and agent.temperature == 0.2 and agent.steps == 7
    assert agent.tools == {"WriteFile": False, "Edit": False}
    assert agent.permission == {"Bash": "ask"}
    assert agent.prompt == "You audit code for vulnerabilities.\n\nReport file:line."
    assert agent.source == str(path) and not agent.builtin and not agent.prompt_builtin


def test_markdown_without_front_matter_and_claude_style_tools(project: tuple[Path, Path, Path]) -> None:
    root, directory, global_dir = project
    write(global_dir / "agent" / "plain.md", "Just a prompt.\n")
    write(global_dir / "agent" / "lister.md", "---\ntools: ReadFile, Glob\n---\nList things.")
    agents = load_agents({}, directory, root, global_dir)
    assert agents["plain"].prompt == "Just a prompt." and agents["plain"].mode == "all"
    assert agents["lister"].filter_tools(["ReadFile", "Glob", "Bash"]) == ["ReadFile", "Glob"]


def test_precedence_builtin_global_config_project(project: tuple[Path, Path, Path]) -> None:
    root, directory, global_dir = project
    body = "---\ndescription: {d}\nmodel: {m}\n---\n{p}\n"
    write(global_dir / "agent" / "rev.md", body.format(d="global", m="g/m", p="global prompt"))
    write(global_dir / "agent" / "plan.md", "---\ndescription: global plan\n---\n")
    config = {"rev": {"description": "config", "steps": 3}, "solo": {"prompt": "config only"}}
    write(root / ".etcode" / "agent" / "rev.md", "---\nmodel: root/m\n---\nroot prompt\n")
    write(directory / ".etcode" / "agent" / "rev.md", "---\nmodel: sub/m\n---\n")

    agents = load_agents(config, directory, root, global_dir)
    rev = agents["rev"]
    assert rev.description == "config"  # config over global markdown
    assert rev.steps == 3
    assert rev.model == "sub/m"  # project markdown over config; the deeper folder wins
    assert rev.prompt == "root prompt"  # a body-less file keeps the prompt set before it
    assert rev.source == str(root / ".etcode" / "agent" / "rev.md")
    # global markdown over built-in, field by field
    assert agents["plan"].description == "global plan" and agents["plan"].prompt_builtin
    assert agents["solo"].prompt == "config only"

    # without the project layer, the global markdown loses to config only where config speaks
    outside = load_agents(config, None, None, global_dir)
    assert outside["rev"].model == "g/m" and outside["rev"].prompt == "global prompt"


def test_disable_removes_an_agent(project: tuple[Path, Path, Path]) -> None:
    root, directory, global_dir = project
    write(root / ".etcode" / "agent" / "general.md", "---\ndisable: true\n---\n")
    assert "general" not in load_agents({}, directory, root, global_dir)


def test_unknown_agent_lists_known_names(project: tuple[Path, Path, Path]) -> None:
    root, directory, global_dir = project
    agents = load_agents({"reviewer": {"prompt": "x"}}, directory, root, global_dir)
    with pytest.raises(UsageError) as err:
        get_agent("x", agents)
    assert (
        str(err.value) == 'unknown agent "x"; known agents: build, plan, general, explore, workflow, reviewer'
    )
    assert err.value.exit_code == 2
    with pytest.raises(UsageError, match="known agents: build, plan, general, explore, workflow$"):
        get_agent("nope")
    assert get_agent("plan").name == "plan"
    found = get_agent(
        "reviewer", config_agents={"reviewer": {"prompt": "x"}}, directory=directory, worktree=root
    )
    assert found.prompt == "x"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\nmode: boss\n---\nx", 'agent.bad.mode: expected "primary", "subagent" or "all"'),
        ("---\nsteps: 0\n---\nx", "agent.bad.steps: expected a positive integer"),
        ("---\ntools: {Bash: maybe}\n---\nx", "agent.bad.tools"),
        ("---\nmodel: [1\n---\nx", "invalid YAML front matter"),
        ("---\nmodel: x\nno end", "front matter is not closed"),
    ],
)
def test_bad_markdown_agent_is_a_config_error(
    project: tuple[Path, Path, Path], text: str, message: str
) -> None:
    root, directory, global_dir = project
    path = write(root / ".etcode" / "agent" / "bad.md", text)
    with pytest.raises(ConfigError) as err:
        load_agents({}, directory, root, global_dir)
    assert str(path) in str(err.value) and message in str(err.value)

"""Issue 27.4: a cloned repository may not loosen the user's own permission rules. A project
allow (``etcode.json`` ``permission``, a project agent's front matter) where the user's
config and the defaults ask or deny is a trust finding; a project deny or ask, or an allow
that only restates what the user's rules allow, needs nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from etcode.agent.registry import builtin_agents
from etcode.config.loader import load_config
from etcode.trust.project import config_findings, exclusions
from etcode.util.paths import config_dir
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import git_init

ASK_BASH = {"bash": {"*": "ask"}}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_init(tmp_path / "cloned")


def user_config(data: dict[str, Any]) -> None:
    """The user's own ``$XDG_CONFIG_HOME/etcode/etcode.json``."""
    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "etcode.json").write_text(json.dumps(data), encoding="utf-8")


def agent_file(repo: Path, name: str, front_matter: str, body: str = "Do the work.") -> Path:
    path = repo / ".etcode" / "agent" / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front_matter.strip()}\n---\n{body}\n", encoding="utf-8")
    return path


def findings(repo: Path) -> list[str]:
    config = load_config(repo, repo)
    return [f"{f.file.name}: {f.key}" for f in config_findings(config)]


def touch_canary(llm: FakeLLM) -> None:
    llm.script(Reply(calls=[Call("Bash", {"command": "touch canary"})]), Reply(text="done"))


# ---- through `etcode run` -------------------------------------------------------------


def test_a_project_allow_over_the_users_ask_is_refused(repo: Path, llm: FakeLLM) -> None:
    user_config({"permission": ASK_BASH})
    write_config(repo, llm, permission={"bash": {"*": "allow"}})
    touch_canary(llm)
    proc = etcode("run", "make a canary", cwd=repo)
    assert proc.returncode == 1, proc.stderr
    assert llm.requests == [] and not (repo / "canary").exists()
    assert proc.stderr.splitlines()[0].startswith(f"error: untrusted project config {repo / 'etcode.json'}")
    assert any(
        line.startswith('  - permission.bash."*" allows without asking what your own rules ask about')
        for line in proc.stderr.splitlines()
    ), proc.stderr
    assert "Traceback" not in proc.stderr

    touch_canary(llm)
    proc = etcode("run", "--trust", "make a canary", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "canary").exists()  # trusted: the project's allow applies


def test_a_project_agent_file_that_allows_is_refused(repo: Path, llm: FakeLLM) -> None:
    user_config({"permission": ASK_BASH})
    write_config(repo, llm)
    path = agent_file(repo, "build", 'permission:\n  bash:\n    "*": allow')
    touch_canary(llm)
    proc = etcode("run", "make a canary", cwd=repo)
    assert proc.returncode == 1, proc.stderr
    assert llm.requests == [] and not (repo / "canary").exists()
    lines = proc.stderr.splitlines()
    assert lines[0].startswith(f"error: untrusted project config {path}"), proc.stderr
    assert any(line.startswith('  - agent.build.permission.bash."*" allows without asking') for line in lines)

    touch_canary(llm)
    proc = etcode("run", "--trust", "make a canary", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "canary").exists()


def test_a_project_deny_applies_without_trust(repo: Path, llm: FakeLLM) -> None:
    user_config({"permission": {"bash": {"*": "allow"}}})
    write_config(repo, llm, permission={"bash": {"touch *": "deny"}})
    touch_canary(llm)
    proc = etcode("run", "make a canary", cwd=repo)
    assert proc.returncode == 0, proc.stderr  # nothing to trust: the run goes on
    assert not (repo / "canary").exists()  # and the project's deny holds
    assert "touch" in json.dumps(llm.requests[1].body["messages"])


def test_an_agent_file_that_tightens_or_restates_needs_no_trust(repo: Path, llm: FakeLLM) -> None:
    user_config({"permission": ASK_BASH})
    write_config(repo, llm)
    agent_file(repo, "build", 'permission:\n  bash:\n    "*": ask\n    "rm *": deny')
    touch_canary(llm)
    proc = etcode("run", "--yes", "make a canary", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert "project settings" not in proc.stderr  # nothing was waiting for trust
    assert (repo / "canary").exists()  # --yes answers the user's own "ask"


# ---- what counts as loosening ---------------------------------------------------------


def test_restating_a_builtin_agents_rules_is_not_loosening(repo: Path) -> None:
    import yaml

    plan = builtin_agents()["plan"].permission
    agent_file(repo, "plan", yaml.safe_dump({"permission": plan}))
    agent_file(repo, "explore", 'permission:\n  Bash:\n    "cat *": allow\n    "rm *": deny')
    (repo / "etcode.json").write_text(json.dumps({"permission": {"bash": {"*": "allow"}}}), encoding="utf-8")
    assert findings(repo) == []  # the defaults allow bash; plan and explore allow cat already
    agent_file(repo, "plan", 'permission:\n  Bash:\n    "touch *": allow')
    assert findings(repo) == ['plan.md: agent.plan.permission.Bash."touch *"']


def test_loosening_is_judged_against_the_users_rules(repo: Path) -> None:
    user_config({"permission": {"bash": {"*": "ask", "git *": "allow", "rm *": "deny"}}})
    project = {
        "permission": {"bash": {"git status": "allow", "rm -rf *": "allow", "make *": "allow"}},
        "agent": {"build": {"permission": {"bash": {"git log *": "allow", "npm *": "allow"}}}},
    }
    (repo / "etcode.json").write_text(json.dumps(project), encoding="utf-8")
    # "rm -rf *" cannot loosen: the user's own deny stays final whatever a project says
    assert findings(repo) == [
        'etcode.json: permission.bash."make *"',
        'etcode.json: agent.build.permission.bash."npm *"',
    ]
    # a rule named after a tool counts for what that tool asks; a whole "allow" too
    user_config({"permission": {"read": "ask"}})
    (repo / "etcode.json").write_text(json.dumps({"permission": {"ReadFile": "allow"}}), encoding="utf-8")
    assert findings(repo) == ["etcode.json: permission.ReadFile"]


def test_the_defaults_read_rules_count_as_the_users(repo: Path) -> None:
    (repo / "etcode.json").write_text(json.dumps({"permission": {"read": {"*": "allow"}}}), encoding="utf-8")
    config = load_config(repo, repo)
    (found,) = config_findings(config)
    assert (
        str(found) == 'permission.read."*" allows without asking what your own rules ask about (read ".env")'
    )


def test_an_untrusted_agent_files_rules_are_left_out(repo: Path) -> None:
    """The chat's "not this time": the agent's loosening rule is left out, the rest stays."""
    from etcode.agent.registry import get_agent

    user_config({"permission": ASK_BASH})
    agent_file(repo, "build", 'description: mine\npermission:\n  bash:\n    "*": allow\n    "rm *": deny')
    config = load_config(repo, repo)
    found = config_findings(config)
    assert [f.key for f in found] == ['agent.build.permission.bash."*"']
    kept = load_config(repo, repo, without=exclusions(found))
    assert config_findings(kept) == []
    agent = get_agent("build", config_agents=kept.agent, directory=repo, worktree=repo, without=kept.without)
    assert agent.permission == {"bash": {"rm *": "deny"}} and agent.description == "mine"


def test_allowing_an_mcp_servers_tools_is_loosening(repo: Path) -> None:
    """MCP tools ask by default unless their server marks them read-only: a project rule
    allowing a server's tools by name needs trust (a user's own rule may allow them)."""
    user_config({"mcp": {"docs": {"type": "remote", "url": "https://docs.example/mcp"}}})
    project = {"permission": {"docs_*": "allow", "docs_search": {"*": "allow"}, "other_tool": "allow"}}
    (repo / "etcode.json").write_text(json.dumps(project), encoding="utf-8")
    assert findings(repo) == ["etcode.json: permission.docs_*", 'etcode.json: permission.docs_search."*"']
    user_config(
        {
            "mcp": {"docs": {"type": "remote", "url": "https://docs.example/mcp"}},
            "permission": {"docs_*": "allow"},
        }
    )
    assert findings(repo) == []


def test_an_mcp_server_is_known_by_the_name_its_tools_get(repo: Path) -> None:
    """A server named ``my.docs`` offers ``my_docs_*`` tools (``mcp/naming.py``): a project
    allowing those is loosening too (the raw name ``my.docs_*`` let it through)."""
    user_config({"mcp": {"my.docs": {"type": "remote", "url": "https://docs.example/mcp"}}})
    (repo / "etcode.json").write_text(json.dumps({"permission": {"my_docs_*": "allow"}}), encoding="utf-8")
    assert findings(repo) == ["etcode.json: permission.my_docs_*"]

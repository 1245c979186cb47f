"""Permission rules (last match wins, wildcards, layering) and the service/askers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from etcode.permission import (
    NON_INTERACTIVE_REASON,
    AllowAsker,
    Decision,
    DenyAsker,
    PermissionConfigError,
    PermissionRequest,
    PermissionService,
    Rule,
    evaluate,
    parse_rules,
    rules_from_config,
    wildcard_match,
)
from etcode.tools.base import PermissionDenied
from etcode.tools.bash import BashTool
from tests.tool_support import make_ctx


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        ("git status", "git *", True),
        ("git", "git *", True),
        ("gitk", "git *", False),
        ("rm -rf /", "rm *", True),
        ("src/a/b.py", "src/*", True),
        ("src/.env", "*.env", True),
        (".env.local", "*.env.*", True),
        ("a.txt", "?.txt", True),
        ("ab.txt", "?.txt", False),
        ("anything", "*", True),
        ("x+y(z)", "x+y(z)", True),
    ],
)
def test_wildcards(text: str, pattern: str, expected: bool) -> None:
    assert wildcard_match(text, pattern) is expected


def test_last_matching_rule_wins() -> None:
    rules = parse_rules({"bash": {"*": "ask", "git *": "allow", "git push *": "deny"}})
    assert evaluate(rules, "bash", "ls").action == "ask"
    assert evaluate(rules, "bash", "git status").action == "allow"
    assert evaluate(rules, "bash", "git push origin").action == "deny"
    # within one object, general patterns sort before specific ones: key order does not matter
    rules = parse_rules({"bash": {"git push *": "deny", "git *": "allow", "*": "ask"}})
    assert [r.pattern for r in rules] == ["*", "git *", "git push *"]
    assert evaluate(rules, "bash", "git status").action == "allow"
    assert evaluate(rules, "bash", "git push").action == "deny"
    # across layers, order decides: a later catch-all overrides earlier specific rules
    rules = [*parse_rules({"bash": {"git *": "allow"}}), *parse_rules({"bash": "ask"})]
    assert evaluate(rules, "bash", "git status").action == "ask"


def test_string_value_applies_to_all_patterns() -> None:
    rules = parse_rules({"edit": "deny", "webfetch": "ask"})
    assert evaluate(rules, "edit", "src/a.py").action == "deny"
    assert evaluate(rules, "webfetch", "https://x").action == "ask"
    assert parse_rules("deny") == [Rule("*", "*", "deny")]


def test_no_match_asks() -> None:
    assert evaluate([], "bash", "ls").action == "ask"


def test_defaults() -> None:
    rules = rules_from_config(None)
    assert evaluate(rules, "read", "src/a.py").action == "allow"
    assert evaluate(rules, "read", ".env").action == "ask"
    assert evaluate(rules, "read", "app/.env.production").action == "ask"
    assert evaluate(rules, "read", ".env.example").action == "allow"
    assert evaluate(rules, "edit", "src/a.py").action == "allow"
    assert evaluate(rules, "bash", "rm -rf build").action == "allow"
    assert evaluate(rules, "external_directory", "/etc/passwd").action == "ask"
    assert evaluate(rules, "webfetch", "https://example.com").action == "allow"
    assert evaluate(rules, "glob", ".").action == "allow"


def test_config_then_agent_layering() -> None:
    config = {
        "edit": "allow",
        "bash": {"git *": "allow", "rm *": "deny", "*": "ask"},
        "external_directory": "ask",
    }
    agent = {"edit": "deny", "bash": {"rm -rf build": "allow", "make *": "allow"}}
    rules = rules_from_config(config, agent)
    assert evaluate(rules, "edit", "a.py").action == "deny"  # agent over config
    assert evaluate(rules, "bash", "make").action == "allow"  # an agent may lift an ask...
    assert evaluate(rules, "bash", "rm -rf build").action == "deny"  # ...never a config deny
    assert evaluate(rules, "bash", "rm -rf src").action == "deny"
    assert evaluate(rules, "bash", "cargo build").action == "ask"


def test_tool_name_keys() -> None:
    rules = rules_from_config({"ReadManyFiles": "deny", "readfile": "allow"})
    assert evaluate(rules, "read", "a.py", tool="ReadManyFiles").action == "deny"
    assert evaluate(rules, "read", "a.py", tool="ReadFile").action == "allow"
    # a tool-name rule for all patterns overrides the default .env ask
    assert evaluate(rules, "read", ".env", tool="ReadFile").action == "allow"


def test_bad_action_is_config_error() -> None:
    with pytest.raises(PermissionConfigError, match=r'permission\.bash\."rm \*"'):
        rules_from_config({"bash": {"rm *": "never"}})
    with pytest.raises(PermissionConfigError, match=r"agent\.permission\.edit"):
        rules_from_config(None, {"edit": 3})


class RecordingAsker:
    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Decision:
        self.requests.append(request)
        await asyncio.sleep(0.01)
        return self.decision


async def test_service_allow_deny_ask() -> None:
    asker = RecordingAsker(Decision.allow_once())
    service = PermissionService(rules_from_config({"bash": {"rm *": "deny", "make *": "ask"}}), asker)
    await service.check("bash", ["ls"], {"tool": "Bash"})
    assert asker.requests == []
    with pytest.raises(PermissionDenied, match=r'denied by permission rule "bash": \{"rm \*": "deny"\}'):
        await service.check("bash", ["rm -rf x"], {"tool": "Bash"})
    await service.check("bash", ["make test"], {"tool": "Bash"})
    assert asker.requests[0].patterns == ["make test"] and asker.requests[0].tool == "Bash"
    await service.check("bash", ["make test"], {"tool": "Bash"})
    assert len(asker.requests) == 2  # allow_once is not remembered


async def test_deny_wins_over_ask_in_one_call() -> None:
    asker = RecordingAsker(Decision.allow_once())
    service = PermissionService(rules_from_config({"bash": {"*": "ask", "rm *": "deny"}}), asker)
    with pytest.raises(PermissionDenied):
        await service.check("bash", ["ls", "rm x"], {})
    assert asker.requests == []


async def test_allow_always_remembered() -> None:
    asker = RecordingAsker(Decision.allow_always())
    service = PermissionService(rules_from_config({"bash": "ask"}), asker)
    await service.check("bash", ["git push origin main"], {"always": ["git push *"]})
    await service.check("bash", ["git push other"], {"always": ["git push *"]})
    assert len(asker.requests) == 1
    assert asker.requests[0].always == ["git push *"]
    await service.check("bash", ["ls"], {})
    assert len(asker.requests) == 2


async def test_concurrent_asks_serialized_and_settled_by_always() -> None:
    asker = RecordingAsker(Decision.allow_always())
    service = PermissionService(rules_from_config({"webfetch": "ask"}), asker)
    await asyncio.gather(*(service.check("webfetch", ["https://a"], {}) for _ in range(5)))
    assert len(asker.requests) == 1


async def test_deny_asker_message_for_headless() -> None:
    service = PermissionService(rules_from_config(None), DenyAsker())
    with pytest.raises(PermissionDenied) as info:
        await service.check("external_directory", ["/etc/hosts"], {"tool": "ReadFile"})
    assert str(info.value).startswith(NON_INTERACTIVE_REASON)
    assert "/etc/hosts" in str(info.value)


async def test_allow_asker_still_respects_deny() -> None:
    service = PermissionService(rules_from_config({"bash": {"rm *": "deny", "*": "ask"}}), AllowAsker())
    await service.check("bash", ["make"], {})
    with pytest.raises(PermissionDenied):
        await service.check("bash", ["rm x"], {})


async def test_user_reject_reason() -> None:
    service = PermissionService(
        rules_from_config({"edit": "ask"}), RecordingAsker(Decision.reject("the user said: use a branch"))
    )
    with pytest.raises(PermissionDenied, match="the user said: use a branch"):
        await service.check("edit", ["a.py"], {})


async def test_absolute_paths_relative_to_worktree(tmp_path: Path) -> None:
    service = PermissionService(rules_from_config({"edit": {"secret/*": "deny"}}), AllowAsker(), tmp_path)
    with pytest.raises(PermissionDenied):
        await service.check("edit", [str(tmp_path / "secret" / "k.txt")], {})
    await service.check("edit", [str(tmp_path / "ok.txt")], {})


async def test_service_wired_into_bash_tool(tmp_path: Path) -> None:
    service = PermissionService(rules_from_config({"bash": {"git *": "allow", "rm *": "deny", "*": "ask"}}))
    ctx = make_ctx(tmp_path, check_permission=service.check)
    (tmp_path / "keep").write_text("x")
    tool = BashTool()
    with pytest.raises(PermissionDenied, match="rm"):
        await tool.run(tool.parse({"command": "git --version && rm keep"}), ctx)
    assert (tmp_path / "keep").exists()
    with pytest.raises(PermissionDenied, match="non-interactive"):
        await tool.run(tool.parse({"command": "echo hi"}), ctx)


async def test_tool_read_env_asks_by_default(tmp_path: Path) -> None:
    from etcode.tools.read_file import ReadFileTool

    (tmp_path / ".env").write_text("SECRET=1\n")
    (tmp_path / "a.txt").write_text("ok\n")
    service = PermissionService(rules_from_config(None), DenyAsker(), tmp_path)
    ctx = make_ctx(tmp_path, check_permission=service.check)
    tool = ReadFileTool()
    assert "ok" in (await tool.run(tool.parse({"file_path": "a.txt"}), ctx)).output
    with pytest.raises(PermissionDenied, match="non-interactive"):
        await tool.run(tool.parse({"file_path": ".env"}), ctx)

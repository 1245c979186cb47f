"""Secrets kept from commands' environment (issue 12, point 2): `env` run by the model
shows no key, whatever its name; `"shell": {"env": ...}` changes what is inherited."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from etcode.config.schema import validate
from etcode.provider.spec import provider_key_names
from etcode.security.shell_env import ShellEnvPolicy
from etcode.util.errors import ConfigError
from tests.cli_helpers import TEST_KEY, etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-value-0123456789abcdef",
    "GITHUB_TOKEN": "ghp-like-value-0123456789abcdef",
    "MY_PASSWORD": "hunter2-hunter2-hunter2",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-value-0123456789",
    "DEPLOY_CFG": TEST_KEY,  # an innocent name holding the configured provider key
}


def test_default_policy_drops_secret_names_provider_keys_and_key_values() -> None:
    base = {**SECRETS, "PATH": "/usr/bin", "HOME": "/home/u", "GROQ_API_KEY": "g" * 20, "EDITOR": "vi"}
    env = ShellEnvPolicy(secret_values=frozenset({TEST_KEY}), key_names=provider_key_names()).environment(
        base
    )
    assert env["PATH"] == "/usr/bin" and env["EDITOR"] == "vi" and env["PAGER"] == "cat"
    assert not set(SECRETS) & set(env) and "GROQ_API_KEY" not in env
    # The providers' variables are named by whoever builds the policy, whatever they look like.
    assert "ACME_AUTH" not in ShellEnvPolicy(key_names=frozenset({"ACME_AUTH"})).environment(
        {"ACME_AUTH": "a"}
    )


def test_inherit_include_exclude_set() -> None:
    base = {**SECRETS, "PATH": "/usr/bin", "HOME": "/h", "LC_ALL": "C", "EDITOR": "vi", "NPM_TOKEN": "n" * 20}
    core = ShellEnvPolicy(inherit="core", include=("npm_*",), set={"CI": "1"}).environment(base)
    assert set(core) == {
        "PATH",
        "HOME",
        "LC_ALL",
        "NPM_TOKEN",
        "CI",
        "PAGER",
        "GIT_PAGER",
        "GIT_TERMINAL_PROMPT",
    }
    none = ShellEnvPolicy(inherit="none", include=("PATH",)).environment(base)
    assert set(none) == {"PATH", "PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT"}
    dropped = ShellEnvPolicy(exclude=("EDITOR", "HOME")).environment(base)
    assert "EDITOR" not in dropped and "HOME" not in dropped and "PATH" in dropped


@pytest.mark.parametrize(
    ("shell", "key"),
    [
        ({"env": {"inherit": "some"}}, "shell.env.inherit"),
        ({"env": {"include": ["A=B"]}}, "shell.env.include"),
        ({"env": {"set": {"": "x"}}}, "shell.env.set"),
        ({"env": {"inclde": []}}, 'unknown key "shell.env.inclde" (did you mean "include"?)'),
    ],
)
def test_bad_shell_config_is_one_line(shell: dict, key: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate({"shell": shell}, "etcode.json")
    message = str(info.value)
    assert message.startswith("etcode.json: ") and key in message and "\n" not in message


def test_env_run_by_the_model_shows_no_key(project: Path, llm: FakeLLM, isolated_env: Path) -> None:
    write_config(project, llm)
    llm.script(Reply(calls=[Call("Bash", {"command": "env; printenv"})]), Reply(text="done"))
    proc = etcode("run", "show the environment", cwd=project, env=SECRETS)
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(llm.requests[1].body["messages"])
    assert "PAGER=cat" in sent  # the command did run and print its environment
    stored = b"".join(p.read_bytes() for p in (isolated_env / ".local/share/etcode").glob("etcode.db*"))
    for name, value in SECRETS.items():
        assert value not in sent, name
        assert value.encode() not in stored, name
        assert f"{name}=" not in sent, name


def test_config_includes_and_sets(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, shell={"env": {"include": ["GITHUB_TOKEN"], "set": {"CI": "true"}}})
    command = 'test -n "$GITHUB_TOKEN" && echo token-present; test -z "$MY_PASSWORD" && echo no-password; echo ci=$CI'
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", "--trust", "check", cwd=project, env=SECRETS)  # include of a secret: approve
    assert proc.returncode == 0, proc.stderr
    result = llm.requests[1].body["messages"][-1]["content"]
    assert "token-present" in result and "no-password" in result and "ci=true" in result


def test_shell_env_reaches_subagents(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(
        Reply(
            calls=[Call("Task", {"description": "env", "prompt": "print env", "subagent_type": "general"})]
        ),
        Reply(calls=[Call("Bash", {"command": "env"})]),
        Reply(text="printed"),
        Reply(text="done"),
    )
    proc = etcode("run", "delegate", cwd=project, env=SECRETS)
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps([r.body["messages"] for r in llm.requests])
    assert "PAGER=cat" in sent
    assert not any(value in sent for value in SECRETS.values())


def test_store_has_no_key_even_in_tool_call_history(project: Path, llm: FakeLLM, isolated_env: Path) -> None:
    """What the store keeps of the run: no secret value in any row."""
    write_config(project, llm)
    llm.script(Reply(calls=[Call("Bash", {"command": "env"})]), Reply(text="done"))
    assert etcode("run", "env please", cwd=project, env=SECRETS).returncode == 0
    db = isolated_env / ".local/share/etcode/etcode.db"
    rows = sqlite3.connect(db).execute("SELECT parts FROM messages").fetchall()
    text = json.dumps([row[0] for row in rows])
    assert "PAGER=cat" in text and not any(value in text for value in SECRETS.values())

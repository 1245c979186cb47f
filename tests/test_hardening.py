"""etcode's process is not dumpable (etcode/security/hardening.py): other processes of the same
user — the model's own Bash commands — cannot read its environment (the configured keys).
Both tests run as an ordinary user (tests/user_support.py): root reads any process."""

from __future__ import annotations

import codecs
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_llm import Call, FakeLLM, Reply
from tests.user_support import as_user, give_to_user

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-proj-hardening-4fa7c0ffee19"
#: The issue's command, with rot13 for ``rev`` (coreutils only): no redaction can catch it.
STEAL = "cat /proc/$PPID/environ | tr '\\0' '\\n' | grep OPENAI | tr 'A-Za-z' 'N-ZA-Mn-za-m'; echo ran-as-$(id -u)"
STOLEN = codecs.encode(f"OPENAI_API_KEY={KEY}", "rot13")


def _env(home: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local/state"),
        "OPENAI_API_KEY": KEY,
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


_CHILD = """
import os, subprocess, sys
from etcode.security.hardening import harden_process, is_dumpable
if sys.argv[1] == "harden":
    assert harden_process() and is_dumpable() is False
elif sys.argv[1] == "opted-out":
    assert not harden_process() and is_dumpable() is True
read = subprocess.run(["cat", f"/proc/{os.getpid()}/environ"], capture_output=True)
print("read" if b"OPENAI_API_KEY=" in read.stdout else f"refused: {read.stderr.decode().strip()}")
"""


@pytest.mark.parametrize("mode", ["harden", "as-is", "opted-out"])
def test_a_child_cannot_read_the_environment_of_a_hardened_process(tmp_path: Path, mode: str) -> None:
    """The same child reads its parent's environment unless the parent hardened itself
    (``as-is`` shows the check can fail: without hardening the key is read), and
    ``ETCODE_DUMPABLE=1`` keeps the process as it is (for a debugger)."""
    env = _env(tmp_path)
    if mode == "opted-out":
        env["ETCODE_DUMPABLE"] = "1"
    proc = subprocess.run(
        as_user([sys.executable, "-c", _CHILD, mode]),
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    if mode == "harden":
        assert proc.stdout.startswith("refused: ") and "Permission denied" in proc.stdout
    else:
        assert proc.stdout.strip() == "read"


def test_the_models_command_cannot_read_the_key_from_etcode_run(tmp_path: Path) -> None:
    """The issue's case: ``etcode run`` with the key in its environment (the user's config
    says ``{env:OPENAI_API_KEY}``), the sandbox off, and the model's Bash command reads
    ``/proc/$PPID/environ`` — etcode itself — and transforms what it finds."""
    home, project = tmp_path / "home", tmp_path / "project"
    (home / ".config" / "etcode").mkdir(parents=True)
    project.mkdir()
    with FakeLLM() as llm:
        key = "{env:OPENAI_API_KEY}"
        provider = {"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": key}
        config = {"model": "fake/test-model", "provider": [provider]}
        (home / ".config" / "etcode" / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
        give_to_user(home, project)
        llm.script(Reply(calls=[Call("Bash", {"command": STEAL})]), Reply(text="done"))
        proc = subprocess.run(
            as_user([sys.executable, "-m", "etcode", "run", "--yes", "--sandbox", "off", "show the key"]),
            env=_env(home),
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr
        assert llm.requests[0].headers.get("authorization") == f"Bearer {KEY}"  # the key is in play
        result = llm.requests[1].body["messages"][-1]
    assert result["role"] == "tool" and "ran-as-" in result["content"], result
    assert STOLEN not in result["content"] and KEY not in result["content"]
    assert "Permission denied" in result["content"]


_AGENT = """
import sys
from etcode import Agent
agent = Agent("openai/test-model", base_url=sys.argv[1], directory=".")
print(agent.run_sync("show the key").text)
"""


def test_the_models_command_cannot_read_the_key_from_a_python_agent(tmp_path: Path) -> None:
    """The same through the library: a script's ``Agent`` keeps its host's environment
    (``OPENAI_API_KEY``, the key it uses) from its own Bash commands."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    give_to_user(home, project)
    with FakeLLM() as llm:
        llm.script(Reply(calls=[Call("Bash", {"command": STEAL})]), Reply(text="done"))
        proc = subprocess.run(
            as_user([sys.executable, "-c", _AGENT, llm.openai_base_url]),
            env=_env(home),
            cwd=project,
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr
        assert llm.requests[0].headers.get("authorization") == f"Bearer {KEY}"
        result = llm.requests[1].body["messages"][-1]
    assert result["role"] == "tool" and "ran-as-" in result["content"], result
    assert STOLEN not in result["content"] and KEY not in result["content"]

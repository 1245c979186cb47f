"""git takes any unambiguous prefix of a long option (issue 27, item 11): the plan agent's
``"git *--output*": "ask"`` (and ``--ext-diff``, ``--textconv``) must see ``--outp=x``,
``--ext`` and ``--textc`` as the options they are, through the real ``etcode run --agent plan``."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from etcode.permission.service import NON_INTERACTIVE_REASON
from etcode.security.option_prefixes import spelled_out
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.require import needs


@needs("git", shutil.which("git") is None, "git is not installed")
@pytest.mark.parametrize("command", ["git diff --outp=out.txt", "git diff --ext", "git show --textc HEAD"])
def test_plan_asks_for_abbreviated_git_options(project: Path, llm: FakeLLM, command: str) -> None:
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    (project / "a.txt").write_text("a\n", encoding="utf-8")
    subprocess.run([*git, "add", "a.txt"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "a"], cwd=project, check=True)
    (project / "a.txt").write_text("a\nb\n", encoding="utf-8")
    write_config(project, llm)
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", "--agent", "plan", "show the change", cwd=project)
    assert proc.returncode == 0, proc.stderr
    results = [m for m in llm.requests[1].body["messages"] if m.get("role") == "tool"]
    assert NON_INTERACTIVE_REASON.split(";")[0] in json.dumps(results), command
    assert not (project / "out.txt").exists()


def test_abbreviations_are_spelled_out_and_real_options_kept() -> None:
    assert spelled_out("git", ["git", "diff", "--outp=x"]) == [
        "git diff --output=x",
        "git diff --output-directory=x",
    ]
    assert spelled_out("git", ["git", "log", "--textc"]) == ["git log --textconv"]
    assert spelled_out("git", ["git", "diff", "--ext"]) == ["git diff --ext-diff"]
    assert "git -C . --exec-path=/x log" in spelled_out("git", ["git", "-C", ".", "--exec-p=/x", "log"])
    # whole options of their own, negations, short options and other programs: unchanged
    for words in (
        ["git", "diff", "--text"],
        ["git", "diff", "--no-ext"],
        ["git", "diff", "-o"],
        ["git", "--"],
    ):
        assert spelled_out("git", words) == [], words
    assert spelled_out("grep", ["grep", "--outp", "x"]) == []

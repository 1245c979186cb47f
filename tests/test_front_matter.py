"""Front matter a repository ships (markdown agents, ``.claude/agents``, skills, commands)
nested deeper than any real file: refused with one line naming the file, never handed to
libyaml, whose reader overflows the C stack on some 30,000 nested ``[`` (the process dies)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from etcode.util.errors import ConfigError
from etcode.util.front_matter import MAX_NESTING, split_front_matter
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import FakeLLM, Reply
from tests.project_support import git_init

DEEP = {
    "flow": "---\nname: deep\ndescription: " + "[" * 50_000 + "\n---\nbody\n",
    "items": "---\nname: deep\nlist:\n  " + "- " * (MAX_NESTING + 1) + "x\n---\nbody\n",
    "indent": "---\nname: deep\n"
    + "".join(" " * 2 * i + f"k{i}:\n" for i in range(MAX_NESTING + 2))
    + "---\n",
}


@pytest.mark.parametrize("shape", sorted(DEEP))
def test_deep_front_matter_is_one_error_naming_the_file(shape: str) -> None:
    # In a child process: on the old code libyaml kills the process that reads it.
    code = (
        "import sys\nfrom etcode.util.front_matter import split_front_matter\n"
        "try:\n    split_front_matter(sys.stdin.read(), 'deep.md')\n"
        "except Exception as err:\n    print(type(err).__name__, err)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], input=DEEP[shape], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.strip() == "ConfigError deep.md: front matter nested too deeply"


def test_real_nesting_still_reads() -> None:
    text = "---\nname: ok\nmetadata:\n  a:\n    b: [1, [2, {c: 3}]]\nallowed-tools:\n  - Read\n---\nbody"
    meta, body = split_front_matter(text, "ok.md")
    assert meta["metadata"] == {"a": {"b": [1, [2, {"c": 3}]]}} and body == "body"
    with pytest.raises(ConfigError, match="nested too deeply"):
        split_front_matter("---\na: " + "{" * (MAX_NESTING + 1) + "\n---\n", "x.md")


def test_a_claude_agent_nested_too_deeply_warns_and_the_run_goes_on(tmp_path: Path, llm: FakeLLM) -> None:
    repo = git_init(tmp_path / "repo")
    write_config(repo, llm)
    deep = repo / ".claude" / "agents" / "deep.md"
    deep.parent.mkdir(parents=True)
    deep.write_text(DEEP["flow"])
    llm.script(Reply(text="still here"))
    proc = etcode("run", "hi", cwd=repo)
    assert proc.returncode == 0, proc.stderr[-500:]
    assert proc.stdout.strip() == "still here"
    assert f"warning: {deep}: front matter nested too deeply (agent skipped)" in proc.stderr

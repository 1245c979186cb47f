"""The documentation is true: every command of README.md and docs/*.md runs, every config block
loads.

Each fenced ``sh``/``bash``/``console`` block runs line by line through ``bash -c`` (with
``pipefail``) in a fresh git project whose ``etcode.json`` points at the scripted model server,
with ``etcode`` on ``PATH`` running this checkout. The well-known providers' ``<ID>_BASE_URL``
and ``OLLAMA_HOST`` point at the same server and their keys are set, so ``--model openai/…``
lines run as written. ``json``/``jsonc`` blocks load through etcode's own config loader. A block
that cannot run here is tagged ``<!-- needs: WHAT -->`` on a line before its fence, and the
tagged blocks must be exactly ``TAGGED`` (see AGENTS.md, "Documentation").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from etcode.config.loader import load_file
from etcode.provider.spec import KNOWN_PROVIDERS
from tests.cli_helpers import write_config
from tests.fake_llm import Call, FakeLLM, Recorded, Reply

REPO = Path(__file__).resolve().parent.parent
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_LANGS = {"sh", "bash", "console", "shell"}
CONFIG_LANGS = {"json", "jsonc"}

#: Every tagged block: (file, tag, its first line). Tagging a block means changing this list.
TAGGED = {
    ("README.md", "install", 'pipx install . && etcode run "explain this repo"'),
    ("README.md", "terminal", "etcode"),
    ("docs/acp.md", "network", 'uv tool install -U batrachian-toad --python 3.14'),
    ("docs/acp.md", "zed-settings", "{"),
    ("docs/benchmarks.md", "long", "python benchmarks/run.py"),
    ("docs/development.md", "long", 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]"'),
    ("docs/install.md", "install", "pipx install ."),
    ("docs/install.md", "install", 'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && python -m pytest -q'),
    ("docs/usage.md", "terminal", "etcode"),
}  # fmt: skip

#: Commands whose exit status depends on the machine, not on the docs: `etcode doctor` exits 1
#: when any check fails (no bubblewrap, no terminal...). They must still print their report.
MACHINE_CODES = {"etcode doctor": {0, 1}}

_TAG = re.compile(r"<!--\s*needs:\s*([\w-]+)\s*-->")
_FILE = re.compile(r"<!--\s*file:\s*(\S+)\s*-->")
_FENCE = re.compile(r"^(`{3,})\s*([\w-]*)(.*)$")
_EXIT = re.compile(r"#\s*exit\s+(\d+)\s*$")
_NEEDS_SESSION = re.compile(r"\bID\b|\bses_|\s-c\b|--continue|\bundo\b|\bsessions\b")


@dataclass(frozen=True)
class Block:
    file: str  # relative to the repository
    line: int  # of the opening fence
    lang: str
    text: str
    tag: str | None

    @property
    def first(self) -> str:
        """The block's first line without its trailing comment."""
        first = next((line for line in self.text.splitlines() if line.strip()), "")
        return first.split("  #", 1)[0].strip()

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


def blocks_of(path: Path, root: Path = REPO) -> list[Block]:
    """The fenced blocks of one Markdown file, each with the tag of the comments before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    tag: str | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line.strip())
        if fence:
            ticks, lang = fence.group(1), fence.group(2).lower()
            end = next(
                (j for j in range(index + 1, len(lines)) if lines[j].strip() == ticks),
                len(lines),
            )
            text = "\n".join(lines[index + 1 : end])
            found.append(Block(str(path.relative_to(root)), index + 1, lang, text, tag))
            tag = None
            index = end + 1
            continue
        stripped = line.strip()
        if stripped.startswith("<!--"):
            match = _TAG.search(stripped)
            if match:
                tag = match.group(1)
        elif stripped:
            tag = None  # a tag applies to the very next block only
        index += 1
    return found


def example_files(paths: list[Path]) -> dict[str, str]:
    """The blocks a ``<!-- file: PATH -->`` comment names (a custom command, a skill), by
    PATH: every docs project holds them, so the lines that use them run for real."""
    found: dict[str, str] = {}
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        for index, line in enumerate(lines[:-1]):
            named = _FILE.fullmatch(line.strip())
            fence = _FENCE.match(lines[index + 1].strip())
            if named and fence:
                name = named.group(1)
                assert not Path(name).is_absolute() and ".." not in Path(name).parts, (
                    f"{path}:{index + 1}: an example file's path stays inside the docs project: {name}"
                )
                ticks = fence.group(1)
                end = next(j for j in range(index + 2, len(lines)) if lines[j].strip() == ticks)
                found[name] = "\n".join(lines[index + 2 : end])
    return found


ALL_BLOCKS = [block for path in DOC_FILES for block in blocks_of(path)]
EXAMPLE_FILES = example_files(DOC_FILES)
SHELL_BLOCKS = [b for b in ALL_BLOCKS if b.lang in SHELL_LANGS and b.tag is None]
CONFIG_BLOCKS = [b for b in ALL_BLOCKS if b.lang in CONFIG_LANGS and b.tag is None]
PYTHON_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "python" and b.tag is None]


def commands_of(block: Block) -> list[str]:
    """The command lines of a block: ``console`` ones start with ``$ ``; continuation lines
    (a trailing backslash) are joined; comment lines are left out."""
    commands: list[str] = []
    pending = ""
    for raw in block.text.splitlines():
        line = raw.rstrip()
        if block.lang == "console":
            if not line.startswith("$ ") and not pending:
                continue
            line = line.removeprefix("$ ")
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if pending:
            line = line.lstrip()
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        commands.append(pending + line)
        pending = ""
    return commands


# --- the scripted model ---------------------------------------------------------------------


def answer(request: Recorded) -> Reply:
    """Each new task writes a small file (so ``etcode undo`` has a turn to undo), then says
    it is done; any other request (a tool result, a workflow role) gets a short answer."""
    messages = request.body.get("messages") or []
    last = messages[-1] if messages else {}
    if last.get("role") == "user" and isinstance(last.get("content"), str):
        name = f"note-{len(request.body.get('messages', []))}-{abs(hash(last['content'])) % 10_000}.md"
        return Reply(calls=[Call("WriteFile", {"file_path": name, "content": "a note\n"})])
    return Reply(text="Done.")


def serve(llm: FakeLLM) -> None:
    """Enough answers for any one command (a workflow run makes several requests)."""
    llm._queue.clear()
    llm.script(*[answer] * 60)


# --- the project --------------------------------------------------------------------------


@dataclass
class Project:
    folder: Path
    env: dict[str, str]
    session: str


def run_line(line: str, project: Project, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail\n{line}"],
        cwd=project.folder,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def make_project(tmp_path: Path, llm: FakeLLM, *, session: bool = True) -> Project:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "cli.py").write_text("def main():\n    print('hi')\n", encoding="utf-8")
    for name, text in EXAMPLE_FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text + "\n", encoding="utf-8")
    write_config(folder, llm)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "etcode"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m etcode "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    if shutil.which("jq") is None:  # a stand-in that checks its input is JSON Lines
        jq = bin_dir / "jq"
        jq.write_text(
            f'#!/bin/sh\nexec "{sys.executable}" -c "import json,sys; '
            f'[print(json.dumps(json.loads(l), indent=2)) for l in sys.stdin if l.strip()]"\n',
            encoding="utf-8",
        )
        jq.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    for provider_id, known in KNOWN_PROVIDERS.items():
        base = llm.anthropic_base_url if known.type == "anthropic" else llm.openai_base_url
        env[f"{provider_id.upper()}_BASE_URL"] = base
        env[known.key_env[0]] = "sk-docs-test"
    del env["OLLAMA_BASE_URL"]  # Ollama is found through its own OLLAMA_HOST
    env["OLLAMA_HOST"] = f"127.0.0.1:{llm.port}"
    for git in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init"],
    ):
        subprocess.run(["git", *git], cwd=folder, check=True, capture_output=True, timeout=30)
    project = Project(folder, env, "")
    if not session:
        return project
    serve(llm)
    made = run_line('etcode run --format json "make a first session"', project)
    assert made.returncode == 0, made.stderr
    project.session = json.loads(made.stdout.strip().splitlines()[-1])["session_id"]
    return project


def substitute(line: str, session: str) -> str:
    """Placeholders of the docs replaced by a real session id."""
    line = re.sub(r"\bses_[0-9A-Za-z]*…?", session[:12], line)
    return re.sub(r"\bID\b", session, line)


def expected_codes(line: str) -> set[int]:
    """0, the code a ``# exit N`` comment states, or a machine-dependent set."""
    match = _EXIT.search(line)
    if match:
        return {int(match.group(1))}
    return next((codes for command, codes in MACHINE_CODES.items() if line.startswith(command)), {0})


# --- the tests ----------------------------------------------------------------------------


def test_every_document_has_blocks_and_the_tagged_ones_are_listed() -> None:
    tagged = {(b.file, b.tag, b.first) for b in ALL_BLOCKS if b.tag is not None}
    print("\nblocks the docs test does not run:")
    for file, tag, first in sorted(tagged, key=lambda t: (t[0], t[2])):
        print(f"  {file}  needs: {tag}  {first}")
    assert tagged == TAGGED
    assert SHELL_BLOCKS and CONFIG_BLOCKS
    assert {b.file for b in SHELL_BLOCKS} >= {"README.md", "docs/usage.md", "docs/sessions.md"}


def _blocks_param(blocks: list[Block]) -> list[Any]:
    return [pytest.param(block, id=str(block)) for block in blocks]


@pytest.mark.parametrize("block", _blocks_param(SHELL_BLOCKS))
def test_shell_block_runs(block: Block, llm: FakeLLM, tmp_path: Path) -> None:
    commands = commands_of(block)
    assert commands, f"{block}: a shell block without a command"
    # A session to continue, show or undo, made first (only where a line needs one: it costs a run).
    project = make_project(tmp_path, llm, session=any(_NEEDS_SESSION.search(c) for c in commands))
    for command in commands:
        line = substitute(command, project.session)
        serve(llm)
        proc = run_line(line, project)
        output = proc.stdout + proc.stderr
        where = f"{block}: {line}\nexit {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
        assert proc.returncode in expected_codes(command), where
        assert "Traceback (most recent call last)" not in output, where
        if proc.returncode == 0:
            assert not re.search(r"(?m)^error:", proc.stderr), where
        assert proc.stdout.strip() or proc.stderr.strip(), f"{where}\n(no output at all)"


@pytest.mark.parametrize("block", _blocks_param(PYTHON_BLOCKS))
def test_python_block_runs(block: Block, llm: FakeLLM, tmp_path: Path) -> None:
    """A Python example runs as written, its hosted model redirected to the scripted server."""
    project = make_project(tmp_path, llm, session=False)
    script = tmp_path / "example.py"
    script.write_text(block.text, encoding="utf-8")
    serve(llm)
    proc = run_line(f"python {script}", project)
    where = f"{block}\nexit {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}"
    assert proc.returncode == 0, where
    assert "Done." in proc.stdout, where


@pytest.mark.parametrize("block", _blocks_param(CONFIG_BLOCKS))
def test_config_block_loads(block: Block, tmp_path: Path) -> None:
    path = tmp_path / "etcode.json"
    path.write_text(block.text, encoding="utf-8")
    load_file(path, env={"ANTHROPIC_API_KEY": "sk-docs-test"})


def test_a_documented_key_that_does_not_exist_fails(tmp_path: Path) -> None:
    """The config check can fail: a misspelt key in a block is an error naming it."""
    from etcode.util.errors import ConfigError

    path = tmp_path / "etcode.json"
    path.write_text('{"model": "ollama/qwen2.5-coder", "compaction": {"autom": true}}', encoding="utf-8")
    with pytest.raises(ConfigError, match="autom"):
        load_file(path, env={})


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_links_between_the_documents_resolve() -> None:
    broken: list[str] = []
    for path in DOC_FILES:
        for target in _LINK.findall(path.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file_part, _, fragment = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                broken.append(f"{path.relative_to(REPO)}: {target}")
                continue
            if fragment and linked.suffix == ".md":
                headings = re.findall(r"(?m)^#+ (.+)$", linked.read_text(encoding="utf-8"))
                if fragment not in {anchor(h) for h in headings}:
                    broken.append(f"{path.relative_to(REPO)}: {target}")
    assert not broken


def test_the_readme_first_screen_is_short_and_holds_the_setup_lines() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    first_screen = readme.split("\n## Learn more", 1)[0]
    assert first_screen.count("\n") < 60
    setup = readme.split("<!-- setup:begin -->", 1)[1].split("<!-- setup:end -->", 1)[0]
    assert 'pipx install . && etcode run "explain this repo"' in setup
    assert (
        'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]" && python -m pytest -q'
        in setup
    )
    assert "--model ollama/" in first_screen and "etcode doctor" in first_screen


def test_tags_apply_to_the_next_block_only_and_lines_are_read_as_documented(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- needs: network -->\n<!-- setup:begin -->\n```sh\ncurl x\n```\n\n"
        "<!-- needs: terminal -->\nA paragraph ends the tag.\n\n```console\n$ etcode run \\\n  hi\nhello\n"
        "$ etcode sessions show ID   # exit 1\n```\n",
        encoding="utf-8",
    )
    first, second = blocks_of(page, root=tmp_path)
    assert (first.tag, second.tag) == ("network", None)
    assert commands_of(second) == ["etcode run hi", "etcode sessions show ID   # exit 1"]
    assert expected_codes(commands_of(second)[1]) == {1}
    assert expected_codes("etcode doctor --json") == {0, 1}
    assert substitute("etcode --session ses_01a2… show ID", "ses_0123456789abcdef") == (
        "etcode --session ses_01234567 show ses_0123456789abcdef"
    )


def test_example_files_are_in_every_docs_project() -> None:
    """The custom command docs/extending.md shows is a file of each docs project, so
    ``etcode run /review cli.py`` there runs the command (its ``@$1`` must find cli.py)."""
    assert EXAMPLE_FILES[".etcode/commands/review.md"].startswith("---\ndescription: Review a file")


@pytest.mark.parametrize("name", ["../outside.md", "/tmp/abs.md", "a/../../b.md"])
def test_an_example_file_outside_the_docs_project_is_refused(tmp_path: Path, name: str) -> None:
    page = tmp_path / "page.md"
    page.write_text(f"<!-- file: {name} -->\n```markdown\nx\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="stays inside the docs project"):
        example_files([page])
    page.write_text("<!-- file: .etcode/commands/x.md -->\n```markdown\nx\n```\n", encoding="utf-8")
    assert example_files([page]) == {".etcode/commands/x.md": "x"}

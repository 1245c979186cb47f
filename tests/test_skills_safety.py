"""Skill discovery against hostile or odd files: FIFOs and devices never hang a start, big
front matter is bounded, a refused link does not hide the user's own skill, ``disabled``
matches names only, and only a ``---`` at column 0 closes the front matter."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from etcode.config.loader import load_config
from etcode.extensions.skills import SkillSet, find_skills
from tests.project_support import git_init


def write_skill(folder: Path, front: str, body: str = "Do the thing.\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_init(tmp_path / "repo")


def find_within(directory: Path, worktree: Path, seconds: float = 30.0, **kwargs: object) -> SkillSet:
    """``find_skills`` in a thread that must end (a hang fails the test, not the run)."""
    box: dict[str, SkillSet] = {}
    thread = threading.Thread(
        target=lambda: box.setdefault("found", find_skills(directory, worktree, **kwargs)),  # type: ignore[arg-type]
        daemon=True,
    )
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "find_skills hung"
    return box["found"]


def test_a_fifo_skill_file_is_skipped_not_read(repo: Path) -> None:
    fifo = repo / ".claude" / "skills" / "evil" / "SKILL.md"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    write_skill(repo / ".claude" / "skills" / "good", "name: good\ndescription: Fine.\n")
    found = find_within(repo, repo)
    assert found.names() == ["good"]
    assert found.warnings == [f"skipped skill {fifo}: not a regular file"]


def test_a_users_skill_linked_to_a_device_is_skipped(repo: Path) -> None:
    home = Path(os.environ["HOME"])
    folder = home / ".claude" / "skills" / "zero"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").symlink_to("/dev/zero")
    found = find_within(repo, repo)
    assert found.names() == []
    assert found.warnings == [f"skipped skill {folder / 'SKILL.md'}: not a regular file"]


def test_front_matter_without_end_is_bounded(repo: Path) -> None:
    path = repo / ".claude" / "skills" / "big" / "SKILL.md"
    path.parent.mkdir(parents=True)
    with open(path, "wb") as handle:  # one endless line: no line limit would stop it
        handle.write(b"---\nname: big\ndescription: " + b"a" * (64 * 1024 * 40))
    found = find_within(repo, repo)
    assert found.names() == []
    [warning] = found.warnings
    assert warning.startswith(f"skipped skill {path}: front matter is not closed") and "64 KB" in warning


def test_a_refused_link_does_not_hide_the_users_own_skill(repo: Path) -> None:
    home = Path(os.environ["HOME"])
    mine = write_skill(home / ".claude" / "skills" / "mine", "name: mine\ndescription: The user's own.\n")
    (repo / ".claude").symlink_to(home / ".claude")  # the project links to the user's folder
    found = find_within(repo, repo, config=load_config(repo, repo))
    assert found.names() == ["mine"]
    assert found.get("mine").path == mine and found.get("mine").source == "user"  # type: ignore[union-attr]
    assert found.warnings == []  # the same file, taken as the user's: nothing refused


def test_a_refused_link_warns_once(repo: Path, tmp_path: Path) -> None:
    outside = write_skill(tmp_path / "elsewhere" / "x", "name: x\ndescription: Outside.\n")
    for sub in (".claude", ".agents"):
        (repo / sub / "skills").mkdir(parents=True)
        (repo / sub / "skills" / "x").symlink_to(outside.parent)
    found = find_within(repo, repo, config=load_config(repo, repo))
    assert found.names() == [] and len(found.warnings) == 1 and "outside the project" in found.warnings[0]


def test_disabled_matches_names_not_folders(repo: Path) -> None:
    skills = repo / ".claude" / "skills"
    write_skill(skills / "folder-x", "name: other-name\ndescription: Name differs from the folder.\n")
    write_skill(skills / "kept", "name: gone\ndescription: Disabled by name.\n")
    config = load_config(repo, repo)
    config.skills.disabled = ["folder-x", "gone"]
    found = find_within(repo, repo, config=config)
    assert found.names() == ["other-name"]


def test_only_a_fence_at_column_zero_closes_the_front_matter(repo: Path) -> None:
    write_skill(
        repo / ".claude" / "skills" / "fence",
        "name: fence\ndescription: |\n  text\n  ---\n  more\n",
        body="The body.\n",
    )
    found = find_within(repo, repo)
    skill = found.get("fence")
    assert skill is not None, found.warnings
    assert skill.description == "text --- more"
    assert skill.body() == "The body."


async def test_a_huge_body_is_cut_and_the_files_come_first(repo: Path) -> None:
    from etcode.extensions.skill_tool import SkillTool
    from etcode.prompt.mentions import MAX_ATTACH_BYTES
    from tests.tool_support import make_ctx

    folder = repo / ".claude" / "skills" / "huge"
    write_skill(folder, "name: huge\ndescription: A long one.\n", body="step\n" * 100_000)  # 500 KB
    (folder / "helper.py").write_text("print()\n")
    tool = SkillTool(find_within(repo, repo))
    result = await tool.run(tool.parse({"name": "huge"}), make_ctx(repo))
    assert not result.is_error
    assert len(result.output.encode()) < MAX_ATTACH_BYTES  # what /skills NAME attaches too
    assert "cut at 64 KB" in result.output
    # Tool output is cut at 50 KB: the file list must come before the body.
    assert result.output.index("- helper.py") < result.output.index("<skill name=")


async def test_the_skill_tool_takes_args(repo: Path) -> None:
    from etcode.extensions.skill_tool import SkillTool
    from tests.tool_support import make_ctx

    write_skill(repo / ".claude" / "skills" / "notes", "name: notes\ndescription: Notes.\n")
    tool = SkillTool(find_within(repo, repo))
    result = await tool.run(tool.parse({"skill": "notes", "args": "for release 2.1"}), make_ctx(repo))
    assert not result.is_error
    assert result.output.endswith("The user's request for this skill: for release 2.1")


async def test_loading_checks_the_link_again(repo: Path, tmp_path: Path) -> None:
    from etcode.extensions.skill_tool import SkillTool
    from tests.tool_support import make_ctx

    path = write_skill(repo / ".claude" / "skills" / "swap", "name: swap\ndescription: Fine at start.\n")
    found = find_within(repo, repo, config=load_config(repo, repo))
    assert found.names() == ["swap"]
    secret = tmp_path / "secret.md"
    secret.write_text("---\nname: swap\ndescription: x\n---\nTOKEN=hunter2\n")
    path.unlink()
    path.symlink_to(secret)  # after discovery, the file now links out of the project
    tool = SkillTool(found)
    from etcode.tools.base import ToolError

    with pytest.raises(ToolError, match="outside the project"):
        await tool.run(tool.parse({"name": "swap"}), make_ctx(repo))


def test_agent_skills_one_path_and_relative_to_directory(repo: Path, tmp_path: Path) -> None:
    from etcode import Agent

    write_skill(repo / "team-skills" / "mine", "name: mine\ndescription: Mine.\n")
    one = Agent("fake/m", base_url="http://127.0.0.1:9/v1", api_key="k", directory=repo, skills="team-skills")
    assert one.skills == [(repo / "team-skills").resolve()]
    bare = Agent("fake/m", base_url="http://127.0.0.1:9/v1", api_key="k", skills=repo / "team-skills")
    assert bare.skills == [(repo / "team-skills").resolve()]


def test_the_full_list_has_a_budget(repo: Path) -> None:
    from etcode.extensions.skill_prompt import skills_part

    for i in range(200):
        write_skill(
            repo / ".claude" / "skills" / f"s{i:03d}", f"name: s{i:03d}\ndescription: {'word ' * 150}\n"
        )
    found = find_within(repo, repo)
    assert len(found) == 200
    text = skills_part(found.skills).text
    assert len(text) < 12_000 + 2000  # the budget, and the part's own text
    shown = text.count("\n- s")
    assert 0 < shown < 200
    assert f'- … and {200 - shown} more: call Skill with name "?" for the full list.' in text


def test_linked_skills_ask_git_once(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``.claude/skills/x -> ../../.agents/skills/x`` for many skills: one ``git
    check-ignore`` for them all (one each cost ~6 ms a skill at every start), and an ignored
    target still refused."""
    import subprocess

    (repo / ".gitignore").write_text(".agents/skills/private/\n")
    for name in ["private", *(f"s{i:02d}" for i in range(20))]:
        write_skill(repo / ".agents" / "skills" / name, f"name: {name}\ndescription: Skill {name}.\n")
        (repo / ".claude" / "skills").mkdir(parents=True, exist_ok=True)
        (repo / ".claude" / "skills" / name).symlink_to(f"../../.agents/skills/{name}")
    calls: list[list[str]] = []
    real_run = subprocess.run

    def counting_run(args: list[str], *rest: object, **kwargs: object) -> object:
        calls.append(list(args))
        return real_run(args, *rest, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(subprocess, "run", counting_run)
    found = find_within(repo, repo, config=load_config(repo, repo))
    # The link to the ignored folder is refused; the folder itself is the user's own file.
    assert found.names() == ["private", *(f"s{i:02d}" for i in range(20))]
    [warning] = found.warnings
    assert warning.startswith(f"skipped skill {repo / '.claude' / 'skills' / 'private' / 'SKILL.md'}: ")
    assert "git-ignored" in warning
    assert len([c for c in calls if "check-ignore" in c]) == 1, calls


#: Front matter shapes of published skills: discovery scans them without YAML.
SHAPES = {
    "literal": "name: lit\ndescription: |\n  Line one.\n  Line two: with colon.\n",
    "folded": "name: fold\ndescription: >-\n  Folded one\n  two. # not a comment\n",
    "folded-keep": "name: fold\ndescription: >\n  Folded one\n\n  after a blank.\n",
    "plain-multiline": "name: plainml\ndescription: Plain start\n  continued here\n  and here.\n",
    "double-quoted": 'name: "quoted"\ndescription: "Use it for \'docx\' files."\n',
    "single-quoted": "name: 'single'\ndescription: 'It''s quoted.'\n",
    "metadata-map": (
        "name: meta\ndescription: With a map.\nmetadata:\n  author: me\n  version: '1.0'\n"
        "  tags: [a, b]\nlicense: Apache-2.0\n"
    ),
    "allowed-tools-list": "name: tools\ndescription: Lists tools.\nallowed-tools:\n  - Read\n  - Bash(git:*)\n",
    "allowed-tools-dash-at-zero": "name: tools\ndescription: Dash at column 0.\nallowed-tools:\n- Read\n- Grep\n",
    "boolean-flag": "name: manual\ndescription: By hand only.\ndisable-model-invocation: true\n",
    "boolean-false": "name: auto\ndescription: Allowed.\ndisable-model-invocation: false\n",
    "comment-line": "# a comment\nname: c\ndescription: After a comment.\n",
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_discovery_reads_name_and_description_as_yaml_does(shape: str) -> None:
    import yaml

    from etcode.extensions.skills import scan_front_matter

    front = SHAPES[shape]
    expected = yaml.safe_load(front)
    scanned = scan_front_matter(front.splitlines())
    assert scanned is not None, "read without YAML"
    name, description, user_only = scanned
    assert name == expected["name"]
    assert " ".join(str(description).split()) == " ".join(expected["description"].split())
    assert user_only is (expected.get("disable-model-invocation") is True)


@pytest.mark.parametrize(
    "front",
    [
        "name: x\ndescription: Use when: asked\n",  # a mapping in YAML: an error
        "name: x\ndescription: text # a comment\n",
        'name: x\ndescription: "over\n  two lines"\n',
        "name: x\ndescription: yes\n",
        "name: x\ndescription:\n  - a list\n",
        "name: x\ndisable-model-invocation: maybe\n",
        '"name": x\n',
        "name: &anchor x\n",
    ],
)
def test_discovery_leaves_what_it_cannot_read_to_yaml(front: str) -> None:
    from etcode.extensions.skills import scan_front_matter

    assert scan_front_matter(front.splitlines()) is None


def test_discovery_imports_no_yaml_for_the_usual_shapes(repo: Path) -> None:
    """yaml's import is most of a start's skill cost: discovery of every shape above, the
    list and the Skill tool import none of it; the extra keys read it when asked for."""
    import re
    import subprocess
    import sys

    for shape, front in SHAPES.items():
        write_skill(repo / ".claude" / "skills" / shape, re.sub(r"(?m)^name: .*$", f"name: {shape}", front))
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from etcode.extensions.skills import find_skills\n"
        "from etcode.extensions.skill_prompt import skills_part\n"
        "found = find_skills(Path(sys.argv[1]), Path(sys.argv[1]))\n"
        "assert not found.warnings, found.warnings\n"
        "skills_part(found.for_model().skills)\n"
        "print(len(found), len(found.for_model()), 'yaml' in sys.modules)\n"
        "tools = found.get('allowed-tools-list')\n"
        "print(tools.allowed_tools, found.get('metadata-map').extra['metadata'], 'yaml' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(repo)], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == f"{len(SHAPES)} {len(SHAPES) - 1} False"  # one by hand only
    assert second.startswith("('Read', 'Bash(git:*)') {'author': 'me'") and second.endswith("True")


def test_refusals_in_one_go_agree_with_refusal(repo: Path, tmp_path: Path) -> None:
    from etcode.prompt.project_files import refusal, refusals

    (repo / ".gitignore").write_text("ignored/\n")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "a.md").write_text("x")
    (repo / "docs").mkdir()
    (repo / "docs" / "b.md").write_text("x")
    (repo / "docs" / ".env").write_text("x")
    (tmp_path / "out.md").write_text("x")
    links = repo / "links"
    links.mkdir()
    targets = {
        "in": repo / "docs" / "b.md",
        "ignored": repo / "ignored" / "a.md",
        "secret": repo / "docs" / ".env",
        "out": tmp_path / "out.md",
        "nowhere": repo / "missing.md",
    }
    for name, target in targets.items():
        (links / name).symlink_to(target)
    (links / "loop").symlink_to(links / "loop")
    (links / "folder").symlink_to(repo / "docs")
    paths = [*(links / n for n in [*targets, "loop"]), links / "folder" / "b.md", repo / "docs" / "b.md"]
    assert refusals(paths, repo) == [refusal(p, repo) for p in paths]
    assert [r is None for r in refusals(paths, repo)] == [True, False, False, False, False, False, True, True]

"""Skill discovery (``etcode/extensions/skills.py``) on real skill folders: the published
skills of ``tests/fixtures/skills`` (anthropics/skills) copied where teams and users keep
them, and broken or linked ones beside them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from etcode.config.loader import load_config
from etcode.extensions.skill_prompt import load_skill
from etcode.extensions.skill_tool import SkillTool
from etcode.extensions.skills import SkillSet, find_skills, simple_front_matter
from tests.project_support import git_init
from tests.tool_support import make_ctx

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
REAL = ("brand-guidelines", "internal-comms", "webapp-testing")


def published(name: str) -> dict[str, object]:
    """The front matter of a fixture skill, as YAML reads it."""
    text = (FIXTURES / name / "SKILL.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---")[1])


def put(name: str, where: Path) -> Path:
    """A copy of the real skill ``name`` in the skills folder ``where``."""
    target = where / name
    shutil.copytree(FIXTURES / name, target)
    return target


def write_skill(folder: Path, front: str, body: str = "Do the thing.\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "SKILL.md"
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_init(tmp_path / "repo")


def test_real_skills_in_each_project_folder(repo: Path) -> None:
    put("brand-guidelines", repo / ".etcode" / "skills")
    put("internal-comms", repo / ".claude" / "skills")
    put("webapp-testing", repo / ".agents" / "skills")
    found = find_skills(repo, repo)
    assert found.warnings == []
    assert sorted(found.names()) == sorted(REAL)
    for skill in found.skills:
        meta = published(skill.name)
        assert skill.description == " ".join(str(meta["description"]).split())
        assert skill.source == "project"
        assert skill.extra == {"license": meta["license"]}  # the other keys are kept
        assert skill.path.name == "SKILL.md" and skill.folder.name == skill.name
    comms = found.get("internal-comms")
    assert comms is not None
    files, total, stopped = comms.files()
    assert not stopped
    assert files == [
        "LICENSE.txt",
        "examples/3p-updates.md",
        "examples/company-newsletter.md",
        "examples/faq-answers.md",
        "examples/general-comms.md",
    ]
    assert total == 5
    assert "## When to use this skill" in comms.body() and "description:" not in comms.body()


def test_nearest_level_wins_and_a_clash_at_one_level_warns(repo: Path) -> None:
    sub = repo / "pkg" / "app"
    sub.mkdir(parents=True)
    outer = write_skill(repo / ".claude" / "skills" / "deploy", "name: deploy\ndescription: Outer deploy.\n")
    inner = write_skill(sub / ".claude" / "skills" / "deploy", "name: deploy\ndescription: Inner deploy.\n")
    found = find_skills(sub, repo)
    assert found.get("deploy") is not None and found.get("deploy").path == inner  # type: ignore[union-attr]
    assert found.warnings == []  # shadowing a farther level is no mistake
    # The same name twice at one level: the second (.claude after .etcode) is reported.
    first = write_skill(sub / ".etcode" / "skills" / "deploy", "name: deploy\ndescription: Etcode's.\n")
    found = find_skills(sub, repo)
    assert found.get("deploy").path == first  # type: ignore[union-attr]
    assert found.warnings == [f"skipped skill {inner}: the name 'deploy' is taken by {first}"]
    assert str(outer) not in " ".join(found.warnings)


def test_user_folders_follow_xdg_and_the_user_wins(repo: Path, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    xdg = tmp_path / "xdg"
    env = {**os.environ, "XDG_CONFIG_HOME": str(xdg)}
    mine = write_skill(xdg / "etcode" / "skills" / "notes", "name: notes\ndescription: My notes.\n")
    put("webapp-testing", home / ".claude" / "skills")
    write_skill(home / ".config" / "etcode" / "skills" / "ignored", "name: ignored\ndescription: Not XDG.\n")
    found = find_skills(repo, repo, env=env)
    assert found.names() == ["notes", "webapp-testing"]
    assert found.get("notes").path == mine and {s.source for s in found.skills} == {"user"}  # type: ignore[union-attr]
    team = write_skill(repo / ".claude" / "skills" / "notes", "name: notes\ndescription: The team's notes.\n")
    write_skill(repo / ".claude" / "skills" / "team-only", "name: team-only\ndescription: Theirs.\n")
    found = find_skills(repo, repo, env=env)
    # Claude Code's order: a cloned repository does not replace a skill of the user's.
    assert found.get("notes").path == mine and found.warnings == []  # type: ignore[union-attr]
    assert str(team) not in repr(found.skills) and found.names() == ["notes", "webapp-testing", "team-only"]


def test_config_paths_disabled_and_merged_layers(repo: Path, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    put("internal-comms", home / "my-skills")  # a folder of skills, from the user's config
    put("webapp-testing", repo / "tools")  # one skill folder, relative to the worktree
    put("brand-guidelines", repo / ".claude" / "skills")
    user_config = home / ".config" / "etcode" / "etcode.json"
    user_config.parent.mkdir(parents=True)
    user_config.write_text('{"skills": {"paths": ["~/my-skills"], "disabled": ["brand-guidelines"]}}')
    (repo / "etcode.json").write_text('{"skills": {"paths": ["tools/webapp-testing"]}}')
    config = load_config(repo, repo)
    assert config.skills.paths == ["~/my-skills", "tools/webapp-testing"]  # every layer's
    found = find_skills(repo, repo, config=config)
    assert found.names() == ["internal-comms", "webapp-testing"]
    assert {s.name: s.source for s in found.skills} == {
        "internal-comms": "config",
        "webapp-testing": "config",
    }
    assert found.warnings == []


BROKEN = {
    "bad-yaml": (
        "name: bad-yaml\ndescription: Use when: the user asks\n",
        "line 3 invalid YAML front matter",
    ),
    "no-description": ("name: no-description\n", "no description in its front matter"),
    "list-name": (
        "name: [a, b]\ndescription: A list for a name.\n",
        "the name in its front matter is not text",
    ),
    "bad-name": ("name: two words\ndescription: A name with a space.\n", "is not 1-64 letters"),
    "list-description": ("name: list-description\ndescription: [a, b]\n", "no description"),
}


def test_each_broken_skill_is_one_warning_naming_its_file(repo: Path) -> None:
    skills = repo / ".claude" / "skills"
    paths = {name: write_skill(skills / name, front, body="") for name, (front, _) in BROKEN.items()}
    no_front = skills / "no-front"
    no_front.mkdir()
    (no_front / "SKILL.md").write_text("# Just Markdown\n")
    unclosed = skills / "unclosed"
    unclosed.mkdir()
    (unclosed / "SKILL.md").write_text("---\nname: unclosed\ndescription: Never closed.\n")
    put("webapp-testing", skills)
    found = find_skills(repo, repo)
    assert found.names() == ["webapp-testing"]
    assert len(found.warnings) == len(BROKEN) + 2
    for name, (_, reason) in BROKEN.items():
        [line] = [w for w in found.warnings if str(paths[name]) in w]
        assert line.startswith(f"skipped skill {paths[name]}: ") and reason in line
    assert any(str(no_front / "SKILL.md") in w and "no front matter" in w for w in found.warnings)
    assert any(str(unclosed / "SKILL.md") in w and "not closed" in w for w in found.warnings)


def test_a_skill_linked_out_of_the_project_is_skipped_unless_trusted(repo: Path, tmp_path: Path) -> None:
    outside = put("internal-comms", tmp_path / "elsewhere")
    secret = write_skill(tmp_path / "loose" / "grab", "name: grab\ndescription: Linked file.\n")
    skills = repo / ".claude" / "skills"
    skills.mkdir(parents=True)
    (skills / "internal-comms").symlink_to(outside)  # a folder on the way is the link
    (skills / "grab").mkdir()
    (skills / "grab" / "SKILL.md").symlink_to(secret)  # SKILL.md itself is the link
    put("webapp-testing", skills)
    (repo / ".agents").mkdir()
    (repo / ".agents" / "skills").symlink_to(skills)  # inside the project: the same skills, once
    found = find_skills(repo, repo, config=load_config(repo, repo))
    assert found.names() == ["webapp-testing"]
    assert len(found.warnings) == 2
    assert any(
        w.startswith(f"skipped skill {skills / 'internal-comms' / 'SKILL.md'}: a link to ")
        and "outside the project" in w
        for w in found.warnings
    )
    assert any(
        w.startswith(f"skipped skill {skills / 'grab' / 'SKILL.md'}: a link to {secret}")
        for w in found.warnings
    )
    trusted = load_config(repo, repo)
    trusted.mark_trusted()
    found = find_skills(repo, repo, config=trusted)
    assert sorted(found.names()) == ["grab", "internal-comms", "webapp-testing"] and found.warnings == []


SIMPLE = [
    ["name: pdf", "description: Extract text and tables from PDF files (forms too)."],
    ["name: x", "description: Applies Anthropic's official brand colors, e.g. on slides."],
    ["name: x", "license: Complete terms in LICENSE.txt", "", "# a comment", "allowed-tools: Read Grep"],
    ["name: x", "description: Paths like a/b\\c and {braces} and 50% stay text."],
    ['description: "Use it for: \'Word doc\', \\"quotes\\", back\\\\slash, tab\\t (.docx)"'],
    ["description: 'It''s quoted: once.'", 'name: "x"'],
]
NEEDS_YAML = [
    ['description: "caf\\u00e9"'],
    ["description: 'a' b'"],
    ['description: "a" and "b"'],
    ['description: "open'],
    ["description: |-", "  block"],
    ["description: Use when: asked"],
    ["description: text # a comment"],
    ["version: 1.0"],
    ["enabled: yes"],
    ["metadata:", "  author: me"],
    ["allowed-tools:", "  - Read"],
    ["description: - dash first"],
    ["name: a", "name: b"],
    ["description:\tTabbed"],
]


@pytest.mark.parametrize("lines", SIMPLE)
def test_plain_front_matter_reads_as_yaml_does(lines: list[str]) -> None:
    assert simple_front_matter(lines) == yaml.safe_load("\n".join(lines))


@pytest.mark.parametrize("lines", NEEDS_YAML)
def test_front_matter_yaml_reads_otherwise_goes_to_yaml(lines: list[str]) -> None:
    assert simple_front_matter(lines) is None


def test_real_front_matter_in_both_readers(repo: Path) -> None:
    """A quoted description (as docx's) is read by YAML, the plain ones without it: same skills."""
    skills = repo / ".claude" / "skills"
    for name in REAL:
        put(name, skills)
    quoted = write_skill(
        skills / "docx",
        "name: docx\ndescription: \"Word documents: create, edit (.docx). Triggers include: 'Word doc'\"\n"
        "allowed-tools: Bash(pandoc:*), Read\n",
    )
    found = find_skills(repo, repo)
    assert (
        found.get("docx").description == "Word documents: create, edit (.docx). Triggers include: 'Word doc'"
    )  # type: ignore[union-attr]
    assert found.get("docx").allowed_tools == ("Bash(pandoc:*)", "Read")  # type: ignore[union-attr]
    assert found.get("docx").path == quoted  # type: ignore[union-attr]
    assert len(found) == 4


def test_the_body_is_read_when_the_skill_is_loaded(repo: Path) -> None:
    path = write_skill(
        repo / ".claude" / "skills" / "lint", "name: lint\ndescription: Lint it.\n", "Old steps.\n"
    )
    found = find_skills(repo, repo)
    path.write_text("---\nname: lint\ndescription: Lint it.\n---\nNew steps: run ruff.\n", encoding="utf-8")
    loaded = load_skill(found.skills[0])
    assert "New steps: run ruff." in loaded.text and "Old steps" not in loaded.text
    assert str(path.parent) in loaded.text


async def test_skill_tool_unknown_name_and_the_list(repo: Path) -> None:
    put("webapp-testing", repo / ".claude" / "skills")
    put("internal-comms", repo / ".claude" / "skills")
    tool = SkillTool(find_skills(repo, repo))
    ctx = make_ctx(repo)
    unknown = await tool.run(tool.parse({"name": "pdf"}), ctx)
    assert unknown.is_error
    assert 'No skill is named "pdf"' in unknown.output
    assert "- internal-comms: A set of resources" in unknown.output and "- webapp-testing: " in unknown.output
    listed = await tool.run(tool.parse({"name": "?"}), ctx)
    assert not listed.is_error and listed.output.count("\n- ") == 1
    loaded = await tool.run(tool.parse({"skill": "webapp-testing"}), ctx)  # Claude Code's argument name
    assert not loaded.is_error and loaded.summary == "Loaded skill webapp-testing"
    assert loaded.data is not None and "scripts/with_server.py" in loaded.data["files"]
    assert tool.is_read_only and tool.params_summary({"name": "webapp-testing"}) == "webapp-testing"


def test_an_empty_set_is_false() -> None:
    assert not SkillSet() and len(SkillSet()) == 0


@pytest.mark.parametrize("pad", [0, 4050, 4060, 4070, 4075, 4076, 4077, 4078, 4080, 9000])
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_front_matter_read_in_blocks_whatever_its_length(repo: Path, pad: int, newline: str) -> None:
    """The closing fence found wherever the 4 KB blocks cut the file (CRLF and a BOM too),
    and nothing after it taken for front matter."""
    folder = repo / ".claude" / "skills" / "long"
    folder.mkdir(parents=True)
    description = "A" + "b" * pad
    text = (
        newline.join(["---", "name: long", f"description: {description}", "---", "---", "name: body"])
        + newline
    )
    (folder / "SKILL.md").write_bytes(("\ufeff" + text).encode("utf-8"))
    found = find_skills(repo, repo)
    assert found.warnings == [] and found.names() == ["long"]
    assert found.skills[0].description == description
    assert found.skills[0].body() == "---\nname: body"


def test_empty_and_unclosed_front_matter(repo: Path) -> None:
    empty = write_skill(repo / ".claude" / "skills" / "empty", "", body="")
    long = repo / ".claude" / "skills" / "endless" / "SKILL.md"
    long.parent.mkdir()
    long.write_text("---\n" + "key: value\n" * 1000)
    found = find_skills(repo, repo)
    assert found.warnings == [
        f"skipped skill {empty}: no description in its front matter, nor a first paragraph",
        f"skipped skill {long}: front matter is not closed with --- within 400 lines or 64 KB",
    ]


def test_the_skill_tools_written_out_schema_is_pydantics() -> None:
    from etcode.tools.base import Tool

    tool = SkillTool(SkillSet())
    assert tool.schema().parameters == Tool._build_schema(tool).parameters


def test_a_skill_with_many_files_lists_a_hundred_and_counts_the_rest(repo: Path) -> None:
    folder = repo / ".claude" / "skills" / "icons"
    write_skill(folder, "name: icons\ndescription: Icon set.\n")
    (folder / "svg").mkdir()
    for index in range(150):
        (folder / "svg" / f"icon-{index:03d}.svg").write_text("<svg/>")
    (folder / ".cache").mkdir()
    (folder / ".cache" / "hidden.bin").write_text("x")
    loaded = load_skill(find_skills(repo, repo).skills[0])
    assert loaded.total == 150 and len(loaded.files) == 100
    assert "- svg/icon-099.svg\n- … and 50 more" in loaded.text and "hidden.bin" not in loaded.text


def test_a_skill_with_thousands_of_empty_folders_stops_listing(repo: Path) -> None:
    """Nested empty folders have no files to count: the walk stops after
    ``MAX_VISITED_FOLDERS`` folders all the same, and the model is told so."""
    from etcode.extensions.skills import MAX_VISITED_FOLDERS

    folder = repo / ".claude" / "skills" / "deep"
    write_skill(folder, "name: deep\ndescription: Deep.\n")
    (folder / "a.txt").write_text("a")
    for index in range(MAX_VISITED_FOLDERS + 500):
        (folder / "d" / f"{index // 50:03d}" / f"{index:05d}").mkdir(parents=True)
    skill = find_skills(repo, repo).skills[0]
    files, total, stopped = skill.files()
    assert stopped and files == ["a.txt"] and total == 1
    loaded = load_skill(skill)
    assert "- a.txt\n- … (listing stopped)" in loaded.text


def test_named_folders_a_skill_or_a_folder_of_skills_and_one_missing(repo: Path, tmp_path: Path) -> None:
    one = put("webapp-testing", tmp_path / "mine")
    many = tmp_path / "team"
    put("internal-comms", many)
    put("brand-guidelines", many)
    found = find_skills(repo, repo, extra=[one, many, tmp_path / "nowhere"])
    assert found.names() == ["brand-guidelines", "internal-comms", "webapp-testing"]
    assert {s.source for s in found.skills} == {"api"}
    assert found.warnings == [f"skills folder not found: {tmp_path / 'nowhere'}"]


def test_no_name_takes_the_folders_and_no_description_the_first_paragraph(repo: Path) -> None:
    skills = repo / ".claude" / "skills"
    write_skill(skills / "no-name", "description: Has no name.\n")
    write_skill(
        skills / "no-description", "name: plain\n", body="# Title\n\nFirst line\nsecond line.\n\nMore.\n"
    )
    found = find_skills(repo, repo)
    assert found.warnings == []
    assert found.get("no-name").description == "Has no name."  # type: ignore[union-attr]
    assert found.get("plain").description == "First line second line."  # type: ignore[union-attr]

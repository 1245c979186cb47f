"""What the model reads of skills: the system prompt's list (name and description only; in
the lean prompt a bounded one) and a loaded skill (its body, folder and bundled files), as
the ``Skill`` tool and the chat's ``/skills NAME`` give it. The texts are in
``prompts/skills/``."""

from __future__ import annotations

from collections.abc import Sequence

from etcode.extensions.skills import Skill
from etcode.prompt import templates
from etcode.prompt.parts import PromptPart

#: The longest description the full list shows (the Agent Skills limit).
DESCRIPTION_CHARS = 1024
#: The full list's budget (characters, about 3k tokens; Claude Code gives its list a similar
#: share): the skills past it are counted, and the Skill tool lists them (name "?").
LIST_BUDGET_CHARS = 12_000
#: The lean prompt lists at most this many skills, each description cut to its first
#: sentence of at most :data:`LEAN_DESCRIPTION_CHARS` characters.
LEAN_MAX_SKILLS = 12
LEAN_DESCRIPTION_CHARS = 100
#: The name that lists every skill (no skill can have it).
LIST_NAME = "?"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def skills_part(skills: Sequence[Skill]) -> PromptPart:
    """The system prompt's part listing the skills, ``- name: description``, in at most
    :data:`LIST_BUDGET_CHARS` characters (then how many more the Skill tool can list)."""
    lines: list[str] = []
    used = 0
    for skill in skills:
        line = f"- {skill.name}: {_cut(skill.description, DESCRIPTION_CHARS)}"
        if used + len(line) + 1 > LIST_BUDGET_CHARS:
            break
        lines.append(line)
        used += len(line) + 1
    return _part("skills/listing.md", lines, len(skills))


def lean_skills_part(skills: Sequence[Skill]) -> PromptPart:
    """The lean prompt's list: the first :data:`LEAN_MAX_SKILLS` skills, each with the first
    sentence of its description, then how many more the Skill tool can list."""
    from etcode.tools.lean import first_sentence

    shown = skills[:LEAN_MAX_SKILLS]
    lines = [f"- {s.name}: {first_sentence(s.description, LEAN_DESCRIPTION_CHARS)}" for s in shown]
    return _part("skills/lean.md", lines, len(skills))


def _part(source: str, lines: list[str], count: int) -> PromptPart:
    """The ``skills`` part of ``source`` listing ``lines``, and how many of the ``count``
    skills it leaves out (the Skill tool lists them)."""
    if count > len(lines):
        more = templates.load("skills/lean_more.md").strip()
        lines = [*lines, templates.render(more, {"count": str(count - len(lines))})]
    text = templates.render(templates.load(source), {"skills": "\n".join(lines)})
    return PromptPart("skills", source, text.strip())


class LoadedSkill:
    """A loaded skill: the text the model reads, and its bundled files (at most
    ``MAX_LISTED_FILES`` of ``total``)."""

    def __init__(self, text: str, files: list[str], total: int) -> None:
        self.text = text
        self.files = files
        self.total = total


def load_skill(skill: Skill) -> LoadedSkill:
    """A loaded skill as the model reads it: its instructions, its folder's absolute path and
    its bundled files. Blocking (reads the skill): call it in a worker thread."""
    files, total, stopped = skill.files()
    listing = "\n".join(f"- {name}" for name in files) or "(none)"
    if total > len(files):
        listing += f"\n- … and {total - len(files)} more"
    if stopped:
        listing += "\n- … (listing stopped)"
    text = templates.render(
        templates.load("skills/loaded.md"),
        {"name": skill.name, "folder": str(skill.folder), "body": skill.body(), "files": listing},
    ).strip()
    if skill.allowed_tools:
        note = templates.render(
            templates.load("skills/allowed_tools.md"), {"tools": ", ".join(skill.allowed_tools)}
        )
        text += "\n\n" + note.strip()
    return LoadedSkill(text, files, total)


def by_hand_text(skill: Skill, loaded: LoadedSkill, request: str = "") -> str:
    """What the chat attaches to ``/skills NAME [REQUEST]``: the loaded skill, after a line
    saying the user chose it (and, without a request, that the model asks for one)."""
    preface = templates.load("skills/by_hand.md" if request.strip() else "skills/by_hand_alone.md")
    return templates.render(preface, {"name": skill.name}).strip() + "\n\n" + loaded.text


def unknown_text(name: str, skills: Sequence[Skill]) -> str:
    """The answer to a name no skill has (``?`` asks for it): every skill's name and the
    first sentence of its description."""
    from etcode.tools.lean import first_sentence

    lines = "\n".join(f"- {s.name}: {first_sentence(s.description, LEAN_DESCRIPTION_CHARS)}" for s in skills)
    if name == LIST_NAME:
        return lines
    return templates.render(templates.load("skills/unknown.md"), {"name": name, "skills": lines}).strip()

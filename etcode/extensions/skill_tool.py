"""``Skill``: the model loads a skill by name — its instructions, its folder's absolute path
and the files it bundles (read with ReadFile). Offered only when skills exist
(``wiring/runtime.py``); read-only, so it runs alongside other reads without a question."""

from __future__ import annotations

import asyncio

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from etcode.extensions.skill_prompt import LIST_NAME, load_skill, unknown_text
from etcode.extensions.skills import SkillError, SkillSet
from etcode.prompt import templates
from etcode.provider.types import ToolSchema
from etcode.tools.base import Tool, ToolContext, ToolError, ToolResult
from etcode.util.json_types import JsonObject

_NAME_HELP = 'The skill\'s name, as listed under "Skills" ("?" lists every skill).'
_ARGS_HELP = "Optional: what to apply the skill to (passed along with its instructions)."


class SkillParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Claude Code's Skill tool calls it ``skill``: a model used to that is understood too.
    name: str = Field(
        validation_alias=AliasChoices("name", "skill"),
        description=_NAME_HELP,
    )
    # Claude Code's Skill tool takes ``args`` too: passed along with the skill.
    args: str | None = Field(default=None, description=_ARGS_HELP)


def parameters() -> JsonObject:
    """``SkillParams``' JSON schema, written out: pydantic would take a start ~2 ms to make
    it (tests/test_skills.py checks that the two agree)."""
    name: JsonObject = {"description": _NAME_HELP, "title": "Name", "type": "string"}
    args: JsonObject = {
        "anyOf": [{"type": "string"}, {"type": "null"}],
        "default": None,
        "description": _ARGS_HELP,
        "title": "Args",
    }
    return {
        "additionalProperties": False,
        "properties": {"name": name, "args": args},
        "required": ["name"],
        "type": "object",
    }


class SkillTool(Tool):
    name = "Skill"
    Params = SkillParams
    is_read_only = True

    def __init__(self, skills: SkillSet) -> None:
        self.skills = skills

    @property
    def description(self) -> str:  # type: ignore[override]
        return templates.load("skills/tool.md").strip()

    def _build_schema(self) -> ToolSchema:
        return ToolSchema(self.name, self.description, parameters())

    async def run(self, params: SkillParams, ctx: ToolContext) -> ToolResult:
        wanted = params.name.strip().removeprefix("/")
        skill = self.skills.get(wanted)
        if skill is None:
            text = unknown_text(wanted, self.skills.skills)
            if wanted == LIST_NAME:
                return ToolResult(text, summary=f"Listed {len(self.skills)} skills")
            return ToolResult(text, is_error=True, summary=f"No skill named {wanted}")
        try:
            loaded = await asyncio.to_thread(load_skill, skill)
        except (OSError, SkillError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            raise ToolError(f"cannot read skill {skill.name} ({skill.path}): {reason}") from None
        text = loaded.text
        if params.args and params.args.strip():
            request = templates.render(templates.load("skills/args.md"), {"args": params.args.strip()})
            text += "\n\n" + request.strip()
        return ToolResult(
            text,
            data={
                "name": skill.name,
                "folder": str(skill.folder),
                "files": loaded.files,
                "count": loaded.total,
            },
            summary=f"Loaded skill {skill.name}",
        )

    def params_summary(self, params: JsonObject) -> str:
        return str(params.get("name") or params.get("skill") or "")

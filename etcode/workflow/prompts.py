"""The role prompts of the workflow and the ``PromptManager`` that fills them.

Core templates live in ``prompts/workflow/{planner,executor,verifier}.md``; each holds a
``{{businessContext}}`` slot filled from ``.etcode/prompts/<role>.md`` (the nearest one
from the working directory up to the worktree root), else from the config
(``"workflow": {"prompts": {"planner": "..."}}``). Code may set the business context or
replace a whole template per role.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from etcode.prompt import templates

if TYPE_CHECKING:
    from etcode.config.schema import Config

Role = Literal["planner", "executor", "verifier"]
ROLES: tuple[Role, ...] = ("planner", "executor", "verifier")
NO_CONTEXT = "(none given)"
PROJECT_DIR = Path(".etcode") / "prompts"


def _check(role: str) -> Role:
    if role not in ROLES:
        raise ValueError(f"unknown workflow role {role!r}; roles: {', '.join(ROLES)}")
    return role


class PromptManager:
    """Per-role system prompts: template (built-in or overridden) + business context."""

    def __init__(
        self,
        directory: Path | None = None,
        worktree: Path | None = None,
        config_context: Mapping[str, str] | None = None,
    ) -> None:
        self._templates: dict[Role, str] = {}
        self._context: dict[Role, str] = {}
        self._sources: dict[Role, str] = {}
        for role in ROLES:
            found = _project_file(role, directory, worktree) if directory is not None else None
            if found is not None:
                self._context[role] = found.read_text(encoding="utf-8").strip()
                self._sources[role] = str(found)
            elif config_context and (config_context.get(role) or "").strip():
                self._context[role] = str(config_context[role]).strip()
                self._sources[role] = "config"

    @classmethod
    def from_config(
        cls, config: Config | None, directory: Path | None, worktree: Path | None
    ) -> PromptManager:
        """Business context from ``.etcode/prompts`` files, else the config's ``workflow.prompts``."""
        prompts = config.workflow.prompts if config is not None else {}
        return cls(directory, worktree, {str(role): text for role, text in prompts.items()} or None)

    def set_business_context(self, role: str, text: str) -> None:
        """Use ``text`` as ``role``'s business context (replaces files and config)."""
        role = _check(role)
        self._context[role] = text.strip()
        self._sources[role] = "set"

    def override(self, role: str, template: str) -> None:
        """Replace ``role``'s whole template (it may keep a ``{{businessContext}}`` slot)."""
        self._templates[_check(role)] = template

    def business_context(self, role: str) -> str:
        return self._context.get(_check(role), "")

    def source(self, role: str) -> str | None:
        """Where the business context came from: a file path, ``config``, ``set`` or None."""
        return self._sources.get(_check(role))

    def template(self, role: str) -> str:
        role = _check(role)
        return self._templates.get(role) or templates.load(f"workflow/{role}.md")

    def get(self, role: str) -> str:
        """The finished system prompt of ``role``."""
        context = self.business_context(role) or NO_CONTEXT
        return templates.render(self.template(role), {"businessContext": context}).strip() + "\n"


def _project_file(role: str, directory: Path, worktree: Path | None) -> Path | None:
    here = directory.resolve()
    top = (worktree or directory).resolve()
    for folder in (here, *here.parents):
        candidate = folder / PROJECT_DIR / f"{role}.md"
        if candidate.is_file():
            return candidate
        if folder == top:
            break
    return None

"""The context a tool runs in, what it returns and how it fails, and the permission callables
a session hands it (``ctx.check_permission``, ``ctx.decide_permission``)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.contract.events import Event
    from etcode.provider.types import ImagePart, Usage
    from etcode.security.sandbox import SandboxPolicy
    from etcode.security.shell_env import ShellEnvPolicy


#: The parameters ``Tool.run`` receives: an instance of the tool's own ``Params`` model
#: (``Tool.parse``'s result), which each tool's ``run`` names as its model's class. ``Any``
#: so that those overrides narrow it (a ``BaseModel`` here would make each one break the
#: base class's contract, and a generic ``Tool[P]`` cannot hold tools of different models).
ToolParams: TypeAlias = Any


class ToolError(Exception):
    """Raised by a tool to report a failure the model should see (no traceback)."""


class PermissionDenied(ToolError):
    """The call was refused by a permission rule or by the user. ``patterns`` are the
    refused patterns when known; ``asked`` is True when the user said no (False: a rule)."""

    def __init__(self, message: str, *, patterns: list[str] | None = None, asked: bool = False) -> None:
        super().__init__(message)
        self.patterns: list[str] = list(patterns or [])
        self.asked = asked


@dataclass
class ToolResult:
    """What a tool returns. ``output`` is what the model sees; ``data`` is structured
    detail for front ends; ``summary`` overrides the generated result summary; ``images``
    are images the model sees with ``output`` (ReadFile of a PNG)."""

    output: str
    is_error: bool = False
    data: JsonObject | None = None
    summary: str | None = None
    images: list[ImagePart] | None = None


class ToolAbilities(Protocol):
    """What the scheduler asks of a tool before it runs a call (``etcode.tools.base.Tool``
    gives every tool the defaults: not read-only per call beyond ``is_read_only``, no
    permission checks of its own)."""

    @property
    def is_read_only(self) -> bool:
        """Every call may run alongside other read-only calls."""
        ...

    @property
    def checks_permission(self) -> bool:
        """True when the tool's ``run`` asks ``ctx.check_permission`` itself (with its own
        permission names and patterns). For every other tool the scheduler checks the
        tool's name with pattern ``"*"`` before running it (``"time_*": "allow"``)."""
        ...

    def is_read_only_call(self, arguments: JsonObject) -> bool:
        """Whether this call (its parsed arguments) may run alongside other read-only calls
        (e.g. ``Task`` is read-only only for a read-only subagent)."""
        ...


PermissionCheck = Callable[[str, list[str], JsonObject], Awaitable[None]]


class TokenBudget(Protocol):
    """The run's budget of output tokens as a tool sees it (``engine.limits.LimitChecker``):
    what is left of it (None: no budget) and the tokens a tool's model calls spent."""

    def remaining(self) -> int | None: ...

    def add_tokens(self, output_tokens: int) -> None: ...


async def allow_all(permission: str, patterns: list[str], metadata: JsonObject) -> None:
    """The permission check of a context no session wired: everything is allowed."""
    return None


#: ``decide(permission, pattern, tool)`` → ``"allow"``, ``"ask"`` or ``"deny"``: what the
#: rules say about one pattern, without asking anyone (for filtering, e.g. Grep's results).
PermissionDecide = Callable[[str, str, "str | None"], str]


def decide_allow(permission: str, pattern: str, tool: str | None) -> str:
    """The rules of a context no session wired: every pattern is allowed."""
    return "allow"


async def no_instructions(path: Path) -> str | None:
    """No nested instruction files to attach (a context without a prompt layer)."""
    return None


@dataclass
class ToolContext:
    """Everything a running tool may use. ``emit`` sends a session event; ``abort`` is
    set when the user interrupts; ``check_permission(permission, patterns, metadata)``
    raises :class:`PermissionDenied` when a rule (or the user) refuses."""

    session_id: str
    call_id: str
    directory: Path
    worktree: Path
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    emit: Callable[[Event], None] = lambda event: None
    check_permission: PermissionCheck = allow_all
    #: What the rules say about a pattern, without asking (see :data:`PermissionDecide`).
    decide_permission: PermissionDecide = decide_allow
    #: For read tools: given a file just read, the nested AGENTS.md text to attach to the
    #: result (once per session), or None. Wired by the session from the prompt layer.
    instructions_for: Callable[[Path], Awaitable[str | None]] = no_instructions
    #: Per-session state shared by tools (e.g. ``state["todos"]``), kept across steps.
    state: dict[str, object] = field(default_factory=dict)
    #: What ``Bash`` commands inherit from the environment; None: the default policy
    #: (everything but secret-looking variables). See ``etcode/security/shell_env.py``.
    shell_env: ShellEnvPolicy | None = None
    #: How ``Bash`` commands are confined; None: not at all (``etcode/security/sandbox.py``).
    sandbox: SandboxPolicy | None = None
    #: ``await add_usage(usage, cost, model)`` counts model calls a tool made (a ``Task``
    #: subagent's) in the run's usage and the session's totals; None: nowhere to count them.
    add_usage: Callable[[Usage, float | None, str], Awaitable[None]] | None = None
    #: The run's token budget (a ``Task`` subagent gets what is left and spends from it);
    #: None: no run counts one.
    budget: TokenBudget | None = None

    def resolve(self, path: str | Path) -> Path:
        """A path as the tool should open it: relative paths are taken from the working dir."""
        from etcode.util.fs import expand_user

        candidate = expand_user(path)  # "~name" of an unknown user stays a plain name
        if not candidate.is_absolute():
            candidate = self.directory / candidate
        return candidate

"""What one run of the loop runs with besides its conversation: :class:`LoopSettings`.

Frozen: the composition root (``etcode.wiring.runs.loop_settings``) builds it whole, the
recorder and the window passed in; a variant (a workflow role's turn) is a
``dataclasses.replace`` of it. What changes while a run goes on lives on the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.contract.tools import (
    PermissionCheck,
    PermissionDecide,
    allow_all,
    decide_allow,
    no_instructions,
)
from etcode.engine.limits import LoopLimits
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.contract.events import Event
    from etcode.engine.images import ImageSupport
    from etcode.engine.interception import Interceptor
    from etcode.engine.seams import LoopWindow, Recorder
    from etcode.provider.base import Provider
    from etcode.provider.types import Message
    from etcode.security.sandbox import SandboxPolicy
    from etcode.security.shell_env import ShellEnvPolicy
    from etcode.tools.registry import ToolRegistry

#: (tool name, output) -> the output the model sees.
OutputFilter = Callable[[str, str], str]
#: (tool name, raw arguments, output) -> a note appended to the call's result, or None.
CallWatcher = Callable[[str, str, str], "str | None"]
#: Notes for the model, taken just before each request (background processes that exited).
RequestNotes = Callable[[], "list[str]"]
#: Re-plans the request for what was learned since (the server's window, from a late
#: discovery answer or an overflow error), given the history: brings the tools (the same
#: registry) up to date and returns the system prompt to use and the events to show. Raises
#: a ``ProviderError`` when nothing fits the window.
Replan = Callable[["list[Message]"], "tuple[list[str], list[Event]]"]
#: Called after each finished step with the full history.
StepHook = Callable[["list[Message]"], Awaitable[None]]


@dataclass(frozen=True)
class LoopSettings:
    """Everything one run of the loop needs besides the conversation itself."""

    provider: Provider
    model: str
    system: list[str]
    tools: ToolRegistry
    directory: Path
    worktree: Path
    session_id: str
    limits: LoopLimits = field(default_factory=LoopLimits)
    temperature: float | None = None
    max_tokens: int | None = None
    #: Extra request-body fields (``top_p``, ``seed``…), already checked for the provider.
    extra: JsonObject = field(default_factory=dict)
    check_permission: PermissionCheck = allow_all
    decide_permission: PermissionDecide = decide_allow
    instructions_for: Callable[[Path], Awaitable[str | None]] = no_instructions
    #: Per-session tool state (todos...), shared across runs of one session.
    state: dict[str, object] = field(default_factory=dict)
    #: What Bash commands inherit (None: the default).
    shell_env: ShellEnvPolicy | None = None
    #: How Bash commands are confined (None: not at all).
    sandbox: SandboxPolicy | None = None
    #: Called after each finished step with the full history (persistence hook).
    on_step: StepHook | None = None
    output_filter: OutputFilter | None = None
    on_call: CallWatcher | None = None
    #: Persists the session as it runs (``etcode.session.recorder.SessionRecorder``).
    recorder: Recorder | None = None
    #: Context budget, usage/cost accounting and compaction (``etcode.engine.window.ContextWindow``).
    window: LoopWindow | None = None
    #: Called around each tool call and each turn, in order (``etcode.engine.interception``).
    interceptors: tuple[Interceptor, ...] = ()
    #: Whether the model takes images (None: sent as they are, a refusal fails the run).
    images: ImageSupport | None = None
    #: What the model should be told with its next request (a user message before it).
    request_notes: RequestNotes | None = None
    #: Re-plans the request before each step and after an overflow taught the window.
    replan: Replan | None = None
    #: The environment block (working directory, date): joined to the first user message of
    #: each request, after the stable system text and tools (``etcode.engine.environment``).
    environment: str | None = None

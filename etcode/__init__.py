"""etcode: a terminal coding agent.

The public API is exported lazily so that ``import etcode`` (and ``etcode --version``)
stays light: nothing heavy is imported until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

_LAZY = {
    "Agent": "etcode.api",
    "AgentResult": "etcode.api",
    "LoopLimits": "etcode.api",
    "RetryConfig": "etcode.api",
    "Tool": "etcode.api",
    "ToolResult": "etcode.api",
    "tool": "etcode.api",
    "TodoItem": "etcode.tools.todo",
    "TodoStore": "etcode.tools.todo",
    "create_todo_tool": "etcode.tools.todo",
    "TODO_UPDATE": "etcode.tools.todo",
    "todo_update_event": "etcode.tools.todo",
    "TodoUpdate": "etcode.contract.events",
    # A client of your own (``Agent(llm=...)``), in the agent-loop design's shapes.
    "BaseLLMClient": "etcode.provider.chat_client",
    "LLMResponse": "etcode.provider.chat_client",
    "ToolCall": "etcode.provider.chat_client",
    "TokenUsage": "etcode.provider.chat_client",
    # The step-level events of ``run_stream``/``arun_stream`` (events of the one vocabulary,
    # ``etcode.contract.events``; ``etcode.Event`` is their alias, as in the agent-loop
    # design) and their renderer.
    "Event": "etcode.contract.events:LoopEvent",
    "LoopEvent": "etcode.contract.events",
    "EventType": "etcode.contract.events",
    "Renderer": "etcode.ui.loop_renderer",
    # Skills (``SKILL.md`` folders): what an agent started in a folder would find.
    "Skill": "etcode.extensions.skills",
    "discover_skills": "etcode.api",
    # Errors to catch (``str(err)`` is one line): raised by ``run``/``arun``/``run_sync`` when
    # the run cannot give a result, carried in ``AgentResult.exception`` when it can.
    "EtcodeError": "etcode.util.errors",
    "ConfigError": "etcode.util.errors",
    "LLMError": "etcode.provider.errors",
    "ProviderError": "etcode.provider.errors",
    "ToolExecutionError": "etcode.contract.errors",
    "LimitExceededError": "etcode.contract.errors",
    "OutputValidationError": "etcode.contract.errors",
    # Permission answers: ``Agent(asker=...)``.
    "Asker": "etcode.permission.service",
    "PermissionRequest": "etcode.permission.service",
    "Decision": "etcode.permission.service",
    "AllowAsker": "etcode.permission.service",
    "DenyAsker": "etcode.permission.service",
    # ``agent.conversation()``: a multi-turn exchange with a session of its own.
    "Conversation": "etcode.conversation",
    # The system text of an assistant with your instructions as its last section.
    "build_system_prompt": "etcode.prompt.system",
    # The type of ``thinking_level=`` (``"off"|"low"|"medium"|"high"``), as the design names it.
    "ThinkingLevel": "etcode.provider.reasoning",
}

__all__ = [
    "TODO_UPDATE",
    "Agent",
    "AgentResult",
    "BaseLLMClient",
    "Event",
    "EventType",
    "LLMResponse",
    "LoopEvent",
    "LoopLimits",
    "Renderer",
    "RetryConfig",
    "Skill",
    "TokenUsage",
    "ToolCall",
    "TodoItem",
    "TodoStore",
    "TodoUpdate",
    "Tool",
    "ToolResult",
    "__version__",
    "create_todo_tool",
    "discover_skills",
    "todo_update_event",
    "tool",
    "EtcodeError",
    "ConfigError",
    "LLMError",
    "ProviderError",
    "ToolExecutionError",
    "LimitExceededError",
    "OutputValidationError",
    "Asker",
    "PermissionRequest",
    "Decision",
    "AllowAsker",
    "DenyAsker",
    "Conversation",
    "build_system_prompt",
    "ThinkingLevel",
]

if TYPE_CHECKING:  # pragma: no cover
    from etcode.api import (
        Agent,
        AgentResult,
        LoopLimits,
        RetryConfig,
        Tool,
        ToolResult,
        discover_skills,
        tool,
    )
    from etcode.contract.errors import LimitExceededError, OutputValidationError, ToolExecutionError
    from etcode.contract.events import EventType, LoopEvent, TodoUpdate
    from etcode.contract.events import LoopEvent as Event
    from etcode.conversation import Conversation
    from etcode.extensions.skills import Skill
    from etcode.permission.service import AllowAsker, Asker, Decision, DenyAsker, PermissionRequest
    from etcode.prompt.system import build_system_prompt
    from etcode.provider.chat_client import BaseLLMClient, LLMResponse, TokenUsage, ToolCall
    from etcode.provider.errors import LLMError, ProviderError
    from etcode.provider.reasoning import ThinkingLevel
    from etcode.tools.todo import TODO_UPDATE, TodoItem, TodoStore, create_todo_tool, todo_update_event
    from etcode.ui.loop_renderer import Renderer
    from etcode.util.errors import ConfigError, EtcodeError


def __getattr__(name: str) -> object:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'etcode' has no attribute {name!r}")
    import importlib

    module_name, _, attribute = target.partition(":")
    value: object = getattr(importlib.import_module(module_name), attribute or name)
    globals()[name] = value
    return value

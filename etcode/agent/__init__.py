"""Agents: built-in (build, plan, general, explore) and custom (config, markdown)."""

from etcode.agent.registry import (
    DEFAULT_AGENT,
    AgentInfo,
    builtin_agents,
    get_agent,
    load_agents,
    read_only_bash,
)

__all__ = ["DEFAULT_AGENT", "AgentInfo", "builtin_agents", "get_agent", "load_agents", "read_only_bash"]

"""The composition root: turns an agent's settings into a ready :class:`Runtime`
(config, model, provider, agent definition, tools, prompt, permissions, MCP servers).

It sits above ``session/``, ``tools/``, ``provider/``, ``config/``, ``prompt/`` and
``mcp/``: it imports them, they import it for types only. The public ``Agent``
(``etcode.api``) calls it; subagents and the workflow get new agents through
:data:`~etcode.wiring.settings.ChildFactory`, never by importing ``etcode.api``.
"""

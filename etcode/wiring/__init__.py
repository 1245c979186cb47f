"""The composition root: turns an agent's settings into a ready :class:`Runtime`
(config, model, provider, agent definition, tools, prompt, permissions, MCP servers), and
a turn into a run (``runs``: the runtime with its Task tool, the loop's settings built
whole, the :class:`~etcode.engine.run.Run` for the agent).

It sits above ``engine/``, ``session/``, ``workflow/``, ``tools/``, ``provider/``,
``config/``, ``prompt/`` and ``mcp/``: it imports them, they never import it. Inside,
``settings`` (data and protocols) is imported by ``runtime``, ``runtime`` by ``subagent``,
``server_window``, ``agent_session`` and ``runs``; never the reverse. The public ``Agent``
(``etcode.api``) calls ``runs``; subagents get new agents through
:class:`~etcode.wiring.runtime.ChildFactory`, never by importing ``etcode.api``.
"""

"""``etcode acp``: etcode as an Agent Client Protocol agent (JSON-RPC over stdio), for
editors (Zed, JetBrains, Neovim plugins) and Toad. Built on the ``agent-client-protocol``
SDK, imported only by this command."""

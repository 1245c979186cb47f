"""The TUI's widgets: conversation, messages, tool calls, todo panel, status bar, input, modals."""

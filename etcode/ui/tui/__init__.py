"""The interactive Textual front end of etcode.

Importing this package is light; Textual is imported by :mod:`etcode.ui.tui.app` and
:func:`etcode.ui.tui.launch.run_tui` only. The TUI is one more consumer of the agent's
event stream: it drives :class:`etcode.api.Agent` exactly like ``etcode run`` does.
"""

from __future__ import annotations

from etcode.ui.tui.options import TuiOptions

__all__ = ["TuiOptions"]

"""Which Textual theme the chat starts with: light on a light terminal, dark otherwise.

``ETCODE_THEME`` decides when set (``light``, ``dark`` or any Textual theme name, such as
``nord``); otherwise ``COLORFGBG`` (set by rxvt, Konsole, iTerm2 and others as
``fg;bg``) says whether the background is light, with the rule Vim uses: colours 0-6 and 8
are dark, the others light. Without either, the theme is dark (Textual's default).
"""

from __future__ import annotations

from collections.abc import Mapping

DARK = "textual-dark"
LIGHT = "textual-light"
ALIASES = {"dark": DARK, "light": LIGHT}
_DARK_BACKGROUNDS = {0, 1, 2, 3, 4, 5, 6, 8}


def background_is_light(colorfgbg: str | None) -> bool | None:
    """True/False from a ``COLORFGBG`` value (``15;0``, ``0;default;15``); None when it
    does not say."""
    background = (colorfgbg or "").rsplit(";", 1)[-1].strip()
    if not background.isdigit():
        return None
    return int(background) not in _DARK_BACKGROUNDS


def pick_theme(environ: Mapping[str, str]) -> str:
    """The theme's name for this terminal (not checked against the known themes)."""
    explicit = environ.get("ETCODE_THEME", "").strip()
    if explicit:
        return ALIASES.get(explicit.lower(), explicit)
    return LIGHT if background_is_light(environ.get("COLORFGBG")) else DARK


def code_theme() -> str:
    """Rich's code theme for the running app's theme (``ansi_dark`` outside an app)."""
    from textual._context import active_app

    try:
        dark = active_app.get().current_theme.dark
    except LookupError:
        dark = True
    return "ansi_dark" if dark else "ansi_light"

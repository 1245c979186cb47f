"""Which Textual theme the chat starts with: light on a light terminal, dark otherwise.

``ETCODE_THEME`` decides when set (``light``, ``dark`` or any Textual theme name, such as
``nord``); otherwise ``COLORFGBG`` (set by rxvt, Konsole, iTerm2 and others as
``fg;bg``) says whether the background is light, with the rule Vim uses: colours 0-6 and 8
are dark, the others light. Without either, the theme is dark (Textual's default).

``NO_COLOR`` (https://no-color.org) wins over both: the terminal's own colours and
background, nothing painted; the cursors and the selected row are shown reversed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.theme import Theme

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


NO_COLOR_THEME = "etcode-no-color"


def no_color(environ: Mapping[str, str]) -> bool:
    """``NO_COLOR`` is set (any value, as Textual reads it)."""
    return "NO_COLOR" in environ


def no_color_theme(light: bool) -> Theme:
    """Textual's ANSI theme (the terminal's default colours, no background of its own) with
    reversed cursors: Textual's colourless filter removes every colour, and these must stay
    visible without one."""
    from dataclasses import replace

    from textual.theme import BUILTIN_THEMES

    base = BUILTIN_THEMES["ansi-light" if light else "ansi-dark"]
    variables = {
        **base.variables,
        "block-cursor-text-style": "reverse",
        "block-cursor-blurred-text-style": "underline",
        "input-cursor-text-style": "reverse",
        "input-selection-background": "ansi_default",
        "button-focus-text-style": "b reverse",
    }
    return replace(base, name=NO_COLOR_THEME, variables=variables)


def code_theme() -> str:
    """Rich's code theme for the running app's theme (``ansi_dark`` outside an app)."""
    from textual._context import active_app

    try:
        dark = active_app.get().current_theme.dark
    except LookupError:
        dark = True
    return "ansi_dark" if dark else "ansi_light"

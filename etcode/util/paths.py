"""Where etcode keeps its files (XDG base directories) and upward file search.

Every directory function takes an optional ``env`` mapping (default ``os.environ``) so
callers that carry their own environment (the config loader, tests) stay consistent.
Per the XDG spec, a relative ``$XDG_*`` value is ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

APP = "etcode"


def _home(env: Mapping[str, str]) -> Path:
    home = env.get("HOME")
    return Path(home) if home else Path.home()


def _xdg(var: str, fallback: tuple[str, ...], env: Mapping[str, str] | None) -> Path:
    env = os.environ if env is None else env
    value = env.get(var, "")
    base = Path(value).expanduser() if value else None
    if base is None or not base.is_absolute():
        base = _home(env).joinpath(*fallback)
    return base / APP


def config_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/etcode``, else ``~/.config/etcode``."""
    return _xdg("XDG_CONFIG_HOME", (".config",), env)


def data_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_DATA_HOME/etcode``, else ``~/.local/share/etcode``."""
    return _xdg("XDG_DATA_HOME", (".local", "share"), env)


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/etcode``, else ``~/.cache/etcode``."""
    return _xdg("XDG_CACHE_HOME", (".cache",), env)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/etcode``, else ``~/.local/state/etcode``."""
    return _xdg("XDG_STATE_HOME", (".local", "state"), env)


def tool_output_dir() -> Path:
    """Folder of tools' saved full outputs: ``$XDG_DATA_HOME/etcode/tool-output``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "etcode" / "tool-output"


def folders_between(start: Path, top: Path) -> list[Path]:
    """``start`` and its ancestors up to and including ``top``, outermost first.
    Just ``[start]`` when ``top`` is not ``start`` or one of its ancestors."""
    chain = (start, *start.parents)
    return list(reversed(chain[: chain.index(top) + 1])) if top in chain else [start]


def find_up_all(name: str, start: str | Path, stop: str | Path) -> list[Path]:
    """Every ``<folder>/<name>`` that exists from ``start`` up to and including ``stop``.

    Nearest first. Both paths are resolved. Nothing above ``stop`` is looked at; if
    ``stop`` is not ``start`` or one of its ancestors, only ``start`` is searched.
    """
    here = Path(start).expanduser().resolve()
    top = Path(stop).expanduser().resolve()
    chain = (here, *here.parents)
    folders = chain[: chain.index(top) + 1] if top in chain else (here,)
    return [folder / name for folder in folders if (folder / name).exists()]

"""What httpx would import that etcode's command line never uses; the CLI calls both
functions at start, before httpx is imported, and library users are left alone.

httpx's ``__init__`` imports its command-line client (``httpx._main``), and that
pulls in click, ``rich.progress``, ``rich.syntax`` and Pygments whenever they are
installed — as they are beside etcode: about 110 ms of every ``etcode run`` (measured
with ``-X importtime``), for a client etcode never uses.

:func:`defer_httpx_cli` puts a stand-in for that module in place before httpx is first
imported; its ``main`` loads the real module on the first call, so ``httpx.main`` still
works.

httpcore imports trio whenever it is installed, to serve programs running on trio: trio and
its dependencies (attrs, outcome, sortedcontainers) took ~50 ms of a one-answer ``etcode
run`` here. etcode's command line runs on asyncio only; :func:`skip_trio` marks trio as not
installed for this process, and httpcore takes its asyncio path.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

MODULE = "httpx._main"


def defer_httpx_cli() -> bool:
    """Install the stand-in; False (nothing done) when httpx is already imported, not
    installed, or has no ``_main`` module."""
    if "httpx" in sys.modules or MODULE in sys.modules:
        return False
    spec = importlib.util.find_spec("httpx")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return False
    path = Path(next(iter(spec.submodule_search_locations))) / "_main.py"
    if not path.is_file():
        return False
    stand_in = types.ModuleType(MODULE, "httpx's command-line client, loaded on first use (etcode)")

    def main(*args: Any, **kwargs: Any) -> Any:
        real_spec = importlib.util.spec_from_file_location(MODULE, path)
        if real_spec is None or real_spec.loader is None:  # pragma: no cover - the file is there
            raise ImportError(f"cannot load {path}")
        real = importlib.util.module_from_spec(real_spec)
        sys.modules[MODULE] = real
        real_spec.loader.exec_module(real)
        return real.main(*args, **kwargs)

    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules[MODULE] = stand_in
    return True


def skip_trio() -> bool:
    """Mark trio as not installed for this process (``import trio`` then raises ImportError);
    False (nothing done) when trio is already imported."""
    if "trio" in sys.modules:
        return False
    sys.modules["trio"] = None  # type: ignore[assignment]  # the import system's "not found"
    return True

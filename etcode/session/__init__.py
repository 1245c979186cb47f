"""Persistence: the session store, its recorder, lock and undo snapshots.

``from etcode.session import events`` — where the event vocabulary lived before it moved to
``etcode.contract.events`` — still gives that module, for programs written against it.
"""

from __future__ import annotations

from types import ModuleType


def __getattr__(name: str) -> ModuleType:
    if name == "events":
        import importlib

        return importlib.import_module("etcode.contract.events")
    raise AttributeError(f"module 'etcode.session' has no attribute {name!r}")

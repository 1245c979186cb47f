"""The ``system.prompt.transform`` hook point.

A transform receives the list of :class:`PromptPart` and returns the list to send (it may
be sync or async). Transforms come from Python entry points (group ``etcode.plugins``,
name ``system.prompt.transform``) and from config-listed ``"module:function"`` strings,
in that order. A hook that fails or returns something else than a list of parts is
skipped with a warning; the parts stay as they were before it ran.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable, Sequence
from functools import cache
from importlib.metadata import entry_points

from etcode.prompt.parts import PromptPart

HOOK_NAME = "system.prompt.transform"
ENTRY_POINT_GROUP = "etcode.plugins"

Transform = Callable[[list[PromptPart]], "list[PromptPart] | Awaitable[list[PromptPart]]"]


@cache
def _entry_point_transforms() -> tuple[tuple[str, Transform | None, str | None], ...]:
    found: list[tuple[str, Transform | None, str | None]] = []
    for point in entry_points(group=ENTRY_POINT_GROUP, name=HOOK_NAME):
        label = f"entry point {point.value}"
        try:
            found.append((label, point.load(), None))
        except Exception as err:  # a broken plugin must not stop etcode
            found.append((label, None, f"{type(err).__name__}: {err}"))
    return tuple(found)


def load_callable(spec: str) -> Transform:
    """Import ``"package.module:function"`` (dots after the colon walk attributes)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f'expected "module:function", got "{spec}"')
    target = importlib.import_module(module_name)
    for name in attr.split("."):
        target = getattr(target, name)
    if not callable(target):
        raise TypeError(f"{spec} is not callable")
    return target


def load_transforms(specs: Sequence[str] = ()) -> tuple[list[tuple[str, Transform]], list[str]]:
    """Entry-point transforms, then ``specs``; returns ``([(label, fn)], warnings)``."""
    transforms: list[tuple[str, Transform]] = []
    warnings: list[str] = []
    for label, fn, error in _entry_point_transforms():
        if fn is None:
            warnings.append(f"{HOOK_NAME} hook {label} could not be loaded: {error}")
        else:
            transforms.append((label, fn))
    for spec in specs:
        try:
            transforms.append((spec, load_callable(spec)))
        except Exception as err:
            warnings.append(f"{HOOK_NAME} hook {spec} could not be loaded: {type(err).__name__}: {err}")
    return transforms, warnings


async def apply_transforms(
    parts: list[PromptPart],
    specs: Sequence[str] = (),
    transforms: Sequence[tuple[str, Transform]] | None = None,
) -> tuple[list[PromptPart], list[str]]:
    """Run every transform over ``parts`` in turn; returns ``(parts, warnings)``.

    ``transforms`` (label, callable) replaces discovery when given (tests, the Python API).
    """
    warnings: list[str] = []
    if transforms is None:
        loaded, warnings = load_transforms(specs)
        transforms = loaded
    for label, fn in transforms:
        try:
            result = fn(list(parts))
            if inspect.isawaitable(result):
                result = await result
        except Exception as err:
            warnings.append(f"{HOOK_NAME} hook {label} failed: {type(err).__name__}: {err}")
            continue
        if not isinstance(result, list) or not all(isinstance(p, PromptPart) for p in result):
            warnings.append(f"{HOOK_NAME} hook {label} did not return a list of prompt parts; ignored")
            continue
        parts = result
    return parts, warnings


def clear_cache() -> None:
    """Forget the entry points found so far."""
    _entry_point_transforms.cache_clear()

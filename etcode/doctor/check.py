"""One finding of ``etcode doctor``: what was checked, how it went, and the fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from etcode.util.json_types import JsonObject

#: ``ok`` passed; ``warn`` works with less (the exit code stays 0); ``fail`` is broken
#: (exit code 1); ``skip`` could not be checked (``--offline``, or an earlier failure).
Status = Literal["ok", "warn", "fail", "skip"]


@dataclass(frozen=True)
class Check:
    """``name`` groups the lines (``config``, ``model``, ``key``, ...); ``detail`` says what
    was found; ``fix`` what to do about it (None when nothing is to be done)."""

    name: str
    status: Status
    detail: str
    fix: str | None = None

    def to_dict(self) -> JsonObject:
        return asdict(self)


def ok(name: str, detail: str) -> Check:
    return Check(name, "ok", detail)


def warn(name: str, detail: str, fix: str | None = None) -> Check:
    return Check(name, "warn", detail, fix)


def fail(name: str, detail: str, fix: str | None = None) -> Check:
    return Check(name, "fail", detail, fix)


def skip(name: str, detail: str) -> Check:
    return Check(name, "skip", detail)

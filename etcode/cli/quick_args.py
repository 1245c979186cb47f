"""A command's plain arguments read without Typer, for the common case (``etcode run``,
``etcode acp``).

Typer builds a pydantic validator for every parameter of the command line it parses: a
scripted start paid more for that than for anything else it imports. :func:`read_options`
reads the plain forms (``--model X``, ``--model=X``, ``-m X``, flags, words, ``--``) and
answers ``None`` for anything else — help, an unknown or misspelt option, a missing or odd
value — so Typer parses that argv and says what is wrong, exactly as before. Each command's
definition in ``app.py`` stays the one source of its help; tests hold each table to Typer's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

ValueKind = Literal["str", "positive_int", "flag", "list"]


@dataclass(frozen=True)
class CliOption:
    """One option of a command: its names, the field it sets, and what it takes (a string,
    an integer of at least 1, nothing: a flag, or a string each time it is given: a list)."""

    names: tuple[str, ...]
    field: str
    kind: ValueKind


def read_options(tokens: Iterable[str], table: tuple[CliOption, ...], target: object) -> list[str] | None:
    """Set ``target``'s fields from the options in ``tokens``; the other words, in order, or
    ``None`` when Typer should read them: nothing here reports an error."""
    by_name = {name: option for option in table for name in option.names}
    words: list[str] = []
    rest = iter(tokens)
    for token in rest:
        if token == "--":
            words.extend(rest)
            break
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        name, has_value, attached = token.partition("=")
        option = by_name.get(name)
        if option is None or (has_value and (option.kind == "flag" or not name.startswith("--"))):
            return None  # unknown, ``-m=x`` or ``--yes=1``: Typer's reading and its message
        if option.kind == "flag":
            setattr(target, option.field, True)
            continue
        raw = attached if has_value else next(rest, None)
        value = _value(option, raw)
        if value is None:
            return None
        if option.kind == "list":
            getattr(target, option.field).append(value)
        else:
            setattr(target, option.field, value)
    return words


def _value(option: CliOption, raw: str | None) -> str | int | None:
    """``raw`` as ``option`` takes it, or ``None`` when only Typer can say (missing, looks
    like an option, not a whole number of at least 1)."""
    if raw is None or raw.startswith("-"):
        return None
    if option.kind == "positive_int":
        if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
            return None
        return int(raw)
    return raw

"""``etcode run``'s arguments read without Typer, for the common case.

Typer builds a pydantic validator for every parameter of the command line it parses (two
dozen for ``etcode run``): a scripted ``etcode run "task"`` paid more for that than for
anything else it imports. :func:`parse_run_args` reads the plain forms (``--model X``,
``--model=X``, ``-m X``, flags, the task words, ``--``) and answers ``None`` for anything
else — help, an unknown or misspelt option, a missing or odd value — so Typer parses that
argv and says what is wrong, exactly as before. The command's definition in ``app.py`` stays
the one source of its help; ``tests/test_run_args.py`` holds the two to the same reading
(every option here is one of Typer's with the same name and kind, and both parse generated
command lines to the same :class:`RunOptions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from etcode.cli.run import RunOptions

ValueKind = Literal["str", "positive_int", "flag", "list"]


@dataclass(frozen=True)
class RunOption:
    """One option of ``etcode run``: its names, the :class:`RunOptions` field it sets, and
    what it takes (a string, an integer of at least 1, nothing: a flag, or a string each
    time it is given: a list)."""

    names: tuple[str, ...]
    field: str
    kind: ValueKind


RUN_OPTIONS: tuple[RunOption, ...] = (
    RunOption(("--model", "-m"), "model", "str"),
    RunOption(("--agent", "-a"), "agent", "str"),
    RunOption(("--format", "-f"), "output_format", "str"),
    RunOption(("--max-steps",), "max_steps", "positive_int"),
    RunOption(("--yes", "-y"), "yes", "flag"),
    RunOption(("--trust",), "trust", "flag"),
    RunOption(("--debug",), "debug", "flag"),
    RunOption(("--continue", "-c"), "continue_last", "flag"),
    RunOption(("--session", "-s"), "session", "str"),
    RunOption(("--fork",), "fork", "flag"),
    RunOption(("--sandbox",), "sandbox", "str"),
    RunOption(("--image",), "images", "list"),
)

_BY_NAME = {name: option for option in RUN_OPTIONS for name in option.names}


def parse_run_args(argv: list[str]) -> RunOptions | None:
    """The options of ``etcode run ARGS...`` (``argv`` starts with ``"run"``), or ``None``
    when Typer should read them: nothing here reports an error."""
    if not argv or argv[0] != "run":
        return None
    options = RunOptions(message="")
    words: list[str] = []
    rest = iter(argv[1:])
    for token in rest:
        if token == "--":
            words.extend(rest)
            break
        if not token.startswith("-") or token == "-":
            words.append(token)
            continue
        name, has_value, attached = token.partition("=")
        option = _BY_NAME.get(name)
        if option is None or (has_value and (option.kind == "flag" or not name.startswith("--"))):
            return None  # unknown, ``-m=x`` or ``--yes=1``: Typer's reading and its message
        if option.kind == "flag":
            setattr(options, option.field, True)
            continue
        raw = attached if has_value else next(rest, None)
        value = _value(option, raw)
        if value is None:
            return None
        if option.kind == "list":
            getattr(options, option.field).append(value)
        else:
            setattr(options, option.field, value)
    options.message = " ".join(words)
    options.words = words
    return options


def _value(option: RunOption, raw: str | None) -> str | int | None:
    """``raw`` as ``option`` takes it, or ``None`` when only Typer can say (missing, looks
    like an option, not a whole number of at least 1)."""
    if raw is None or raw.startswith("-"):
        return None
    if option.kind == "positive_int":
        if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
            return None
        return int(raw)
    return raw

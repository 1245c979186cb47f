"""``etcode run``'s arguments read without Typer, for the common case.

Typer builds a pydantic validator for every parameter of the command line it parses (two
dozen for ``etcode run``): a scripted ``etcode run "task"`` paid more for that than for
anything else it imports. :func:`parse_run_args` reads the plain forms with
:func:`etcode.cli.quick_args.read_options` and answers ``None`` for anything else, so Typer
parses that argv and says what is wrong, exactly as before. The command's definition in ``app.py`` stays
the one source of its help; ``tests/test_run_args.py`` holds the two to the same reading
(every option here is one of Typer's with the same name and kind, and both parse generated
command lines to the same :class:`RunOptions`).
"""

from __future__ import annotations

from etcode.cli.quick_args import CliOption, read_options
from etcode.cli.run import RunOptions

RunOption = CliOption  # one option of ``etcode run``

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


def parse_run_args(argv: list[str]) -> RunOptions | None:
    """The options of ``etcode run ARGS...`` (``argv`` starts with ``"run"``), or ``None``
    when Typer should read them: nothing here reports an error."""
    if not argv or argv[0] != "run":
        return None
    options = RunOptions(message="")
    words = read_options(argv[1:], RUN_OPTIONS, options)
    if words is None:
        return None
    options.message = " ".join(words)
    options.words = words
    return options

"""`etcode run`'s own argument reader agrees with Typer's, and a plain run never loads Typer.

The reader (etcode/cli/run_args.py) may decline any command line — Typer then reads it — but
whatever it reads must come out exactly as Typer would read it.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import etcode.cli.run as run_module
from etcode.cli.app import build_app
from etcode.cli.run import RunOptions
from etcode.cli.run_args import RUN_OPTIONS, parse_run_args
from tests.cli_helpers import etcode_imports, write_config
from tests.fake_llm import FakeLLM, Reply


@functools.cache
def typer_command() -> Any:
    """etcode's Typer app as the click command ``app()`` builds on every call (built once:
    building it is most of the time of a reading)."""
    import typer.main

    return typer.main.get_command(build_app())


def typer_run_command() -> Any:
    return typer_command().commands["run"]


def typer_reading(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> RunOptions | str:
    """What Typer makes of ``argv``: the RunOptions it hands to run_command, or the name of
    the error it raised."""
    seen: list[RunOptions] = []

    def capture(options: RunOptions) -> int:
        seen.append(options)
        return 0

    with monkeypatch.context() as patch:
        patch.setattr(run_module, "run_command", capture)
        try:
            typer_command().main(args=argv, prog_name="etcode", standalone_mode=False)
        except SystemExit as exit_:
            return f"exit {exit_.code}"
        except Exception as err:  # click's usage errors, vendored by typer
            return type(err).__name__
    return seen[0] if seen else "no command ran"


def test_every_option_is_typers_with_the_same_names_and_kind() -> None:
    command = typer_run_command()
    typer_options = {
        param.name: (tuple(sorted(param.opts + param.secondary_opts)), bool(param.is_flag))
        for param in command.params
        if param.param_type_name == "option"
    }
    ours = {option.field: (tuple(sorted(option.names)), option.kind == "flag") for option in RUN_OPTIONS}
    assert ours == typer_options


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "say", "hello"],
        ["run", "say hello", "--model", "fake/m", "-a", "plan", "--format=json", "-y"],
        ["run", "--max-steps", "3", "--trust", "--debug", "-c", "--fork", "fix", "it"],
        ["run", "-s", "abc123", "--sandbox", "read-only", "--", "--not-a-flag", "-y"],
        ["run", "-", "x", "--model=a=b"],
        ["run", "--image", "a.png", "look", "--image=b b.jpg", "-y"],
        ["run"],
    ],
)
def test_plain_command_lines_are_read_as_typer_reads_them(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ours = parse_run_args(argv)
    assert ours is not None, "a plain command line must not need Typer"
    assert ours == typer_reading(argv, monkeypatch)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--help"],
        ["run", "-h"],
        ["run", "--modle", "x", "task"],
        ["run", "--model"],
        ["run", "--model", "--yes", "task"],
        ["run", "--max-steps", "0", "task"],
        ["run", "--max-steps", "two", "task"],
        ["run", "--yes=1", "task"],
        ["run", "-m=x", "task"],
        ["run", "-yc", "task"],
        ["run", "-mfake/m", "task"],
        ["--debug", "run", "task"],
        ["sessions", "list"],
    ],
)
def test_anything_unusual_is_left_to_typer(argv: list[str]) -> None:
    assert parse_run_args(argv) is None


NAMES = [name for option in RUN_OPTIONS for name in option.names] + ["--help", "--unknown", "-yc", "--"]
VALUES = ["task", "two words", "x/y", "json", "text", "plan", "off", "1", "7", "0", "-3", "07", "٣", "²", "", "é", "-", "=", "-y"]  # fmt: skip
#: One command-line item: an option name and (often) a value after it, a ``--name=value``
#: form, or a word of the task.
ITEMS = st.one_of(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)),
    st.tuples(st.sampled_from(NAMES)),
    st.tuples(st.builds(lambda n, v: f"{n}={v}", st.sampled_from(NAMES), st.sampled_from(VALUES))),
    st.tuples(st.sampled_from(VALUES)),
)


def test_every_option_with_every_value_is_read_as_typer_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each option alone, with each value, both ways (``--name value`` and ``--name=value``)."""
    read = 0
    for name in NAMES:
        for value in VALUES:
            for argv in (["run", "task", name, value], ["run", f"{name}={value}", "task"]):
                ours = parse_run_args(argv)
                if ours is not None:
                    read += 1
                    assert typer_reading(argv, monkeypatch) == ours, argv
    assert read > len(NAMES) * len(VALUES) // 2  # most of them are plain enough to read


@settings(max_examples=400, deadline=None)
@given(st.lists(ITEMS, max_size=6))
def test_whatever_it_reads_typer_reads_the_same(items: list[tuple[str, ...]]) -> None:
    argv = ["run", *(token for item in items for token in item)]
    ours = parse_run_args(argv)
    if ours is None:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert typer_reading(argv, monkeypatch) == ours, argv


def test_a_plain_run_never_imports_typer(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="done"))
    proc, imported = etcode_imports("run", "--format", "text", "say done", cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "done\n"
    assert "etcode.cli.run" in imported  # the measurement itself works
    assert sorted(name for name in imported if name.split(".")[0] in ("typer", "click")) == []

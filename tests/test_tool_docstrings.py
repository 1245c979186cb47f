"""A ``@tool`` function's docstring becomes the tool's description and its parameters'
descriptions, whichever of the usual styles it is written in."""

from __future__ import annotations

from typing import Any

import pytest

from etcode.tools.base import tool


def google(path: str, limit: int = 10) -> str:
    """Read the start of a file.

    Only text files are read.

    Args:
        path: where the file is,
            relative to the project
        limit (int): how many lines

    Returns:
        the lines read
    """
    return path


def numpy(path: str, limit: int = 10) -> str:
    """Read the start of a file.

    Only text files are read.

    Parameters
    ----------
    path : str
        where the file is,
        relative to the project
    limit : int
        how many lines
    """
    return path


def rest(path: str, limit: int = 10) -> str:
    """Read the start of a file.

    Only text files are read.

    :param path: where the file is,
        relative to the project
    :param limit: how many lines
    :returns: the lines read
    """
    return path


def schema_of(func: Any) -> dict[str, Any]:
    made = tool(func)
    return {"description": made.description, "parameters": made.Params.model_json_schema()}


@pytest.mark.parametrize("func", [google, numpy, rest], ids=["google", "numpy", "rest"])
def test_each_style_gives_the_same_descriptions(func: Any) -> None:
    schema = schema_of(func)
    assert schema["description"] == "Read the start of a file.\n\nOnly text files are read."
    properties = schema["parameters"]["properties"]
    assert properties["path"]["description"] == "where the file is, relative to the project"
    assert properties["limit"]["description"] == "how many lines"
    assert schema["parameters"]["required"] == ["path"]


def test_a_one_line_docstring_and_none() -> None:
    def ping(host: str) -> str:
        """Ping a host."""
        return host

    def bare(host: str) -> str:
        return host

    assert schema_of(ping)["description"] == "Ping a host."
    assert "description" not in schema_of(ping)["parameters"]["properties"]["host"]
    assert schema_of(bare)["description"] == "bare"

"""Property tests for the JSONC config parser and the config file loader.

- ``parse_jsonc(json.dumps(v)) == v`` for generated JSON values;
- comments, whitespace and trailing commas in valid positions do not change the value;
- random text never raises anything but ``ConfigError("<file>:<line>:<col>: ...")``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etcode.config.jsonc import parse_jsonc, strip_jsonc
from etcode.config.loader import load_file
from etcode.util.errors import ConfigError

SOURCE = "/p/etcode.json"
POSITION = re.compile(re.escape(SOURCE) + r":\d+:\d+: ")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=25,
)


def same(a: Any, b: Any) -> bool:
    """Equality that also holds for -0.0 vs 0.0 and keeps int/float apart."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@settings(max_examples=150, deadline=None)
@given(value=json_values, ensure_ascii=st.booleans(), indent=st.sampled_from([None, 0, 2, "\t"]))
def test_plain_json_round_trips(value: Any, ensure_ascii: bool, indent: Any) -> None:
    text = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)
    assert same(parse_jsonc(text, SOURCE), value)


# ---- JSONC with decorations in valid places ------------------------------------------------

_comment_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12
)


@st.composite
def gap(draw: st.DrawFn) -> str:
    """Whitespace and comments that may sit between any two tokens."""
    out = []
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            out.append(draw(st.text(alphabet=" \t\r\n", min_size=1, max_size=3)))
        elif kind == 1:
            out.append("//" + draw(_comment_text) + draw(st.sampled_from(["\n", "\r\n", "\r"])))
        elif kind == 2:
            body = draw(st.text(max_size=12).filter(lambda t: "*/" not in t and not t.endswith("*")))
            out.append("/*" + body + "*/")
        else:
            out.append("/**/")
    return "".join(out)


def decorate(draw: st.DrawFn, value: Any) -> str:
    g = lambda: draw(gap())  # noqa: E731
    if isinstance(value, dict):
        items = [f"{g()}{json.dumps(k)}{g()}:{g()}{decorate(draw, v)}{g()}" for k, v in value.items()]
        trailing = "," + g() if items and draw(st.booleans()) else ""
        return "{" + ",".join(items) + trailing + g() + "}"
    if isinstance(value, list):
        items = [f"{g()}{decorate(draw, v)}{g()}" for v in value]
        trailing = "," + g() if items and draw(st.booleans()) else ""
        return "[" + ",".join(items) + trailing + g() + "]"
    return json.dumps(value, ensure_ascii=draw(st.booleans()))


@st.composite
def decorated(draw: st.DrawFn) -> tuple[Any, str]:
    value = draw(json_values)
    bom = "\ufeff" if draw(st.booleans()) else ""
    text = bom + draw(gap()) + decorate(draw, value) + draw(gap())
    if draw(st.booleans()):  # a line comment may also end the file without a newline
        text += "// the end" + draw(_comment_text)
    return value, text


@settings(max_examples=150, deadline=None)
@given(case=decorated())
def test_comments_whitespace_and_trailing_commas_do_not_change_the_value(case: tuple[Any, str]) -> None:
    value, text = case
    assert same(parse_jsonc(text, SOURCE), value)


@settings(max_examples=100, deadline=None)
@given(case=decorated())
def test_strip_keeps_length_and_line_structure(case: tuple[Any, str]) -> None:
    _, text = case
    cleaned = strip_jsonc(text)
    assert len(cleaned) == len(text)
    assert [i for i, c in enumerate(text) if c in "\r\n"] == [i for i, c in enumerate(cleaned) if c in "\r\n"]


def test_comment_markers_inside_strings_are_kept() -> None:
    text = '{"url": "http://x//y", "glob": "/*.py */", "q": "a\\"//b", "t": ",]"}'
    assert parse_jsonc(text, SOURCE) == {"url": "http://x//y", "glob": "/*.py */", "q": 'a"//b', "t": ",]"}


# ---- bad input -----------------------------------------------------------------------------

JSONISH = st.text(
    alphabet=st.sampled_from(list('{}[],:"\\/*\n\r \t0123456789.eE+-truefalsn\ufeff\x00é')), max_size=40
)


def assert_config_error(text: str) -> None:
    try:
        parse_jsonc(text, SOURCE)
    except ConfigError as err:
        assert POSITION.match(str(err)), str(err)
        assert "\n" not in str(err)


@settings(max_examples=200, deadline=None)
@given(text=st.one_of(st.text(max_size=60), JSONISH))
def test_random_text_raises_only_a_positioned_config_error(text: str) -> None:
    assert_config_error(text)


@settings(max_examples=80, deadline=None)
@given(
    case=decorated(),
    cut=st.integers(0, 10_000),
    junk=st.sampled_from(["", ",", "}", "]", "/*", "/", '"', "x", ":"]),
)
def test_damaged_documents_raise_only_a_positioned_config_error(
    case: tuple[Any, str], cut: int, junk: str
) -> None:
    _, text = case
    cut %= len(text) + 1
    assert_config_error(text[:cut] + junk + text[cut:])


@pytest.mark.parametrize(
    "text",
    [
        "[" * 100_000,
        '{"a":' * 50_000,
        "1" * 5000,  # beyond Python's int-digits limit
        '{"n": ' + "9" * 5000 + "}",
    ],
    ids=["deep-array", "deep-object", "huge-int", "huge-int-in-object"],
)
def test_pathological_documents_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_jsonc(text, SOURCE)
    assert POSITION.match(str(info.value)), str(info.value)


def test_error_position_points_at_the_problem() -> None:
    text = '{\n  // comment\n  "a": 1,\n  "b": ,\n}'
    with pytest.raises(ConfigError, match=r"^/p/etcode\.json:4:8: invalid JSON"):
        parse_jsonc(text, SOURCE)
    with pytest.raises(ConfigError, match=r"^/p/etcode\.json:2:3: invalid JSON: unterminated /\* comment"):
        parse_jsonc('{\n  /* open\n"a": 1}', SOURCE)


@settings(max_examples=60, deadline=None)
@given(raw=st.binary(max_size=60))
def test_load_file_with_random_bytes_raises_only_config_errors(raw: bytes, tmp_path_factory) -> None:
    path = tmp_path_factory.mktemp("cfg") / "etcode.json"
    path.write_bytes(raw)
    try:
        load_file(path, env={})
    except ConfigError as err:
        assert str(err).startswith(str(path)), str(err)


def test_load_file_rejects_non_object_top_level(tmp_path: Path) -> None:
    path = tmp_path / "etcode.json"
    path.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match="expected a JSON object"):
        load_file(path, env={})


@pytest.mark.parametrize("depth", [600, 5000])
def test_deeply_nested_config_file_is_a_config_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "etcode.json"
    path.write_text('{"mcp": {"x": {"a": ' + "[" * depth + "]" * depth + "}}}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"etcode\.json:1:\d+: invalid JSON: nested more than"):
        load_file(path, env={})

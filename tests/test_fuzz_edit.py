"""Property tests for the edit matchers and the Edit tool: an edit never touches text
outside the matched span, CRLF/BOM (and undecodable bytes) outside it survive byte for
byte, and an ambiguous ``old_string`` without ``replace_all`` is refused.

Files are built as ``before + block + after``: ``before``/``after`` are whole lines of
digits, the block is lines of letters (so no matcher can place ``old_string`` in them),
and ``old_string`` is the block as is or with its indentation / trailing whitespace
changed, which the tolerant matchers must still place on the block.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from etcode.tools.base import ToolError
from etcode.tools.edit import EditTool
from etcode.tools.edit_match import AmbiguousMatchError, EditMatchError, replace
from tests.tool_support import make_ctx

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

digit_line = st.text(alphabet="0123456789", min_size=1, max_size=6)
outside = st.lists(digit_line, max_size=4)
indent = st.text(alphabet=" \t", max_size=4)
word = st.text(alphabet="abcxyz(){}=:_é世", min_size=1, max_size=6)
block_line = st.builds(lambda i, words: i + " ".join(words), indent, st.lists(word, min_size=1, max_size=3))
block_lines = st.lists(block_line, min_size=1, max_size=5)
new_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r"), max_size=30
)


def join_before(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def join_after(lines: list[str]) -> str:
    return "".join("\n" + line for line in lines)


@st.composite
def perturbed(draw: st.DrawFn, lines: list[str]) -> str:
    """The block as the model might quote it: indentation and trailing blanks changed."""
    kind = draw(st.sampled_from(["exact", "reindent", "trailing", "both"]))
    out = []
    for line in lines:
        body = line.lstrip(" \t")
        if kind in ("reindent", "both"):
            line = draw(indent) + body
        if kind in ("trailing", "both"):
            line += draw(st.text(alphabet=" \t", max_size=2))
        out.append(line)
    return "\n".join(out)


# ---- the matcher chain --------------------------------------------------------------------


@SETTINGS
@given(data=st.data(), before=outside, after=outside, lines=block_lines, new=new_text)
def test_a_successful_replace_changes_only_the_block(
    data: st.DataObject, before: list[str], after: list[str], lines: list[str], new: str
) -> None:
    head, tail, block = join_before(before), join_after(after), "\n".join(lines)
    content = head + block + tail
    old = data.draw(perturbed(lines), label="old")
    try:
        result = replace(content, old, new)
    except EditMatchError:
        return  # refusing is always allowed; editing elsewhere never is
    out = result.content
    assert out.startswith(head) and out.endswith(tail), (result.matcher, out)
    middle = out[len(head) : len(out) - len(tail)]
    if result.matcher == "exact":
        assert middle == block.replace(old, new, 1)
    assert result.count == 1


@SETTINGS
@given(
    before=outside,
    middle=st.lists(digit_line, min_size=1, max_size=3),
    after=outside,
    lines=block_lines,
    new=new_text,
)
def test_two_identical_blocks_are_ambiguous_unless_replace_all(
    before: list[str], middle: list[str], after: list[str], lines: list[str], new: str
) -> None:
    block = "\n".join(lines)
    sep = "\n" + "\n".join(middle) + "\n"
    content = join_before(before) + block + sep + block + join_after(after)
    with pytest.raises(AmbiguousMatchError) as info:
        replace(content, block, new)
    assert len(info.value.lines) >= 2
    result = replace(content, block, new, replace_all=True)
    assert result.matcher == "exact"
    assert result.content == content.replace(block, new)
    assert result.count == content.count(block)


@settings(max_examples=150, deadline=None)
@given(
    content=st.text(max_size=80),
    old=st.text(min_size=1, max_size=20),
    new=st.text(max_size=20),
    replace_all=st.booleans(),
)
def test_replace_never_raises_anything_else_and_exact_matches_behave_like_str_replace(
    content: str, old: str, new: str, replace_all: bool
) -> None:
    try:
        result = replace(content, old, new, replace_all)
    except EditMatchError:
        return
    if result.matcher == "exact":
        expected = content.replace(old, new) if replace_all else content.replace(old, new, 1)
        assert result.content == expected
        if not replace_all:
            assert content.count(old) == 1


# ---- the Edit tool on real files ---------------------------------------------------------------


def run_edit(root: Path, **args: Any) -> Any:
    ctx = make_ctx(root)
    tool = EditTool()
    return asyncio.run(tool.run(tool.parse(args), ctx))


def crlf(text: bytes, on: bool) -> bytes:
    return text.replace(b"\n", b"\r\n") if on else text


@SETTINGS
@given(
    data=st.data(),
    before=outside,
    after=outside,
    lines=block_lines,
    new=new_text,
    use_crlf=st.booleans(),
    bom=st.booleans(),
    junk=st.sampled_from([b"", b"\xe9", b"\xff\xfe", b"\xc3"]),
)
def test_edit_tool_keeps_every_byte_outside_the_span(
    data: st.DataObject,
    before: list[str],
    after: list[str],
    lines: list[str],
    new: str,
    use_crlf: bool,
    bom: bool,
    junk: bytes,
) -> None:
    head = join_before(before).encode() + (junk + b"0\n" if junk else b"")  # an undecodable byte line
    tail = join_after(after).encode()
    block = "\n".join(lines)
    prefix = b"\xef\xbb\xbf" if bom else b""
    raw = prefix + crlf(head + block.encode() + tail, use_crlf)
    old = data.draw(perturbed(lines), label="old")
    assume(old != new)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        target = root / "f.txt"
        target.write_bytes(raw)
        try:
            result = run_edit(root, file_path="f.txt", old_string=old, new_string=new)
        except ToolError:
            assert target.read_bytes() == raw  # a refused edit leaves the file alone
            return
        out = target.read_bytes()
    keep_head = prefix + crlf(head, use_crlf)
    keep_tail = crlf(tail, use_crlf)
    assert out.startswith(keep_head) and out.endswith(keep_tail), (result.output, raw, out)
    if result.data["matcher"] == "exact":
        assert out == keep_head + crlf(block.replace(old, new, 1).encode(), use_crlf) + keep_tail
    result.output.encode("utf-8")  # what the model sees is valid text
    result.data["diff"].encode("utf-8")


@settings(max_examples=40, deadline=None)
@given(
    lines=block_lines,
    middle=st.lists(digit_line, min_size=1, max_size=2),
    new=new_text,
    use_crlf=st.booleans(),
)
def test_edit_tool_refuses_ambiguous_and_leaves_the_file(
    lines: list[str], middle: list[str], new: str, use_crlf: bool
) -> None:
    block = "\n".join(lines)
    assume(block != new)
    raw = crlf((block + "\n" + "\n".join(middle) + "\n" + block + "\n").encode(), use_crlf)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "f.txt").write_bytes(raw)
        with pytest.raises(ToolError, match="replace_all"):
            run_edit(root, file_path="f.txt", old_string=block, new_string=new)
        assert (root / "f.txt").read_bytes() == raw


def test_undecodable_bytes_outside_the_edit_survive(tmp_path: Path) -> None:
    target = tmp_path / "latin1.txt"
    target.write_bytes(b"caf\xe9 = 1\nvalue = 2\n")
    result = run_edit(tmp_path, file_path="latin1.txt", old_string="value = 2", new_string="value = 3")
    assert target.read_bytes() == b"caf\xe9 = 1\nvalue = 3\n"
    assert "value = 3" in result.data["diff"]
    result.data["diff"].encode("utf-8")


def test_lone_surrogate_in_new_string_is_a_tool_error(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("x = 1\n", encoding="utf-8")
    with pytest.raises(ToolError, match="Unicode"):
        run_edit(tmp_path, file_path="a.txt", old_string="x = 1", new_string="x = '\ud800'")
    assert target.read_text(encoding="utf-8") == "x = 1\n"


def test_loose_matcher_does_not_invent_a_place_between_two_exact_copies() -> None:
    # found by the ambiguity property: block-anchor matched a span straddling both copies
    block = ": : :\n:\n: : :\n: : :"
    with pytest.raises(AmbiguousMatchError):
        replace(block + "\n0\n" + block + "\n", block, "")

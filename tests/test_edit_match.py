"""The Edit replacer chain: a table of content / old / new → expected result."""

from __future__ import annotations

import pytest

from etcode.tools.edit_match import (
    AmbiguousMatchError,
    NoMatchError,
    block_anchor,
    closest_region,
    looks_line_numbered,
    replace,
    unescape,
)

# (id, content, old, new, replace_all, expected content, expected matcher)
CASES = [
    ("exact", "a = 1\nb = 2\n", "b = 2", "b = 3", False, "a = 1\nb = 3\n", "exact"),
    ("exact-multiline", "x\ny\nz\n", "x\ny\n", "X\nY\n", False, "X\nY\nz\n", "exact"),
    ("exact-replace-all", "foo(foo)\nfoo\n", "foo", "bar", True, "bar(bar)\nbar\n", "exact"),
    (
        "line-trimmed-trailing-space",
        "def f():   \n    return 1\n",
        "def f():\n    return 1",
        "def f():\n    return 2",
        False,
        "def f():\n    return 2\n",
        "line-trimmed",
    ),
    (
        "line-trimmed-reindents-new",
        "class A:\n    def f(self):\n        return 1\n",
        "def f(self):\n    return 1",
        "def f(self):\n    return 2",
        False,
        "class A:\n    def f(self):\n        return 2\n",
        "line-trimmed",
    ),
    (
        "indentation-flexible-tabs-vs-spaces-block",
        "if x:\n\tif y:\n\t\tgo()\n",
        "  if y:\n      go()",
        "  if y:\n      stop()",
        False,
        "if x:\n\tif y:\n\t\tstop()\n",
        "line-trimmed",
    ),
    (
        "indentation-flexible-relative",
        "def g():\n        a()\n            b()\n",
        "    a()\n        b()\n",
        "    a()\n        c()\n",
        False,
        "def g():\n        a()\n            c()\n",
        "line-trimmed",
    ),
    (
        "whitespace-normalized-inner-spaces",
        "total = price  *   qty\n",
        "total = price * qty",
        "total = price * qty * rate",
        False,
        "total = price * qty * rate\n",
        "whitespace-normalized",
    ),
    (
        "whitespace-normalized-across-lines",
        "call(a,\n     b)\n",
        "call(a, b)",
        "call(a, b, c)",
        False,
        "call(a, b, c)\n",
        "whitespace-normalized",
    ),
    (
        "escape-normalized",
        'print("hi")\nx = 1\n',
        'print(\\"hi\\")\\nx = 1',
        'print(\\"bye\\")\\nx = 2',
        False,
        'print("bye")\nx = 2\n',
        "escape-normalized",
    ),
    (
        "block-anchor-middle-drift",
        "def f():\n    a = compute(1)\n    b = a + 1\n    return b\n",
        "def f():\n    a = compute(2)\n    b = a + 1\n    return b",
        "def f():\n    return 0",
        False,
        "def f():\n    return 0\n",
        "block-anchor",
    ),
    (
        "exact-ambiguous-resolved-by-whole-line",
        "foo()\nbarfoo()\n",
        "foo()\n",
        "baz()\n",
        False,
        "baz()\nbarfoo()\n",
        "line-trimmed",
    ),
    (
        "first-line-copied-without-indent",
        "class A:\n    def f(self):\n        return 1\n",
        "def f(self):\n        return 1",
        "def f(self):\n        return 2",
        False,
        "class A:\n    def f(self):\n        return 2\n",
        "exact",
    ),
    (
        "unicode",
        "msg = 'héllo wörld'\n",
        "héllo",
        "hello",
        False,
        "msg = 'hello wörld'\n",
        "exact",
    ),
    (
        "replace-all-tolerant",
        "  x = 1\n\n    x = 1\n",
        "x  =  1",
        "x = 2",
        True,
        "  x = 2\n\n    x = 2\n",
        "whitespace-normalized",
    ),
]


@pytest.mark.parametrize(
    ("content", "old", "new", "replace_all", "expected", "matcher"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_replace_table(
    content: str, old: str, new: str, replace_all: bool, expected: str, matcher: str
) -> None:
    outcome = replace(content, old, new, replace_all)
    assert outcome.content == expected
    assert outcome.matcher == matcher


AMBIGUOUS = [
    ("exact-twice", "x = 1\ny = 2\nx = 1\n", "x = 1"),
    ("trimmed-twice", "  a()\n    a()\n", "a()\n"),
    (
        "anchor-two-equal-blocks",
        "def f():\n    p()\n    end\ndef f():\n    p()\n    end\n",
        "def f():\n    p( )\n    end",
    ),
]


@pytest.mark.parametrize(("content", "old"), [c[1:] for c in AMBIGUOUS], ids=[c[0] for c in AMBIGUOUS])
def test_ambiguous(content: str, old: str) -> None:
    with pytest.raises(AmbiguousMatchError) as info:
        replace(content, old, "NEW")
    assert "replace_all" in str(info.value)
    assert len(info.value.lines) >= 2


NOT_FOUND = [
    ("absent", "a\nb\n", "c"),
    ("different-words", "alpha beta\n", "alpha gamma"),
    ("anchor-middle-too-different", "start\nzzzzzzzzzzzz\nend\n", "start\nthis is a totally new line\nend"),
    ("two-line-anchor-not-used", "first\nend\n", "first\nend\nmore"),
]


@pytest.mark.parametrize(("content", "old"), [c[1:] for c in NOT_FOUND], ids=[c[0] for c in NOT_FOUND])
def test_not_found(content: str, old: str) -> None:
    with pytest.raises(NoMatchError):
        replace(content, old, "NEW")


def test_exact_preferred_over_tolerant() -> None:
    content = "x  = 1\nx = 1\n"
    assert replace(content, "x = 1", "y").content == "x  = 1\ny\n"


def test_block_anchor_picks_best_of_several() -> None:
    content = (
        "def f():\n    alpha_value = 1\n    return\ndef f():\n    totally_other_thing(2, 3)\n    return\n"
    )
    old = "def f():\n    alpha_valu = 1\n    return"
    outcome = replace(content, old, "def f():\n    pass")
    assert outcome.matcher == "block-anchor"
    assert outcome.content.startswith("def f():\n    pass\ndef f():\n    totally_other_thing")


def test_closest_region() -> None:
    content = "\n".join(f"line {i}" for i in range(1, 50)) + "\ndef target(a, b):\n    return a + b\n"
    region = closest_region(content, "def target(a, c):\n    return a + c")
    assert region is not None
    assert region.first_line == 50 and region.last_line == 51
    assert "def target(a, b):" in region.text
    assert region.similarity > 0.7


def test_unescape_and_numbered() -> None:
    assert unescape('a\\nb\\t\\"c\\"') == 'a\nb\t"c"'
    assert looks_line_numbered("     1\timport os\n     2\timport sys")
    assert not looks_line_numbered("import os")


def test_block_anchor_prefers_the_most_similar_of_several_good_blocks() -> None:
    content = "start\n  alpha_value = 1\nend\nstart\n  alpha_valu = 1\nend\n"
    spans = block_anchor(content, "start\nalpha_value = 2\nend")
    assert [content[start:end] for start, end in spans] == ["start\n  alpha_value = 1\nend"]
    # middles that are both blank are the same
    content = "start\n   \nend\n"
    assert [content[start:end] for start, end in block_anchor(content, "start\n\nend")] == ["start\n   \nend"]

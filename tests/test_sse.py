"""The incremental SSE parser: WHATWG rules, any chunk boundary, captured transcripts."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etcode.provider.sse import SSEDecoder, SSEEvent, aiter_sse

FIXTURES = Path(__file__).parent / "fixtures" / "sse"
TRANSCRIPTS = sorted(FIXTURES.glob("*.sse"))


def parse(*chunks: bytes | str) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events = [e for chunk in chunks for e in decoder.feed(chunk)]
    return events + decoder.flush()


def test_data_and_event_fields() -> None:
    events = parse(b'event: message_start\ndata: {"a": 1}\n\ndata: plain\n\n')
    assert events == [SSEEvent('{"a": 1}', "message_start"), SSEEvent("plain", "message")]


def test_multi_line_data_joined_with_newlines() -> None:
    assert parse(b"data: one\ndata: two\ndata:\ndata: three\n\n")[0].data == "one\ntwo\n\nthree"


def test_comments_and_blank_lines_are_ignored() -> None:
    events = parse(b": OPENROUTER PROCESSING\n\n:keep-alive\n\n\n\ndata: x\n: inside\n\n")
    assert [e.data for e in events] == ["x"]


def test_only_one_leading_space_is_stripped() -> None:
    assert parse(b"data:x\n\ndata:  y\n\n") == [SSEEvent("x"), SSEEvent(" y")]


def test_line_endings_crlf_and_lone_cr() -> None:
    expected = [SSEEvent("a", "e1"), SSEEvent("b", "e2")]
    assert parse(b"event: e1\r\ndata: a\r\n\r\nevent: e2\r\ndata: b\r\n\r\n") == expected
    assert parse(b"event: e1\rdata: a\r\revent: e2\rdata: b\r\r") == expected


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    events = parse(b"data: a\r", b"\n", b"\r", b"\ndata: b\r", b"\n\r\n")
    assert [e.data for e in events] == ["a", "b"]


def test_field_without_colon_and_unknown_fields() -> None:
    # "data" alone is an empty data line (dispatches ""); unknown fields are ignored
    assert parse(b"data\n\nfoo: bar\ndata: x\n\n") == [SSEEvent(""), SSEEvent("x")]
    assert parse(b"data\ndata\n\n")[0].data == "\n"


def test_event_without_data_is_not_dispatched() -> None:
    assert parse(b"event: ping\n\ndata: x\n\n") == [SSEEvent("x")]


def test_id_persists_and_retry_parsed() -> None:
    events = parse(b"id: 7\nretry: 1500\ndata: a\n\ndata: b\n\nid: bad\0\nretry: x\ndata: c\n\n")
    assert [(e.id, e.retry) for e in events] == [("7", 1500), ("7", 1500), ("7", 1500)]


def test_bom_is_stripped_even_when_split() -> None:
    assert parse(b"\xef", b"\xbb", b"\xbfdata: x\n\n") == [SSEEvent("x")]
    assert parse("\ufeffevent: e\ndata: y\n\n") == [SSEEvent("y", "e")]


def test_utf8_split_inside_a_character() -> None:
    raw = "data: héllo → 世界\n\n".encode()
    assert parse(*[raw[i : i + 1] for i in range(len(raw))]) == [SSEEvent("héllo → 世界")]


def test_flush_dispatches_complete_lines_but_drops_a_partial_one() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]\n") == []
    assert decoder.flush() == [SSEEvent("[DONE]")]
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"type":"message_st') == []
    assert decoder.flush() == []


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name)
def test_transcripts_parse_the_same_with_crlf_and_tiny_chunks(path: Path) -> None:
    raw = path.read_bytes()
    whole = parse(raw)
    assert whole, "every transcript holds events"
    assert parse(raw.replace(b"\n", b"\r\n")) == whole
    assert parse(*[raw[i : i + 3] for i in range(0, len(raw), 3)]) == whole


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_chunking_gives_the_same_events(data: st.DataObject) -> None:
    raw = data.draw(st.sampled_from(TRANSCRIPTS)).read_bytes()
    if data.draw(st.booleans()):
        raw = raw.replace(b"\n", b"\r\n")
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=40)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    assert parse(*chunks) == parse(raw)


async def test_aiter_sse_over_an_async_byte_stream() -> None:
    async def body():
        for piece in (b"event: a\nda", b"ta: 1\n", b"\ndata: 2\n\n"):
            yield piece

    assert [e async for e in aiter_sse(body())] == [SSEEvent("1", "a"), SSEEvent("2")]


def test_a_long_line_in_many_pieces_is_joined_once() -> None:
    """A 4 MB ``data:`` line arriving in 4 KB pieces (a model's huge tool call) is kept as
    pieces until it ends: the buffer never grows per piece (which made it quadratic)."""
    line = b"data: " + b"x" * (4 << 20) + b"\n\n"
    decoder = SSEDecoder()
    events = []
    largest_buffer = 0
    for start in range(0, len(line), 4096):
        events += decoder.feed(line[start : start + 4096])
        largest_buffer = max(largest_buffer, len(decoder._buf))
    assert [len(e.data) for e in events] == [4 << 20]
    assert largest_buffer <= 4096

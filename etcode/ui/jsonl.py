"""``--format json``: one JSON object per event on stdout; the last line is the result.

Every line carries the schema's ``version`` (:data:`~etcode.contract.events.EVENT_SCHEMA_VERSION`)
after its ``type``; ``docs/json-format.md`` lists the events and their fields.
"""

from __future__ import annotations

import dataclasses
import json
from typing import TextIO

from etcode.contract import events as ev
from etcode.contract.events import EVENT_SCHEMA_VERSION
from etcode.security.redact import StreamRedactor, redact
from etcode.util.json_types import JsonObject


class JsonLinesRenderer:
    """API keys are redacted from every line; text and reasoning deltas go through a
    :class:`StreamRedactor`, so a key split across deltas is caught too (a delta's last
    unfinished word may move to the next delta; their concatenation is unchanged)."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._streams: dict[
            type, tuple[StreamRedactor, ev.TextDeltaEvent | ev.ReasoningDeltaEvent | None]
        ] = {}

    def write(self, data: JsonObject) -> None:
        line = {"type": data.get("type"), "version": EVENT_SCHEMA_VERSION, **data}
        # "[REDACTED]" needs no JSON escaping, so the redacted line stays valid JSON
        self.out.write(redact(json.dumps(line, ensure_ascii=False, default=str)) + "\n")
        self.out.flush()

    def _delta(self, event: ev.TextDeltaEvent | ev.ReasoningDeltaEvent) -> None:
        self._drain(keep=type(event))
        stream, _ = self._streams.get(type(event)) or (StreamRedactor(), None)
        self._streams[type(event)] = (stream, event)
        shown = stream.feed(event.text)
        if shown:
            self.write(dataclasses.replace(event, text=shown).to_dict())

    def _drain(self, keep: type | None = None) -> None:
        """Write out what the delta streams hold (all but ``keep``'s)."""
        for kind, (stream, last) in list(self._streams.items()):
            if kind is keep:
                continue
            rest = stream.drain()
            if rest and last is not None:
                self.write(dataclasses.replace(last, text=rest).to_dict())

    def handle(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextDeltaEvent | ev.ReasoningDeltaEvent):
            self._delta(event)
            return
        self._drain()
        if isinstance(event, ev.DoneEvent):
            self.write(event.result)  # {"type": "result", ...} is the last line
        else:
            self.write(event.to_dict())

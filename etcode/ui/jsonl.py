"""``--format json``: one JSON object per event on stdout; the last line is the result."""

from __future__ import annotations

import json
from typing import Any, TextIO

from etcode.session import events as ev


class JsonLinesRenderer:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def write(self, data: dict[str, Any]) -> None:
        self.out.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
        self.out.flush()

    def handle(self, event: ev.Event) -> None:
        if isinstance(event, ev.DoneEvent):
            self.write(event.result)  # {"type": "result", ...} is the last line
        else:
            self.write(event.to_dict())

"""What a tool result keeps of what the chat showed, so a resumed session looks the same.

The summary line is kept whole; of the structured ``data`` only the small facts (numbers,
flags, short strings) and an edit's ``diff`` (capped) are kept: lists, mappings and long
text such as file contents stay out of the session store.
"""

from __future__ import annotations

from etcode.util.json_types import JsonObject, JsonValue

#: Longest diff kept (characters); a longer one is cut with a note.
MAX_DIFF_CHARS = 200_000
#: Longest other string value kept.
MAX_TEXT_CHARS = 500


def kept_data(data: JsonObject | None) -> JsonObject | None:
    """The part of a tool result's ``data`` stored with it (None when nothing is left)."""
    if not data:
        return None
    kept: JsonObject = {}
    for key, value in data.items():
        if key == "diff" and isinstance(value, str):
            if len(value) > MAX_DIFF_CHARS:
                cut = value[:MAX_DIFF_CHARS].rsplit("\n", 1)[0]
                value = f"{cut}\n… diff cut at {MAX_DIFF_CHARS:,} characters"
            kept[key] = value
        elif _small(value):
            kept[key] = value
    return kept or None


def _small(value: JsonValue) -> bool:
    if isinstance(value, str):
        return len(value) <= MAX_TEXT_CHARS
    return value is None or isinstance(value, bool | int | float)

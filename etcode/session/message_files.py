"""Messages too large for a database row live in files beside the database.

A model's WriteFile of a 200 MB file carries the content in its tool call; stored in the
``messages`` table that doubles the database and, past SQLite's 1 GB string limit, fails
the whole save. A message whose encoded parts exceed :data:`FILE_LIMIT` characters is
written to ``messages/<sha256>.json`` (private, synced, content-addressed: a fork shares
it) and its row holds a small marker ``{"$file": NAME, "chars": N}``. Files no row refers
to any more are removed when a session is deleted.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from etcode.util.private import private_dir

#: Encoded messages longer than this (characters) are kept in a file, not in their row.
FILE_LIMIT = 1 << 20
MARKER_KEY = "$file"
#: How every marker (and no JSON list of parts) begins.
MARKER_START = '{"' + MARKER_KEY + '"'
#: Written and hashed this many characters at a time (no second full copy in memory).
_SLICE = 1 << 20
_NAME = re.compile(r"[0-9a-f]{64}\.json")


class MessageFileError(OSError):
    """A message's file cannot be written or read (the message names the file)."""


def folder_of(database: Path) -> Path:
    return database.parent / "messages"


def is_marker(parts: str) -> bool:
    return parts.startswith(MARKER_START)


def store(folder: Path, encoded: str) -> str:
    """Write ``encoded`` to its file (once per content) and return the row's marker."""
    try:
        private_dir(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".message-", suffix=".tmp")
    except OSError as err:
        raise MessageFileError(err.errno, f"{_reason(err)} writing a large message in {folder}") from None
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for start in range(0, len(encoded), _SLICE):
                data = encoded[start : start + _SLICE].encode("utf-8")
                digest.update(data)
                out.write(data)
            out.flush()
            os.fsync(out.fileno())
        name = digest.hexdigest() + ".json"
        os.replace(tmp, folder / name)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise MessageFileError(err.errno, f"{_reason(err)} writing a large message in {folder}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return json.dumps({MARKER_KEY: name, "chars": len(encoded)}, separators=(",", ":"))


def load(folder: Path, marker: str) -> str:
    """The encoded parts a marker refers to. Raises :class:`MessageFileError`."""
    try:
        info = json.loads(marker)
        name = str(info[MARKER_KEY])
    except (ValueError, KeyError, TypeError):
        raise MessageFileError(0, f"a stored message has a damaged file reference: {marker[:80]}") from None
    path = folder / name
    if not _NAME.fullmatch(name):
        raise MessageFileError(0, f"a stored message refers to an unexpected file name: {name[:80]}")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = _reason(err) if isinstance(err, OSError) else "not UTF-8 text"
        raise MessageFileError(0, f"cannot read the stored message {path}: {reason}") from None


def remove_unreferenced(folder: Path, referenced: set[str]) -> None:
    """Delete the message files no row refers to (after a session was deleted)."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if _NAME.fullmatch(entry.name) and entry.name not in referenced:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)


def name_in(marker: str) -> str | None:
    with contextlib.suppress(ValueError, KeyError, TypeError):
        return str(json.loads(marker)[MARKER_KEY])
    return None


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)).lower()

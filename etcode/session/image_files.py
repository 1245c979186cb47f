"""The images of a session's messages live in files beside the database, not in its rows.

A screenshot is megabytes of base64; kept in the ``messages`` table it would make every load
and every fork copy it. Each image is written once to ``images/<sha256>.<ext>`` (its decoded
bytes; private, synced, content-addressed) and its row holds the :class:`ImagePart` with
``data`` empty and ``sha256`` set. A fork copies rows, so it shares the files. Loading puts
the bytes back; a file gone missing makes the image its label text (``[image: NAME W×H]``)
and one warning, never a failed load. Files no row refers to any more are removed when a
session is deleted (:func:`remove_unreferenced`; a file written in the last minutes is kept:
its row may not be committed yet).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from etcode.provider.types import ImagePart, Message, Part, TextPart, ToolResultPart
from etcode.util.private import private_dir

#: The file suffix of each media type (anything else is kept as ``.img``).
_SUFFIX = {"image/png": ".png", "image/jpeg": ".jpg", "image/gif": ".gif", "image/webp": ".webp"}
_HASH = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"([0-9a-f]{64})\.(?:png|jpg|gif|webp|img)")
#: How a stored image's hash appears in a row's JSON (the sweep's reference scan).
_STORED = re.compile(r'"sha256":"([0-9a-f]{64})"')
#: Files younger than this (seconds) are never swept: a concurrent writer's row may be pending.
SWEEP_GRACE = 600.0


class ImageFileError(OSError):
    """An image cannot be written beside the database (the message names the folder)."""


def folder_of(database: Path) -> Path:
    return database.parent / "images"


def _path(folder: Path, image: ImagePart) -> Path:
    return folder / (image.sha256 + _SUFFIX.get(image.media_type, ".img"))


def externalize(message: Message, folder: Path) -> Message:
    """``message`` as its row holds it: each image written to its file (once per content) and
    kept with ``data`` empty. ``message`` itself is not changed (the run still sends it)."""
    if not message.images:
        return message
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            parts.append(_stored(part, folder))
        elif isinstance(part, ToolResultPart) and part.images:
            parts.append(replace(part, images=[_stored(image, folder) for image in part.images]))
        else:
            parts.append(part)
    return Message(message.role, parts)


def _stored(image: ImagePart, folder: Path) -> ImagePart:
    if not image.data:  # loaded from its file before and not restored: the file is there
        return image
    try:
        data = base64.b64decode(image.data, validate=True)
    except (binascii.Error, ValueError):
        return image  # not base64: kept in the row as it is (the provider will say what is wrong)
    kept = replace(image, data="", sha256=hashlib.sha256(data).hexdigest())
    _write(_path(folder, kept), data)
    return kept


def _write(path: Path, data: bytes) -> None:
    folder = path.parent
    if path.exists():
        with contextlib.suppress(OSError):
            os.utime(path)  # in use again: a concurrent sweep's grace starts over
        return
    try:
        private_dir(folder)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".image-", suffix=".tmp")
    except OSError as err:
        raise ImageFileError(err.errno, f"{_reason(err)} writing an image in {folder}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise ImageFileError(err.errno, f"{_reason(err)} writing an image in {folder}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def restore(message: Message, folder: Path, warnings: list[str] | None = None) -> Message:
    """``message`` with its images' bytes read back from their files. An image whose file is
    missing or unreadable becomes its label text (a tool result's: a line after its output)
    and a line in ``warnings``."""
    if not message.images:
        return message
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, ImagePart):
            loaded = _loaded(part, folder, warnings)
            parts.append(loaded if loaded is not None else TextPart(_label(part)))
        elif isinstance(part, ToolResultPart) and part.images:
            images = [(image, _loaded(image, folder, warnings)) for image in part.images]
            kept = [loaded for _, loaded in images if loaded is not None]
            lost = [_label(image) for image, loaded in images if loaded is None]
            output = (
                "\n".join([part.output, *lost]) if lost and part.output else "\n".join(lost) or part.output
            )
            parts.append(replace(part, images=kept or None, output=output))
        else:
            parts.append(part)
    return Message(message.role, parts)


def _loaded(image: ImagePart, folder: Path, warnings: list[str] | None) -> ImagePart | None:
    if image.data:
        return image
    if not _HASH.fullmatch(image.sha256):  # a damaged row: never a path out of the folder
        if warnings is not None:
            warnings.append(f"a stored image has a damaged reference; the history shows {_label(image)}")
        return None
    path = _path(folder, image)
    try:
        data = path.read_bytes()
    except OSError as err:
        if warnings is not None:
            warnings.append(
                f"a stored image is gone ({path}: {_reason(err)}); the history shows {_label(image)}"
            )
        return None
    return replace(image, data=base64.b64encode(data).decode("ascii"))


def _label(image: ImagePart) -> str:
    from etcode.provider.types import image_label

    return image_label(image)


def hashes_in(encoded: str) -> set[str]:
    """The stored images a row's JSON refers to (a text that merely looks like one keeps a
    file, never loses one)."""
    return set(_STORED.findall(encoded)) if '"image"' in encoded else set()


def remove_unreferenced(folder: Path, referenced: set[str], now: float | None = None) -> None:
    """Delete the image files no row refers to (after a session was deleted), except those
    written in the last :data:`SWEEP_GRACE` seconds."""
    now = time.time() if now is None else now
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = _NAME.fullmatch(entry.name)
            if found is None or found.group(1) in referenced:
                continue
            with contextlib.suppress(OSError):
                if now - entry.stat().st_mtime >= SWEEP_GRACE:
                    os.unlink(entry.path)


def _reason(err: OSError) -> str:
    return (err.strerror or str(err)).lower()

"""Images a user hands in with a message (``Agent.run(images=…)``, ``etcode run --image``,
a path pasted into the chat) read as :class:`ImagePart` s, and the user message that carries
them. Pillow is imported only when an image is read (``provider/images.py``)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeAlias
from urllib.parse import unquote, urlparse

from etcode.provider.types import ImagePart, Message, Part, TextPart

#: An image as the API takes it: a path, an :class:`ImagePart`, or a whole file's bytes.
ImageInput: TypeAlias = "str | os.PathLike[str] | ImagePart | bytes"


async def load_images(
    items: ImageInput | Iterable[ImageInput], directory: Path | None = None
) -> list[ImagePart]:
    """Every item as an :class:`ImagePart` (a relative path is taken from ``directory``, else
    the current folder); one item alone (``images="shot.png"``) is one image, not a list of
    letters or bytes. Raises :class:`~etcode.provider.images.ImageError` naming the first
    item that is not a readable PNG, JPEG, GIF or WebP image; ``TypeError`` for another kind."""
    from etcode.provider.images import image_from_bytes, read_image

    entries: Iterable[ImageInput] = (
        [items] if isinstance(items, str | os.PathLike | ImagePart | bytes | bytearray) else items
    )
    images: list[ImagePart] = []
    for number, item in enumerate(entries, 1):
        if isinstance(item, ImagePart):
            images.append(item)
        elif isinstance(item, bytes | bytearray | memoryview):
            images.append(await asyncio.to_thread(image_from_bytes, bytes(item), f"image {number}"))
        elif isinstance(item, str | os.PathLike):
            path = Path(item).expanduser()
            if not path.is_absolute():
                path = (directory or Path.cwd()) / path
            images.append(await read_image(path, str(item)))
        else:
            raise TypeError(f"images: expected a path, bytes or an ImagePart, not {type(item).__name__}")
    return images


def user_message(text: str, images: Iterable[ImagePart] = ()) -> Message:
    """The user's message: ``text``, then each image."""
    parts: list[Part] = [TextPart(text), *images]
    return Message("user", parts)


def pasted_path(text: str) -> str | None:
    """The one file path a terminal pastes for a dropped file, unwrapped: quoted (``'…'``,
    ``"…"``), a ``file://`` URL, or with backslash-escaped spaces; None when ``text`` is not
    one path (several words, several lines)."""
    text = text.strip()
    if not text or "\n" in text:
        return None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    elif text.startswith("file://"):
        parsed = urlparse(text)
        text = unquote(parsed.path)
    else:
        return _unescape(text) or None
    return text or None


def _unescape(text: str) -> str | None:
    """``a\\ b.png`` → ``a b.png``; None when an unescaped space shows several words."""
    out: list[str] = []
    chars = iter(text)
    for char in chars:
        if char == "\\":
            out.append(next(chars, ""))
        elif char.isspace():
            return None
        else:
            out.append(char)
    return "".join(out)

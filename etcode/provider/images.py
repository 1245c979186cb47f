"""Images as a model sees them: which files are images, one read within the providers'
limits, and what an image costs in the context window.

FIRST VERSION (lead's groundwork): the signatures are the contract other modules use;
the img-core helper fills in downscaling and the published token formulas.
Pillow is imported only when an image is read.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
from pathlib import Path
from typing import Literal

from etcode.provider.types import ImagePart
from etcode.util.errors import EtcodeError

#: The media type of each image file suffix etcode sends to a model.
IMAGE_SUFFIXES: dict[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}

#: The providers' limits: the long edge in pixels and the encoded size in bytes.
MAX_EDGE = 1568
MAX_BYTES = 5 * 1024 * 1024


class ImageError(EtcodeError):
    """A file that should be an image and cannot be read as one (the message names it)."""


def sniff_media_type(head: bytes) -> str | None:
    """The media type of an image by its first bytes (PNG, JPEG, GIF, WebP), else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_image_path(path: str | Path) -> bool:
    """Whether a path names an image etcode can send, by its suffix."""
    return Path(path).suffix.lower() in IMAGE_SUFFIXES


def image_from_bytes(data: bytes, name: str) -> ImagePart:
    """``data`` (a whole image file) as an :class:`ImagePart` within :data:`MAX_EDGE` and
    :data:`MAX_BYTES`. Raises :class:`ImageError` naming ``name`` when it is not an image."""
    media_type = sniff_media_type(data[:16])
    if media_type is None:
        raise ImageError(f"{name}: not a PNG, JPEG, GIF or WebP image")
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except Exception as err:  # Pillow raises many kinds for a damaged file
        raise ImageError(f"{name}: cannot read the image ({err})") from None
    return ImagePart(
        media_type,
        base64.b64encode(data).decode("ascii"),
        width,
        height,
        name,
        hashlib.sha256(data).hexdigest(),
    )


async def read_image(path: Path, name: str | None = None) -> ImagePart:
    """The image file at ``path`` (off the event loop). Raises :class:`ImageError`."""

    def read() -> bytes:
        try:
            return path.read_bytes()
        except OSError as err:
            raise ImageError(f"{name or path}: {err.strerror or err}") from None

    data = await asyncio.to_thread(read)
    return await asyncio.to_thread(image_from_bytes, data, name or path.name)


def image_tokens(image: ImagePart, family: Literal["anthropic", "openai"] = "openai") -> int:
    """What ``image`` costs in the context window (Anthropic's or OpenAI's published formula;
    OpenAI's for other OpenAI-compatible servers)."""
    if family == "anthropic":
        return max(1, (image.width * image.height) // 750)
    tiles = max(1, -(-image.width // 512)) * max(1, -(-image.height // 512))
    return 85 + 170 * tiles


def image_label(image: ImagePart) -> str:
    """``[image: NAME W×H]``: an image in replay and in text-only places."""
    return f"[image: {image.name or 'image'} {image.width}×{image.height}]"

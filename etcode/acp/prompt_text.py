"""A ``session/prompt``'s content blocks as the message the model receives: the text, and
files the editor attached (embedded resources) in the same ``<file>`` form as ``@path``
mentions in the chat. A linked file (resource link) is named, not read: the model reads it
with its tools when it needs it. An image block (base64 ``data`` and ``mimeType``) becomes an
image of the user's message, downscaled to the providers' limits (``provider/images.py``)."""

from __future__ import annotations

import base64
import binascii
from typing import TypeAlias
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from etcode.ui.tui.mentions import Attachment, attach

#: A content block of ``session/prompt``.
PromptBlock: TypeAlias = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


def _path_of(uri: str) -> str:
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def prompt_text(blocks: list[PromptBlock]) -> str:
    return attach(*prompt_parts(blocks))


def prompt_parts(blocks: list[PromptBlock]) -> tuple[str, list[Attachment]]:
    """The text blocks joined, and the files attached (a custom command expands the text
    only; the files follow its prompt). Raises :class:`~etcode.provider.images.ImageError`
    naming an image block that is not a PNG, JPEG, GIF or WebP image. Blocking (an image is
    decoded): a worker thread from async code."""
    texts: list[str] = []
    attachments: list[Attachment] = []
    images = 0
    for block in blocks:
        if isinstance(block, ImageContentBlock):
            images += 1
            attachments.append(_image(block, images))
            continue
        if isinstance(block, TextContentBlock):
            texts.append(block.text)
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                attachments.append(Attachment(_path_of(resource.uri), resource.text))
            else:
                attachments.append(Attachment(_path_of(resource.uri), None, "binary content not attached"))
        elif isinstance(block, ResourceContentBlock):
            attachments.append(Attachment(_path_of(block.uri), None, "linked by the user; read it if needed"))
        else:  # audio: this agent's models get text and images only (not offered in initialize)
            attachments.append(Attachment(f"({block.type})", None, "not supported, left out"))
    return "".join(texts), attachments


def _image(block: ImageContentBlock, number: int) -> Attachment:
    """An image block as an attachment: named by its URI's file name when it has one."""
    from etcode.provider.images import ImageError, image_from_bytes

    name = _path_of(block.uri).rsplit("/", 1)[-1] if block.uri else ""
    name = name or f"image {number}"
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        raise ImageError(f"{name}: the image block's data is not base64") from None
    image = image_from_bytes(data, name)
    return Attachment(name, None, f"image, attached: {image.width}×{image.height}", image)

"""A ``session/prompt``'s content blocks as the message the model receives: the text, and
files the editor attached (embedded resources) in the same ``<file>`` form as ``@path``
mentions in the chat. A linked file (resource link) is named, not read: the model reads it
with its tools when it needs it."""

from __future__ import annotations

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
    only; the files follow its prompt)."""
    texts: list[str] = []
    attachments: list[Attachment] = []
    for block in blocks:
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
        else:  # images and audio: this agent's models get text only (not offered in initialize)
            attachments.append(Attachment(f"({block.type})", None, "not supported, left out"))
    return "".join(texts), attachments

"""Images and a model that may not take them.

A request to a text-only model carries a one-line notice (``prompts/notices/
image_not_sent.txt``) in place of each image, never the image (which would be a 400); the
session keeps the images, only the request changes. A model nobody knows about (a local
model the catalog does not list) is tried: when its server refuses a request that carried
images (a 400, or a refusal the error table recognises: llama.cpp answers 500 "image input
is not supported"), the loop sends the same request again with the notices and
:class:`ImageSupport` learns ``False`` (``on_refused`` remembers it for later runs).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from etcode.provider.errors import ContextOverflowError, ImagesRefusedError, ProviderError
from etcode.provider.types import ImagePart, Message, Part, TextPart, ToolResultPart

#: An image → the text that stands in its place (None: the image stays).
ImageText = Callable[[ImagePart], str | None]

#: The most images one request carries, by wire format: Anthropic refuses more than 100 for
#: a 200k-token model ("Too much media: … images > 100"; 600 for larger windows); OpenAI takes
#: up to 500, but OpenAI-compatible servers take far fewer (Scaleway's Pixtral 12, vLLM what
#: ``--limit-mm-per-prompt`` says): 50 is a conservative middle.
MAX_IMAGES: dict[str, int] = {"anthropic": 100, "openai": 50}
#: The most image data (base64 text) one request carries: Anthropic takes 32 MB per request,
#: OpenAI 50 MB; what is left is for the text.
MAX_IMAGE_BYTES = 20 * 1024 * 1024
#: How a server says a request holds too many images (not that the model takes none).
_TOO_MANY = re.compile(r"too much media|too many images|at most [1-9]\d* images?", re.IGNORECASE)


def has_images(messages: list[Message]) -> bool:
    """Whether any message holds an image (its own or a tool result's)."""
    return any(message.images for message in messages)


def replace_images(messages: list[Message], text_for: ImageText) -> list[Message]:
    """``messages`` with every image for which ``text_for(image)`` is a text replaced by it:
    a user message's image becomes a text part in its place, a tool result's images lines
    after its output. A message left as it was is the same object; the others are copies
    (the originals, which the session keeps, are never changed)."""
    out: list[Message] = []
    for message in messages:
        if not message.images:
            out.append(message)
            continue
        parts: list[Part] = []
        changed = False
        for part in message.parts:
            if isinstance(part, ImagePart):
                text = text_for(part)
                changed = changed or text is not None
                if text is not None and parts and isinstance(parts[-1], TextPart):
                    text = "\n" + text  # its own line: OpenAI's wire joins a message's texts
                parts.append(part if text is None else TextPart(text))
            elif isinstance(part, ToolResultPart) and part.images:
                kept: list[ImagePart] = []
                lines: list[str] = []
                for image in part.images:
                    text = text_for(image)
                    if text is None:
                        kept.append(image)
                    else:
                        lines.append(text)
                if lines:
                    changed = True
                    output = "\n".join([part.output, *lines] if part.output else lines)
                    part = replace(part, output=output, images=kept or None)
                parts.append(part)
            else:
                parts.append(part)
        out.append(Message(message.role, parts) if changed else message)
    return out


def within_limits(
    messages: list[Message], max_images: int, max_bytes: int = MAX_IMAGE_BYTES
) -> list[Message]:
    """``messages`` carrying at most ``max_images`` images and ``max_bytes`` of their data:
    the newest are kept, the older ones go as their labels (as compaction drops them)."""
    from etcode.provider.types import image_label

    count = size = 0
    dropped: set[int] = set()
    for message in reversed(messages):
        for image in reversed(message.images):
            count += 1
            size += len(image.data)
            if count > max_images or size > max_bytes:
                dropped.add(id(image))
    if not dropped:
        return messages
    return replace_images(messages, lambda image: image_label(image) if id(image) in dropped else None)


def image_not_sent(model: str, image: ImagePart) -> str:
    """The notice a text-only model reads in place of ``image``."""
    from etcode.prompt.templates import load, render
    from etcode.provider.types import image_label

    return render(load("notices/image_not_sent.txt"), {"model": model, "label": image_label(image)}).strip()


@dataclass
class ImageSupport:
    """Whether the session's model takes images: ``True``, ``False`` (a text-only model: its
    requests carry notices instead), or ``None`` (unknown: tried, and a refusal teaches
    ``False``). One per session runtime, shared by its runs."""

    model: str
    takes_images: bool | None = None
    #: Called once when a refusal taught ``False`` (keeps it with the server's facts).
    on_refused: Callable[[], None] | None = None
    #: The most images one request carries (:data:`MAX_IMAGES` of the wire format).
    max_images: int = MAX_IMAGES["openai"]

    def prepare(self, messages: list[Message]) -> list[Message]:
        """The messages a request carries: without images for a text-only model, else with
        the images past the limits (the oldest) as their labels."""
        if self.takes_images is not False:
            return within_limits(messages, self.max_images)
        return replace_images(messages, self.notice)

    def notice(self, image: ImagePart) -> str:
        """The notice a text-only model's request carries in place of ``image``."""
        return image_not_sent(self.model, image)

    def refused(self, err: ProviderError, messages: list[Message]) -> bool:
        """Whether ``err`` answered a request of ``messages`` by refusing its images, the model
        not being known to take them: then it takes ``False`` for now (the caller sends the
        request again, :meth:`prepare` putting notices in their place, then calls
        :meth:`settle`)."""
        if self.takes_images is not None or isinstance(err, ContextOverflowError):
            return False
        if _TOO_MANY.search(str(err)):  # too many images: the model takes them
            return False
        if not (err.status == 400 or isinstance(err, ImagesRefusedError)) or not has_images(messages):
            return False
        self.takes_images = False
        return True

    def settle(self, refusal: ProviderError, completed: bool) -> None:
        """After the request was sent again without images (``completed``: its answer came):
        ``False`` is kept (and ``on_refused`` remembers it) when that answer came, or when the
        server said the images were the trouble (:class:`ImagesRefusedError`). Otherwise — a
        bare 400, then any error (another 400, a 503, a network failure) or an interrupt — it
        is not known what the first error was about: the model is unknown again, nothing is
        remembered."""
        if not completed and not isinstance(refusal, ImagesRefusedError):
            self.takes_images = None
            return
        if self.on_refused is not None:
            self.on_refused()

    def warning(self, err: ProviderError) -> str:
        """What the user is told once, when a refusal taught ``False``."""
        return (
            f"{self.model} does not take images (the server answered: {err}); the request was sent "
            "again with a note in place of each image, and later requests send none"
        )

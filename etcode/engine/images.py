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

from collections.abc import Callable
from dataclasses import dataclass, replace

from etcode.provider.errors import ContextOverflowError, ImagesRefusedError, ProviderError
from etcode.provider.types import ImagePart, Message, Part, TextPart, ToolResultPart

#: An image → the text that stands in its place.
ImageText = Callable[[ImagePart], str]


def has_images(messages: list[Message]) -> bool:
    """Whether any message holds an image (its own or a tool result's)."""
    return any(message.images for message in messages)


def replace_images(messages: list[Message], text_for: ImageText) -> list[Message]:
    """``messages`` with every image replaced by ``text_for(image)``: a user message's image
    becomes a text part in its place, a tool result's images lines after its output. A
    message without images is the same object; the others are copies (the originals, which
    the session keeps, are never changed)."""
    out: list[Message] = []
    for message in messages:
        if not message.images:
            out.append(message)
            continue
        parts: list[Part] = []
        for part in message.parts:
            if isinstance(part, ImagePart):
                parts.append(TextPart(text_for(part)))
            elif isinstance(part, ToolResultPart) and part.images:
                lines = "\n".join(text_for(image) for image in part.images)
                output = f"{part.output}\n{lines}" if part.output else lines
                parts.append(replace(part, output=output, images=None))
            else:
                parts.append(part)
        out.append(Message(message.role, parts))
    return out


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

    def prepare(self, messages: list[Message]) -> list[Message]:
        """The messages a request carries: without images for a text-only model."""
        if self.takes_images is not False:
            return messages
        return replace_images(messages, lambda image: image_not_sent(self.model, image))

    def refused(self, err: ProviderError, messages: list[Message]) -> bool:
        """Whether ``err`` answered a request of ``messages`` by refusing its images, the model
        not being known to take them: then it takes ``False`` for now (the caller sends the
        request again, :meth:`prepare` putting notices in their place, then calls
        :meth:`settle`)."""
        if self.takes_images is not None or isinstance(err, ContextOverflowError):
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

"""``@path`` mentions in a message: finding them, reading the files (through the one check of
project files, ``project_files.refusal``) and attaching them as ``<file>`` blocks; an image
(PNG, JPEG, GIF, WebP) is attached as an :class:`ImagePart` of the message instead, the text
keeping a line that names it. The chat's input, ACP prompts, ``etcode run`` and custom
commands (``extensions/command_expansion.py``) share it."""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etcode.provider.types import ImagePart

#: ``@path`` at the start or after whitespace; the path runs to the next whitespace.
MENTION = re.compile(r"(?:(?<=\s)|^)@([^\s@]+)")
MAX_ATTACH_BYTES = 100 * 1024


@dataclass
class Attachment:
    """A mentioned file: its display path and the text attached (or why it was not); an
    image's text is None and ``image`` holds it."""

    path: str
    text: str | None
    note: str = ""
    image: ImagePart | None = None


def find_mentions(text: str) -> list[str]:
    """The ``@path`` tokens of ``text`` (without the ``@``), first occurrence order, unique."""
    seen: dict[str, None] = {}
    for match in MENTION.finditer(text):
        seen.setdefault(match.group(1).rstrip(".,;:!?)]}\"'"), None)
    return [m for m in seen if m]


def resolve_mentions(
    text: str, directory: Path, trusted: bool = False, root: Path | None = None
) -> list[Attachment]:
    """Read every mentioned file that exists under (or relative to) ``directory``. A file
    of the project (``root``, its worktree; ``directory`` when not given) reached through a
    link out of it (or to a secret or git-ignored file) is not attached unless the project
    is ``trusted`` (``prompt/project_files.py``). Blocking: call it in a worker thread."""
    from etcode.prompt.project_files import TRUST_HINT, refusal
    from etcode.provider.images import is_image_path
    from etcode.util.fs import is_binary_file

    attachments: list[Attachment] = []
    for mention in find_mentions(text):
        path = Path(mention).expanduser()
        path = path if path.is_absolute() else directory / path
        if not path.is_file():
            continue
        shown = display_path(path, directory)
        reason = None if trusted else refusal(path, root or directory)
        if reason is not None:
            attachments.append(Attachment(shown, None, f"not attached: {reason} ({TRUST_HINT})"))
            continue
        if is_image_path(path):
            attachments.append(_image_attachment(path, shown))
            continue
        try:
            size = path.stat().st_size
            if is_binary_file(path):
                attachments.append(Attachment(shown, None, "binary file, not attached"))
                continue
            data = path.read_bytes()[:MAX_ATTACH_BYTES]
        except OSError as err:
            attachments.append(Attachment(shown, None, f"unreadable: {err.strerror or err}"))
            continue
        content = data.decode("utf-8", errors="replace")
        note = f"truncated to the first {MAX_ATTACH_BYTES // 1024} KB" if size > MAX_ATTACH_BYTES else ""
        attachments.append(Attachment(shown, content, note))
    return attachments


def _image_attachment(path: Path, shown: str) -> Attachment:
    """The image at ``path`` as an attachment (or why it is not one). Blocking."""
    from etcode.provider.images import MAX_FILE_READ, ImageError, image_from_bytes
    from etcode.util.fs import read_regular_capped

    try:  # capped, and a FIFO swapped in since ``is_file()`` is refused, never waited on
        image = image_from_bytes(read_regular_capped(path, MAX_FILE_READ), shown)
    except OSError as err:
        how = "not attached" if err.errno == errno.EFBIG else "unreadable"
        return Attachment(shown, None, f"{how}: {err.strerror or err}")
    except ImageError as err:
        return Attachment(shown, None, f"not attached: {str(err).removeprefix(shown + ': ')}")
    return Attachment(shown, None, f"image, attached: {image.width}×{image.height}", image)


def images_of(attachments: list[Attachment]) -> list[ImagePart]:
    """The images among ``attachments``, in order (they go with the message's text)."""
    return [item.image for item in attachments if item.image is not None]


def display_path(path: Path, directory: Path) -> str:
    try:
        return path.resolve().relative_to(directory.resolve()).as_posix()
    except ValueError:
        return str(path)


def attach(text: str, attachments: list[Attachment]) -> str:
    """The message the model receives: ``text`` followed by each attached file."""
    blocks = [text]
    for item in attachments:
        if item.text is None:
            blocks.append(f'<file path="{item.path}" note="{item.note}" />')
            continue
        note = f' note="{item.note}"' if item.note else ""
        body = item.text if item.text.endswith("\n") else item.text + "\n"
        blocks.append(f'<file path="{item.path}"{note}>\n{body}</file>')
    return "\n\n".join(blocks)

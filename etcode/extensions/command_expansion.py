"""A custom command's prompt for one use: ``$ARGUMENTS`` (everything after the name), ``$1``…
``$9`` (the arguments split as a shell would, quotes respected; a missing one is empty) and
``@path`` files attached as the chat attaches them (``prompt/mentions.py``, through the one
check of project files; a project command's own mentions through the stricter
``named_file_refusal``). A command without any placeholder gets its arguments appended as
``ARGUMENTS: …`` (as Claude Code does)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.extensions.commands import CustomCommand

if TYPE_CHECKING:
    from etcode.provider.types import ImagePart

#: ``$ARGUMENTS``, ``$1``…``$9`` (``$10`` is no placeholder), and ``\$`` (a literal ``$``).
_PLACEHOLDER = re.compile(r"\\\$|\$(ARGUMENTS|[1-9])(?!\d)")


@dataclass(frozen=True)
class Expansion:
    """A command ready to send: the prompt the model receives, the files attached, and a
    warning per file the command's text names that was not sent."""

    command: CustomCommand
    args: str
    prompt: str
    files: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: The images its mentions attach (they go with the prompt in the user's message).
    images: list[ImagePart] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """What the user typed: ``/name args``."""
        return f"/{self.command.name} {self.args}".rstrip()


def split_args(args: str) -> list[str]:
    """The arguments as a shell splits them; on an unclosed quote, at whitespace."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def substitute(body: str, args: str, words: list[str] | None = None) -> str:
    """``body`` with its placeholders filled (in one pass: an argument is never expanded).
    ``words``: the arguments already split (``etcode run /review a.py "x y"``: the shell's
    words), else ``args`` split here."""
    return _substitute(body, args, words)[0]


def _substitute(body: str, args: str, words: list[str] | None) -> tuple[str, list[tuple[int, int]]]:
    """:func:`substitute`, and where each argument's text landed in it (start, end): the
    user's own words, as opposed to the command file's."""
    args = args.strip()
    if not any(match.group(1) for match in _PLACEHOLDER.finditer(body)):
        body = _PLACEHOLDER.sub("$", body)
        if not args:
            return body, []
        text = f"{body}\n\nARGUMENTS: {args}"
        return text, [(len(text) - len(args), len(text))]
    words = split_args(args) if words is None else words
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    size = end = 0
    for match in _PLACEHOLDER.finditer(body):
        parts.append(body[end : match.start()])
        size += match.start() - end
        end = match.end()
        key = match.group(1)
        if key is None:
            parts.append("$")
            size += 1
            continue
        index = 0 if key == "ARGUMENTS" else int(key) - 1
        fill = args if key == "ARGUMENTS" else (words[index] if index < len(words) else "")
        parts.append(fill)
        spans.append((size, size + len(fill)))
        size += len(fill)
    parts.append(body[end:])
    return "".join(parts), spans


def _users_mentions(text: str, spans: list[tuple[int, int]]) -> set[str]:
    """The ``@path`` mentions of ``text`` that lie, every time they occur, wholly inside one
    argument's own text (``spans``): the user typed them."""
    from etcode.prompt.mentions import MENTION

    inside: dict[str, bool] = {}
    for match in MENTION.finditer(text):
        mention = match.group(1).rstrip(".,;:!?)]}\"'")
        if not mention:
            continue
        start, stop = match.start(), match.start(1) + len(mention)
        wholly = any(low <= start and stop <= high for low, high in spans)
        inside[mention] = inside.get(mention, True) and wholly
    return {mention for mention, wholly in inside.items() if wholly}


def expand(
    command: CustomCommand,
    args: str,
    directory: Path,
    root: Path,
    *,
    trusted: bool = False,
    words: list[str] | None = None,
) -> Expansion:
    """The prompt of ``/name args``. The command's own ``@path`` mentions are read from the
    worktree ``root``, those in the arguments from ``directory``; a mention that names no
    file stays text. A project command's own mention of a file outside the project, a
    secret or a git-ignored one is not sent (a warning names the command file) unless the
    project is ``trusted``. Blocking (reads files): a worker thread from async code."""
    from etcode.prompt.mentions import attach, find_mentions, images_of, resolve_mentions
    from etcode.prompt.project_files import TRUST_HINT, named_file_refusal

    text, spans = _substitute(command.body, args, words)
    own = [mention for mention in find_mentions(command.body) if "$" not in mention]
    given = [mention for mention in find_mentions(text) if mention not in own]
    warnings: list[str] = []
    if command.project and not trusted:
        # every mention but those wholly in one argument (``@$1``, ``@~/.aws/credentials$9``:
        # the file's text had a say in them) passes the strict check, read where it will be read
        users = _users_mentions(text, spans)

        def allowed(mention: str, base: Path) -> bool:
            path = Path(mention).expanduser()
            reason = named_file_refusal(str(path if path.is_absolute() else base / path), root)
            if reason is not None:
                warnings.append(f"{command.source}: @{mention} not sent: {reason} ({TRUST_HINT})")
            return reason is None

        own = [mention for mention in own if allowed(mention, root)]
        given = [mention for mention in given if mention in users or allowed(mention, directory)]
    attachments = resolve_mentions(_as_text(own), root, trusted, root)
    attachments += resolve_mentions(_as_text(given), directory, trusted, root)
    prompt = attach(text, attachments) if attachments else text
    return Expansion(
        command, args.strip(), prompt, [item.path for item in attachments], warnings, images_of(attachments)
    )


def _as_text(mentions: list[str]) -> str:
    return " ".join(f"@{mention}" for mention in mentions)

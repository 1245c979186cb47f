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

from etcode.extensions.commands import CustomCommand

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
    args = args.strip()
    if not any(match.group(1) for match in _PLACEHOLDER.finditer(body)):
        body = _PLACEHOLDER.sub("$", body)
        return f"{body}\n\nARGUMENTS: {args}" if args else body
    words = split_args(args) if words is None else words

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key is None:
            return "$"
        if key == "ARGUMENTS":
            return args
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    return _PLACEHOLDER.sub(value, body)


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
    from etcode.prompt.mentions import attach, find_mentions, resolve_mentions
    from etcode.prompt.project_files import TRUST_HINT, named_file_refusal

    text = substitute(command.body, args, words)
    own = [mention for mention in find_mentions(command.body) if "$" not in mention]
    given = [mention for mention in find_mentions(text) if mention not in own]
    warnings: list[str] = []
    if command.project and not trusted:
        allowed = []
        for mention in own:
            reason = named_file_refusal(mention, root)
            if reason is None:
                allowed.append(mention)
            else:
                warnings.append(f"{command.source}: @{mention} not sent: {reason} ({TRUST_HINT})")
        own = allowed
    attachments = resolve_mentions(_as_text(own), root, trusted, root)
    attachments += resolve_mentions(_as_text(given), directory, trusted, root)
    prompt = attach(text, attachments) if attachments else text
    return Expansion(command, args.strip(), prompt, [item.path for item in attachments], warnings)


def _as_text(mentions: list[str]) -> str:
    return " ".join(f"@{mention}" for mention in mentions)

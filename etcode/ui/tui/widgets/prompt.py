"""The input box: a multi-line ``TextArea`` with history and completion.

Enter sends; Shift+Enter, Ctrl+J or Alt+Enter insert a new line; Up on the first line and
Down on the last walk the history. Typing ``/`` at the start lists slash commands and
``@`` lists project files; Tab (or Enter) accepts, Up/Down choose, Esc closes the list.
PageUp/PageDown scroll the conversation. A large paste shows as ``[Pasted text #1 +N lines]``
and is sent in full. An image file's path pasted (a file dropped on the terminal: quoted, a
``file://`` URL or with escaped spaces) shows as ``[image: NAME W×H]`` and the image is sent
with the message.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widget import Widget
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option
from textual.widgets.text_area import Document

from etcode.ui.command_prompts import CommandIndex
from etcode.ui.tui.commands import SlashCommand, complete_command
from etcode.ui.tui.history import PromptHistory
from etcode.ui.tui.mentions import FileIndex, mention_at

if TYPE_CHECKING:
    from etcode.provider.types import ImagePart

NEWLINE_KEYS = ("shift+enter", "ctrl+j", "alt+enter", "ctrl+enter")
#: ``/command ARG`` being typed: the argument is completed from the command's choices.
ARGUMENT = re.compile(r"/(\w+) (\S*)$")
SCROLL_KEYS = ("pageup", "pagedown")
#: Keys the completion menu takes while it is open.
MENU_KEYS = ("up", "down", "tab", "enter", "escape")
#: A paste with more lines or characters than these is collapsed to a label in the input.
PASTE_LINES = 10
PASTE_CHARS = 1000
#: A paste longer than this is no dropped file's path.
PATH_CHARS = 4096


@dataclass
class Completion:
    """A pending completion: replace ``text[start:end]`` with the chosen value."""

    start: int
    end: int
    values: list[str]
    #: Enter on a value sends the input at once (a ``/model`` or ``/agent`` choice).
    submit: bool = False


class CompletionMenu(OptionList):
    """The completion list shown above the input."""

    def __init__(self) -> None:
        super().__init__(id="completion")
        self.can_focus = False
        self.display = False


class PromptInput(TextArea):
    """The text area itself; key handling is in ``_on_key`` (runs before TextArea's)."""

    class Submitted(Message):
        """``text`` as shown in the input; ``full`` with collapsed pastes put back;
        ``images`` those pasted whose label is still in the text."""

        def __init__(self, text: str, full: str | None = None, images: list[ImagePart] | None = None) -> None:
            super().__init__()
            self.text = text
            self.full = text if full is None else full
            self.images = list(images or [])

    def __init__(self, history: PromptHistory | None = None, id: str | None = None) -> None:
        super().__init__(
            "",
            id=id,
            soft_wrap=True,
            tab_behavior="focus",
            show_line_numbers=False,
            highlight_cursor_line=False,
        )
        self.prompt_history = history or PromptHistory()
        #: A steady cursor: a blinking one is a timer that repaints twice a second forever.
        self.cursor_blink = False
        self.placeholder = "Ask anything · / for commands · @ to attach a file"
        #: Collapsed pastes: label in the input -> the pasted text.
        self.pastes: dict[str, str] = {}
        #: Pasted images: label in the input (``[image: NAME W×H]``) -> the image.
        self.images: dict[str, ImagePart] = {}
        #: Where a pasted relative path is read from (the app sets the project folder).
        self.directory: Path | None = None
        #: What PageUp/PageDown scroll (the app sets the conversation).
        self.scroll_target: Widget | None = None

    @property
    def box(self) -> PromptBox | None:
        parent = self.parent
        return parent if isinstance(parent, PromptBox) else None

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        box = self.box
        if box is not None and box.menu_open and key in MENU_KEYS:
            self._stop(event)
            self._menu_key(box, key)
        elif key in SCROLL_KEYS and self.scroll_target is not None:
            self._stop(event)
            if key == "pageup":
                self.scroll_target.scroll_page_up()
            else:
                self.scroll_target.scroll_page_down()
        elif key in NEWLINE_KEYS:
            self._stop(event)
            self.insert("\n")
        elif key == "enter":
            self._stop(event)
            self.submit()
        else:
            self._browse_history(key, event)

    def _menu_key(self, box: PromptBox, key: str) -> None:
        """Up and down move in the completion menu, escape closes it; tab and enter take
        the choice (enter also sends a command that runs at once)."""
        if key == "up":
            box.menu.action_cursor_up()
        elif key == "down":
            box.menu.action_cursor_down()
        elif key == "escape":
            box.close_menu()
        else:
            runs = box.completion is not None and box.completion.submit
            value = box.accept_completion()
            if key == "enter" and value is not None and (runs or _runs_at_once(value)):
                self.submit()

    def _browse_history(self, key: str, event: events.Key) -> None:
        """Up on the first line shows the prompt sent before, down on the last line the one
        after (the draft after the newest); elsewhere they move the cursor."""
        if key == "up" and self.cursor_location[0] == 0:
            shown = self.prompt_history.previous(self.text)
        elif (
            key == "down"
            and self.cursor_location[0] == self.document.line_count - 1
            and self.prompt_history.browsing
        ):
            shown = self.prompt_history.next()
        else:
            return
        if shown is not None:
            self._stop(event)
            self.set_text(shown)

    async def _on_paste(self, event: events.Paste) -> None:
        """A large paste goes in as a one-line label (TextArea inserts a small one); an
        image file's path as the image's label."""
        text = event.text.replace("\r\n", "\n").replace("\r", "\n")
        image = _image_path(text, self.directory) if len(text) <= PATH_CHARS else None
        if image is not None:
            event.stop()
            event.prevent_default()
            await self._paste_image(image, text)
            return
        lines = len(text.splitlines())
        if lines <= PASTE_LINES and len(text) <= PASTE_CHARS:
            return
        event.stop()
        event.prevent_default()
        size = f"+{lines} lines" if lines > 1 else f"{len(text)} chars"
        label = f"[Pasted text #{len(self.pastes) + 1} {size}]"
        self.pastes[label] = text
        result = self.replace(label, *self.selection)
        self.move_cursor(result.end_location)
        self.focus()

    async def _paste_image(self, path: Path, text: str) -> None:
        """``path``'s image as its label at the cursor; the pasted text as it is when the
        file is missing, and with a warning when it is no readable image."""
        from etcode.provider.images import ImageError, read_image
        from etcode.provider.types import image_label

        label = text
        try:
            image = await read_image(path, path.name)
        except ImageError as err:
            if path.exists():
                self.app.notify(f"image not attached: {err}", severity="warning", timeout=6)
        else:
            label = image_label(image)
            known = self.images.get(label)
            if known is not None and known.sha256 != image.sha256:
                label = f"{label[:-1]} #{len(self.images) + 1}]"
            self.images[label] = image
        result = self.replace(label, *self.selection)
        self.move_cursor(result.end_location)
        self.focus()

    def expand_pastes(self, text: str) -> str:
        """``text`` with each paste label replaced by what was pasted."""
        for label, pasted in self.pastes.items():
            text = text.replace(label, pasted)
        return text

    @staticmethod
    def _stop(event: events.Key) -> None:
        event.stop()
        event.prevent_default()

    def set_text(self, text: str) -> None:
        """Replace the content, cursor at the end."""
        self.load_text(text)
        self.move_cursor(self.document.end)

    def submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        full = self.expand_pastes(text)
        images = [image for label, image in self.images.items() if label in text]
        self.prompt_history.add(full)
        self.load_text("")
        self.pastes.clear()
        self.images.clear()
        self.post_message(self.Submitted(text, full, images))

    @property
    def cursor_offset(self) -> int:
        """The cursor as an offset into ``text``."""
        return _document(self).get_index_from_location(self.cursor_location)


class PromptBox(Vertical):
    """The completion menu and the input, kept together."""

    def __init__(
        self,
        history: PromptHistory | None = None,
        files: FileIndex | None = None,
        custom: CommandIndex | None = None,
    ) -> None:
        super().__init__(id="prompt-box")
        self.input = PromptInput(history, id="prompt")
        self.menu = CompletionMenu()
        self.files = files
        #: The custom commands offered after the built-in ones (``/git:commit``).
        self.custom = custom
        self.completion: Completion | None = None
        #: Choices for a command's argument by command name (``model``, ``agent``).
        self.arguments: dict[str, Callable[[], list[str]]] = {}

    def compose(self) -> ComposeResult:
        yield self.menu
        yield self.input

    @property
    def menu_open(self) -> bool:
        return self.completion is not None and bool(self.menu.display)

    def close_menu(self) -> None:
        self.completion = None
        self.menu.display = False

    async def on_text_area_changed(self, event: TextArea.Changed) -> None:
        await self.update_completion()

    async def update_completion(self) -> None:
        text = self.input.text
        cursor = self.input.cursor_offset
        completion: Completion | None = None
        labels: list[str] = []
        if text.startswith("/") and " " not in text[:cursor] and "\n" not in text:
            commands = complete_command(text[1:cursor], await self._custom_commands())
            if commands and not (len(commands) == 1 and f"/{commands[0].name}" == text.strip()):
                completion = Completion(0, cursor, [f"/{c.name}" for c in commands])
                labels = [f"{c.label:<24} {c.help}" for c in commands]
        elif (argument := self._argument_completion(text, cursor)) is not None:
            completion, labels = argument
        else:
            mention = mention_at(text, cursor)
            if mention is not None and self.files is not None:
                start, query = mention
                await self.files.load()
                matches = self.files.match(query)
                if matches and not (len(matches) == 1 and matches[0] == query):
                    completion = Completion(start, cursor, [f"@{m}" for m in matches])
                    labels = [f"@{m}" for m in matches]
        self.completion = completion
        if completion is None:
            self.menu.display = False
            return
        self.menu.set_options([Option(label) for label in labels])
        self.menu.highlighted = 0
        self.menu.display = True

    async def _custom_commands(self) -> list[SlashCommand]:
        if self.custom is None:
            return []
        try:
            await self.custom.load()
        except Exception:  # completion is a convenience: never break the input
            return []
        return self.custom.slash

    def _argument_completion(self, text: str, cursor: int) -> tuple[Completion, list[str]] | None:
        """``/model QUERY``, ``/agent QUERY``: the matching choices of that command."""
        from etcode.ui.tui.commands import ALIASES
        from etcode.ui.tui.model_choices import match_choices

        found = ARGUMENT.match(text[:cursor]) if "\n" not in text else None
        if found is None:
            return None
        name = found.group(1).lower()
        source = self.arguments.get(ALIASES.get(name, name))
        if source is None:
            return None
        query = found.group(2)
        values = match_choices(source(), query)
        if not values or values == [query]:
            return None
        return Completion(found.start(2), cursor, values, submit=True), list(values)

    def accept_completion(self) -> str | None:
        """Put the highlighted value in the input; returns it (None when nothing was open)."""
        completion = self.completion
        if completion is None:
            return None
        index = self.menu.highlighted or 0
        value = completion.values[min(index, len(completion.values) - 1)]
        text = self.input.text
        suffix = "" if value.endswith("/") else " "
        new = text[: completion.start] + value + suffix + text[completion.end :]
        self.close_menu()
        cursor = completion.start + len(value) + len(suffix)
        self.input.load_text(new)
        self.input.move_cursor(_document(self.input).get_location_from_index(cursor))
        return value


def _document(area: TextArea) -> Document:
    """The plain-text document of a prompt box (no syntax highlighting: always a Document)."""
    document = area.document
    assert isinstance(document, Document)
    return document


def _image_path(text: str, directory: Path | None) -> Path | None:
    """The image file a paste names (a dropped file), or None: not one path of an image."""
    from etcode.prompt.image_inputs import pasted_path
    from etcode.provider.images import is_image_path

    named = pasted_path(text)
    if named is None or not is_image_path(named):
        return None
    path = Path(named).expanduser()
    return path if path.is_absolute() else (directory or Path.cwd()) / path


def _runs_at_once(value: str) -> bool:
    """A slash command without arguments runs when chosen with Enter."""
    from etcode.ui.tui.commands import parse_command

    parsed = parse_command(value)
    return parsed is not None and parsed.command is not None and not parsed.command.usage

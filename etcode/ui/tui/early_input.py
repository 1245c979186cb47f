"""What is typed while the chat starts (issue 30).

Until Textual puts the terminal in raw mode the terminal is cooked: it turns the Enter key's
CR into a LF (``ICRNL``), which the app would read as Ctrl+J (a new line in the input), and
it echoes what is typed. So as soon as ``etcode`` knows it opens the chat it holds the
terminal (:func:`hold_for_chat`: CR stays CR, no echo, no line buffering; put back at the
end), and just before the app starts :func:`take_typed` reads what was typed meanwhile. The
app puts that text in the input (:func:`typed_message`): a final line end is Enter and sends
it; a text of several lines (a paste) stays one message. Light: no Textual here.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import re
import select
from collections.abc import Iterator

#: The chat's flags (``etcode [FLAGS]``) and those of them that take a value.
CHAT_FLAGS = frozenset({"--continue", "-c", "--fork", "--inline", "--debug"})
CHAT_VALUE_FLAGS = frozenset({"--session", "-s", "--model", "-m", "--agent", "-a", "--sandbox"})
#: An escape sequence (arrow keys, a terminal's answer): no text, dropped.
ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|.)?", re.DOTALL)
ERASE = ("\x7f", "\b")
#: How long to wait for the rest of a character cut in two by the read (seconds).
REST_WAIT = 0.1

_held: list[object] | None = None  # the terminal's settings before hold_for_chat


def is_chat(argv: list[str]) -> bool:
    """Whether ``etcode ARGV`` opens the chat: only the chat's own flags (and their values)."""
    expects_value = False
    for arg in argv:
        if expects_value:
            expects_value = False
        elif arg in CHAT_VALUE_FLAGS:
            expects_value = True
        elif arg not in CHAT_FLAGS and arg.split("=", 1)[0] not in CHAT_VALUE_FLAGS:
            return False
    return not expects_value


@contextlib.contextmanager
def hold_for_chat(argv: list[str], fd: int = 0, out: int = 1) -> Iterator[None]:
    """Around the whole ``etcode`` command: when it is the chat on a terminal, the terminal
    keeps what is typed for :func:`take_typed` (CR as CR, not shown); its settings are put
    back at the end, whatever happens."""
    global _held
    if not is_chat(argv) or _held is not None or not _is_terminal(fd, out):
        yield
        return
    import termios

    try:
        before = termios.tcgetattr(fd)
        held = termios.tcgetattr(fd)
        held[0] &= ~termios.ICRNL  # iflag: Enter stays CR
        held[3] &= ~(termios.ICANON | termios.ECHO)  # lflag: no line buffer, no echo
        cc = held[6]
        assert isinstance(cc, list)
        cc[termios.VMIN], cc[termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, held)
    except (termios.error, OSError):
        yield
        return
    _held = before
    try:
        yield
    finally:
        _held = None
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSANOW, before)


def take_typed(fd: int = 0) -> str:
    """What was typed since the terminal was held, read without waiting (``""`` when it
    was not held)."""
    if _held is None:
        return ""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = ""
    wait = 0.0
    try:
        while select.select([fd], [], [], wait)[0]:
            data = os.read(fd, 65536)
            if not data:
                break
            text += decoder.decode(data)
            wait = REST_WAIT if decoder.getstate()[0] else 0.0  # half a character: its rest comes
    except OSError:
        pass
    return text + decoder.decode(b"", final=True)


def typed_message(typed: str) -> tuple[str, bool]:
    """The text for the input from what was typed before the app was up, and whether it
    ends with Enter (a final CR or LF: the message is sent). Line ends inside stay new
    lines; Backspace erases; Tab, escape sequences and other control keys are dropped."""
    kept: list[str] = []
    for char in ESCAPE.sub("", typed.replace("\r\n", "\n").replace("\r", "\n")):
        if char in ERASE:
            if kept and kept[-1] != "\n":
                kept.pop()
        elif char == "\n" or not _is_control(char):  # Tab is a key of the chat (focus, completion)
            kept.append(char)
    text = "".join(kept)
    if text.endswith("\n"):
        return text[:-1], bool(text[:-1].strip())
    return text, False


def _is_control(char: str) -> bool:
    """C0 and C1 control characters (a joiner or a variation selector is kept)."""
    return char < " " or "\x7f" <= char <= "\x9f"


def _is_terminal(fd: int, out: int) -> bool:
    """Stdin and stdout are a terminal (else ``etcode`` acts as ``etcode run``)."""
    try:
        return os.isatty(fd) and os.isatty(out)
    except OSError:
        return False

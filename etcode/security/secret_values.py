"""The values in a project's secret files (``.env``, ``.env.local``, ``.envrc``… and the
files ``"secret_files"`` lists), for the redactor: a command that prints one
(``python3 -c "print(open('.env').read())"``) shows ``[REDACTED]`` to the model, whatever
the permission rules let through (issue 27, item 6).

Only values that look like secrets are taken: a key named like one (``*KEY*``,
``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ``*PASSWD*``, ``*PASSPHRASE*``, ``*CREDENTIAL*``,
``*DSN*``) or a URL holding a password (``postgres://u:pw@h``),
of :data:`~etcode.security.redact.MIN_SECRET_LENGTH` characters or more and not one lowercase
word (``changeme``, which would blank that word everywhere): ``PORT=3000`` and
``DEBUG=true`` stay visible. The search is bounded: :data:`MAX_ENTRIES` directory entries,
:data:`MAX_DEPTH` folders deep, :data:`MAX_FILES` files of at most :data:`MAX_FILE_BYTES`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from etcode.security.redact import MIN_SECRET_LENGTH
from etcode.util.fs import walk_breadth_first
from etcode.util.ignore import TEMPLATES, is_secret_file
from etcode.util.wildcard import wildcard_match

MAX_ENTRIES = 5_000
MAX_DEPTH = 4
MAX_FILES = 64
MAX_FILE_BYTES = 256 * 1024
#: Folders never searched for ``.env`` files (dependencies, caches, version control).
_SKIPPED = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
     ".mypy_cache", ".pytest_cache", ".ruff_cache", "dist", "build", "target"}
)  # fmt: skip

_SECRET_KEY = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|DSN", re.IGNORECASE)
#: One lowercase word (``changeme``, ``development``): taking it would blank the word everywhere.
_PLAIN_WORD = re.compile(r"[a-z]+")
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:([^/\s@]+)@")
#: ``KEY=value``, ``export KEY=value``, ``KEY: value`` (YAML), ``"key": "value",`` (JSON).
_LINE = re.compile(r"""^\s*(?:export\s+)?(?:"([^"]+)"|'([^']+)'|([A-Za-z_][A-Za-z0-9_.-]*))\s*[=:]\s*(.*)$""")


def secret_values(text: str) -> set[str]:
    """The secret-looking values of ``KEY=value`` lines (``export KEY=…``, ``KEY: value``,
    quoted values over several lines) in ``text``."""
    found: set[str] = set()
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        match = _LINE.match(lines[index])
        index += 1
        if match is None:
            continue
        key, raw = next(g for g in match.groups()[:3] if g is not None), match.group(4).strip()
        if raw[:1] in ('"', "'") and raw.count(raw[0]) == 1:  # a quoted value over several lines
            while index < len(lines) and raw.count(raw[0]) == 1:
                raw += "\n" + lines[index]
                index += 1
        value = _unquote(raw)
        found.update(_worth_taking(key, value))
    return found


def _unquote(raw: str) -> str:
    if raw[:1] in ('"', "'"):
        end = raw.find(raw[0], 1)
        body = raw[1:end] if end != -1 else raw[1:]
        return body.replace("\\n", "\n") if raw[0] == '"' else body
    return re.split(r"\s+#", raw, maxsplit=1)[0].strip()


def _worth_taking(key: str, value: str) -> list[str]:
    """The parts of ``value`` to redact: the value when its key names a secret or it holds
    a URL password (then the password too), and each long line of a value over several."""
    password = _URL_PASSWORD.search(value)
    if not _SECRET_KEY.search(key) and password is None:
        return []
    taken = [value]
    if password is not None:
        taken.append(password.group(1))
    if "\n" in value:
        taken += [line.strip() for line in value.splitlines() if not line.strip().startswith("-----")]
    return [
        part for part in taken if len(part.strip()) >= MIN_SECRET_LENGTH and not _PLAIN_WORD.fullmatch(part)
    ]


def secret_files(root: Path, listed: Iterable[str] = ()) -> list[Path]:
    """The project's secret files: ``.env``/``.envrc`` files under ``root`` (not the
    templates), breadth first within the bounds, and the ``listed`` ones (relative to
    ``root``, ``~`` expanded)."""
    found: list[Path] = []
    for name in listed:
        path = Path(os.path.expanduser(name))
        found.append(path if path.is_absolute() else root / path)

    def descend(entry: os.DirEntry[str], depth: int) -> bool:
        return depth + 1 < MAX_DEPTH and entry.name not in _SKIPPED

    for _relative, entry, _depth in walk_breadth_first(root, MAX_ENTRIES, descend):
        try:
            name = entry.name
            if (
                is_secret_file(name)
                and not any(wildcard_match(name, template) for template in TEMPLATES)
                and not entry.is_dir(follow_symlinks=False)
            ):
                found.append(Path(entry.path))
        except OSError:
            continue
    return list(dict.fromkeys(found))[:MAX_FILES]


def project_secret_values(root: Path, listed: Iterable[str] = ()) -> set[str]:
    """:func:`secret_values` of every :func:`secret_files` file that can be read (blocking:
    call it in a worker thread)."""
    found: set[str] = set()
    for path in secret_files(root, listed):
        try:
            if not path.is_file():
                continue
            with path.open("rb") as handle:
                data = handle.read(MAX_FILE_BYTES)
        except OSError:
            continue
        found |= secret_values(data.decode("utf-8", errors="replace"))
    return found

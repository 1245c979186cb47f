"""Keep API keys out of everything etcode writes: the JSON event stream, error messages,
``--debug`` logs and session exports.

A :class:`Redactor` replaces two kinds of text with ``[REDACTED]``:

- the secret *values* in play: every ``*_API_KEY`` / ``*_TOKEN`` / ``*_SECRET`` /
  ``*_PASSWORD``-style environment variable, each provider's ``apiKey`` and secret-looking
  ``headers``, MCP servers' secret-looking ``headers`` and ``environment`` values
  (see :func:`secrets_from_env` and :func:`secrets_from_config`);
- well-known key *shapes*, known or not: ``sk-…`` (OpenAI, Anthropic ``sk-ant-…``,
  OpenRouter, DeepSeek), ``AIza…`` (Google), ``gsk_…`` (Groq), ``xai-…``, GitHub and
  Hugging Face tokens, ``Bearer <token>``, ``Authorization:``/``x-api-key:`` header values,
  ``?key=``-style URL parameters and URL passwords (``https://user:PASSWORD@host``).

Text is first checked with plain substring searches (a known secret, ``sk-``, ``bearer``...);
only text that may hold a secret goes through the one compiled regular expression, so
redacting an event costs microseconds. The process-wide instance (:func:`get_redactor`) starts from the
environment; ``etcode run`` adds the loaded config with :func:`register_config`.

Use :func:`redact` for text, :func:`redact_data` for JSON-like structures and
:func:`redact_export` for a session export. :class:`RedactingFilter` does it for logging.

Tool output is different: the model keeps working with it, so :func:`redact_known` replaces
only the known secret *values* (never the shapes, which could blank legitimate text such as
a test fixture's fake key) before the output is sent to the model, stored in the session or
saved under ``tool-output/``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import weakref
from collections.abc import Iterable, Mapping
from typing import TextIO

from etcode.util.json_types import JsonValue

__all__ = [
    "REDACTED",
    "RedactingFilter",
    "RedactingStream",
    "Redactor",
    "StreamRedactor",
    "get_redactor",
    "install_log_redaction",
    "is_secret_name",
    "redact",
    "redact_data",
    "redact_export",
    "redact_known",
    "redact_known_data",
    "register_config",
    "replaces_secret",
    "register_secrets",
    "reset_redactor",
    "secrets_from_config",
    "secrets_from_env",
]

REDACTED = "[REDACTED]"
#: Shorter values are never treated as secrets (they would blank ordinary words).
MIN_SECRET_LENGTH = 8

#: Environment variable names whose values are secrets (``OPENAI_API_KEY``, ``GITHUB_TOKEN``...).
_SECRET_ENV_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|APIKEY|KEY|TOKEN|SECRET|SECRET_KEY|SECRET_ACCESS_KEY|ACCESS_KEY|"
    r"PASSWORD|PASSWD|PASSPHRASE|PRIVATE_KEY|CREDENTIALS?|AUTH)$",
    re.IGNORECASE,
)
#: Header / config names whose values are secrets (``Authorization``, ``x-api-key``...).
_SECRET_NAME = re.compile(
    r"auth|api[_-]?key|(?:^|[_-])key$|token|secret|passw(?:or)?d|passphrase|credential|cookie|session",
    re.IGNORECASE,
)

#: Token shapes that are secrets wherever they appear.
_SHAPES = (
    r"(?<![A-Za-z0-9_-])sk-[A-Za-z0-9][A-Za-z0-9_-]{15,}",  # OpenAI, Anthropic sk-ant-, OpenRouter, DeepSeek
    r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{30,}",  # Google API keys
    r"(?<![A-Za-z0-9_-])gsk_[A-Za-z0-9]{20,}",  # Groq
    r"(?<![A-Za-z0-9_-])xai-[A-Za-z0-9]{20,}",  # xAI
    r"(?<![A-Za-z0-9_-])gh[pousr]_[A-Za-z0-9]{30,}",  # GitHub
    r"(?<![A-Za-z0-9_-])github_pat_[A-Za-z0-9_]{30,}",
    r"(?<![A-Za-z0-9_-])hf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"(?<![A-Za-z0-9_-])xox[abprs]-[A-Za-z0-9-]{10,}",  # Slack
)
#: What a value after a kept prefix may be made of (it ends at a quote, space, bracket...).
_VALUE_CHAR = r"[^\s\"',;}&\\#()\[\]<>]"
#: Text kept before a redacted value: ``Bearer ``, ``x-api-key: ``, ``?key=``.
_PREFIXED = (
    r"(?i:\bbearer\s+)(?=[A-Za-z0-9._~+/=-]{8,})",
    r"(?i:\b(?:proxy-)?authorization|\bx-api-key|\bapi-key|\bx-goog-api-key|\bx-auth-token)"
    r"[\"']?\s*[:=]\s*[\"']?(?>(?i:(?:bearer|basic|token)\s+)?)(?!(?i:bearer|basic|token)\b)"
    r"(?=" + _VALUE_CHAR + "{4,})",
    r"(?i:[?&](?:key|api[_-]?key|access_token|token|auth))=(?=" + _VALUE_CHAR + "{8,})",
)


#: A password in a URL (``https://user:PASSWORD@host``): the part before it is kept.
_USERINFO = r"://[^/\s:@\"'\\]+:"
_PASSWORD = r"[^/\s@\"'\\\[\]]{3,}(?=@)"

#: Literals one of which any shape or prefixed value contains: text holding none of them
#: (and no known secret) is returned without running the regular expression.
_TRIGGERS = (
    "sk-",
    "AIza",
    "gsk_",
    "xai-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "hf_",
    "xox",
)
_TRIGGERS_LOWER = ("bearer", "authorization", "api-key", "x-auth-token", "key=", "token=", "auth=")


def is_secret_name(name: str) -> bool:
    """Whether a header, environment or config name says its value is a secret."""
    return bool(_SECRET_NAME.search(name)) or bool(_SECRET_ENV_NAME.search(name))


def _worth_hiding(value: object) -> bool:
    if not isinstance(value, str):
        return False
    value = value.strip()
    return len(value) >= MIN_SECRET_LENGTH and not value.startswith(("/", "~")) and not value.isdigit()


def hide(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` (and the forms it is printed in) replaced by ``***`` — only
    when it is worth hiding by the one rule (at least :data:`MIN_SECRET_LENGTH` characters,
    not a path, not a number): a local server's ``"apiKey": "x"`` must not garble every x."""
    if not secret:
        return text
    for variant in _variants(secret):
        text = text.replace(variant, "***")
    return text


def _variants(value: str) -> list[str]:
    """A secret and the forms it may be printed in: stripped, without a ``Bearer`` scheme,
    and escaped inside a JSON string (so a serialised event line can be redacted)."""
    out = [value, value.strip()]
    scheme, _, token = value.strip().partition(" ")
    if token and scheme.lower() in ("bearer", "basic", "token"):
        out.append(token.strip())
    out += [json.dumps(v, ensure_ascii=ascii)[1:-1] for v in list(out) for ascii in (False, True)]
    return [v for v in dict.fromkeys(out) if _worth_hiding(v)]


class Redactor:
    """Replaces known secret values and well-known key shapes with ``[REDACTED]``."""

    def __init__(self, secrets: Iterable[str] = (), *, shapes: bool = True) -> None:
        self._secrets: set[str] = set()
        self._shapes = shapes
        self._pattern: re.Pattern[str] | None = None
        self._known_pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        self.add(*secrets)

    @property
    def secrets(self) -> frozenset[str]:
        return frozenset(self._secrets)

    def add(self, *values: str | None) -> None:
        """Remember secret values (short or empty ones are ignored)."""
        fresh = {v for value in values if isinstance(value, str) for v in _variants(value)}
        if fresh - self._secrets:
            with self._lock:
                self._secrets = self._secrets | fresh  # a new set: readers may be iterating the old one
                self._pattern = None
                self._known_pattern = None

    def _compiled(self) -> re.Pattern[str]:
        pattern = self._pattern
        if pattern is None:
            with self._lock:
                known = sorted(self._secrets, key=len, reverse=True)
                parts = []
                if known:
                    parts.append("(?P<known>" + "|".join(map(re.escape, known)) + ")")
                if self._shapes:
                    parts.append("(?P<shape>" + "|".join(_SHAPES) + ")")
                    parts.append("(?P<keep>" + "|".join(_PREFIXED) + ")" + _VALUE_CHAR + "+")
                    parts.append("(?P<userinfo>" + _USERINFO + ")" + _PASSWORD)
                pattern = re.compile("|".join(parts) if parts else r"(?!x)x")
                self._pattern = pattern
        return pattern

    @staticmethod
    def _replace(match: re.Match[str]) -> str:
        groups = match.groupdict()
        keep = groups.get("keep") or groups.get("userinfo")
        return keep + REDACTED if keep is not None else REDACTED

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``."""
        if len(text) < MIN_SECRET_LENGTH or not self._may_hold_secret(text):
            return text
        return self._compiled().sub(self._replace, text)

    def redact_known(self, text: str) -> str:
        """``text`` with every known secret *value* replaced by ``[REDACTED]`` — no shape
        heuristics (for text that is used further, such as tool output)."""
        secrets = self._secrets
        if not secrets or len(text) < MIN_SECRET_LENGTH or not any(secret in text for secret in secrets):
            return text
        pattern = self._known_pattern
        if pattern is None:
            with self._lock:
                known = sorted(self._secrets, key=len, reverse=True)
                pattern = self._known_pattern = re.compile("|".join(map(re.escape, known)))
        return pattern.sub(REDACTED, text)

    def replaces_secret(self, old: str, new: str) -> bool:
        """Whether writing ``new`` over ``old`` would put a literal ``[REDACTED]`` where a
        known secret was — what a model does when it copies back text it saw redacted."""
        if new.count(REDACTED) <= old.count(REDACTED):
            return False
        return any(new.count(secret) < old.count(secret) for secret in self._secrets if secret in old)

    def redact_known_data(self, value: JsonValue) -> JsonValue:
        """:meth:`redact_known` over a JSON-like structure (dict keys kept). What holds no
        secret is returned as it is (no copy)."""
        if not self._secrets:
            return value
        if isinstance(value, str):
            return self.redact_known(value)
        if isinstance(value, Mapping):
            items = {k: self.redact_known_data(v) for k, v in value.items()}
            return value if all(items[k] is v for k, v in value.items()) else items
        if isinstance(value, list | tuple):
            redacted = [self.redact_known_data(v) for v in value]
            return value if all(a is b for a, b in zip(redacted, value, strict=True)) else redacted
        return value

    def _may_hold_secret(self, text: str) -> bool:
        """A cheap pre-check (substring searches) that skips the regex for most text."""
        if any(secret in text for secret in self._secrets):
            return True
        if not self._shapes:
            return False
        if any(trigger in text for trigger in _TRIGGERS):
            return True
        if "@" in text and "://" in text:
            return True
        lower = text.lower()
        return any(trigger in lower for trigger in _TRIGGERS_LOWER)

    def redact_data(self, value: JsonValue) -> JsonValue:
        """A copy of a JSON-like structure with every string redacted (dict keys kept)."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {k: self.redact_data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_data(v) for v in value]
        return value


# ---- where secrets come from ------------------------------------------------------------


def secrets_from_env(env: Mapping[str, str] | None = None) -> set[str]:
    """Values of environment variables named like secrets (``*_API_KEY``, ``*_TOKEN``...)."""
    env = os.environ if env is None else env
    return {v for name, value in env.items() if _SECRET_ENV_NAME.search(name) for v in _variants(value)}


def _get(obj: object, name: str, alias: str | None = None) -> JsonValue:
    if isinstance(obj, Mapping):
        return obj.get(name, obj.get(alias) if alias else None)
    return getattr(obj, name, None)


def _named_values(mapping: object) -> list[str]:
    if not isinstance(mapping, Mapping):
        return []
    return [v for k, v in mapping.items() if isinstance(v, str) and is_secret_name(str(k))]


def secrets_from_config(config: object) -> set[str]:
    """Secret values in a loaded ``Config`` (or its dict form): providers' ``apiKey`` and
    secret-looking ``headers``; MCP servers' secret-looking ``headers``/``environment``."""
    found: list[str] = []
    if config is None:
        return set()
    for entry in _get(config, "provider") or []:
        found.append(_get(entry, "api_key", "apiKey"))
        found += _named_values(_get(entry, "headers"))
        options = _get(entry, "options")
        if isinstance(options, Mapping):
            found += _named_values(options)
    servers = _get(config, "mcp") or {}
    if isinstance(servers, Mapping):
        for server in servers.values():
            found += _named_values(_get(server, "headers"))
            found += _named_values(_get(server, "environment"))
    return {v for value in found if isinstance(value, str) for v in _variants(value)}


# ---- the process-wide redactor -----------------------------------------------------------

_default: Redactor | None = None
_default_lock = threading.Lock()


def get_redactor() -> Redactor:
    """The process-wide redactor; on first use it learns the environment's secrets."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Redactor(secrets_from_env())
    return _default


def reset_redactor() -> None:
    """Forget registered secrets (the next use re-reads the environment). For tests."""
    global _default
    with _default_lock:
        _default = None


def register_secrets(*values: str | None) -> None:
    """Teach the process-wide redactor more secret values (e.g. an ``api_key=`` argument)."""
    get_redactor().add(*values)


def register_config(config: object) -> None:
    """Teach the process-wide redactor the secrets of a loaded configuration."""
    get_redactor().add(*secrets_from_config(config))


def redact(text: str) -> str:
    """``text`` with every known secret and key-shaped token replaced by ``[REDACTED]``."""
    return get_redactor().redact(text)


def redact_data(value: JsonValue) -> JsonValue:
    """A redacted copy of a JSON-like structure (dicts, lists, strings)."""
    return get_redactor().redact_data(value)


def redact_known(text: str) -> str:
    """``text`` with the known secret values (not shapes) replaced by ``[REDACTED]``: for
    tool output, before the model, the session store or ``tool-output/`` get it."""
    return get_redactor().redact_known(text)


def redact_known_data(value: JsonValue) -> JsonValue:
    """:func:`redact_known` over a JSON-like structure."""
    return get_redactor().redact_known_data(value)


def replaces_secret(old: str, new: str) -> bool:
    """Whether ``new`` puts ``[REDACTED]`` where ``old`` held a known secret."""
    return get_redactor().replaces_secret(old, new)


def redact_export(data: JsonValue, config: object = None) -> JsonValue:
    """For session exports: the redacted copy of ``data`` (a JSON-like structure or a
    text), after learning ``config``'s secrets when given."""
    if config is not None:
        register_config(config)
    if isinstance(data, str):
        return redact(data)
    return redact_data(data)


# ---- output and logging --------------------------------------------------------------------


#: A key/header/URL prefix right before a held-back word (its context must be held too).
_PREFIX_AT_END = re.compile(
    r"(?:(?i:\b(?:bearer|basic|token))\s+"
    r"|(?i:\b(?:proxy-)?authorization|\bx-api-key|\bapi-key|\bx-goog-api-key|\bx-auth-token)"
    r"[\"']?\s*[:=]?\s*[\"']?(?:(?i:bearer|basic|token)\s*)?"
    r"|(?i:[?&](?:key|api[_-]?key|access_token|token|auth))=?"
    r"|://[^/\s:@\"']*:?)\Z"
)


class StreamRedactor:
    """Redacts text that arrives in pieces (streamed deltas), so that a key split across
    two pieces is still caught.

    ``feed(piece)`` returns what is safe to show now, redacted, and holds back the last
    unfinished word (and a ``Bearer ``/``x-api-key: ``-style prefix before it, and any
    tail that starts a known secret); ``drain()`` returns the held rest. Concatenating
    every output gives ``redact(whole text)``.
    """

    #: Longer held-back runs are released (a key is never this long).
    MAX_HOLD = 512

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._redactor = redactor
        self._held = ""

    @property
    def held(self) -> str:
        return self._held

    def feed(self, text: str) -> str:
        if not text:
            return ""
        buf = self._held + text
        cut = self._safe_end(buf)
        self._held = buf[cut:]
        return (self._redactor or get_redactor()).redact(buf[:cut]) if cut else ""

    def drain(self) -> str:
        buf, self._held = self._held, ""
        return (self._redactor or get_redactor()).redact(buf) if buf else ""

    def _safe_end(self, buf: str) -> int:
        """Where the part that can be shown now ends."""
        end = len(buf)
        floor = max(0, end - self.MAX_HOLD)
        cut = end
        while cut > floor and not buf[cut - 1].isspace() and buf[cut - 1] not in "\"'":
            cut -= 1  # the unfinished last word
        if cut == floor and floor > 0:
            return end  # a very long run: not a key, let it go
        for _ in range(8):  # prefixes may follow each other: 'Authorization: x-api-key: ...'
            context = buf[max(0, cut - 80) : cut]
            match = _PREFIX_AT_END.search(context)
            if not match or match.start() == len(context):
                break
            cut = max(floor, cut - len(context) + match.start())
        for secret in (self._redactor or get_redactor())._secrets:
            start = max(floor, end - len(secret) + 1)
            at = buf.find(secret[0], start, cut)
            while at != -1:
                if secret.startswith(buf[at:]):
                    cut = at
                    break
                at = buf.find(secret[0], at + 1, cut)
        return cut


class _HeldTail:
    """What a :class:`RedactingStream` still holds; written out when the stream goes away."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.redactor = StreamRedactor()

    def drain(self) -> None:
        rest = self.redactor.drain()
        if rest:
            try:
                self.stream.write(rest)
                self.stream.flush()
            except (OSError, ValueError):  # closed at exit
                pass


class RedactingStream:
    """A text stream wrapper that redacts everything written through it (streamed pieces
    included: see :class:`StreamRedactor`). ``flush`` passes through; the held-back last
    word is written with the next whitespace, by :meth:`drain`, or when the wrapper goes
    away (at the latest at interpreter exit)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._tail = _HeldTail(stream)
        weakref.finalize(self, self._tail.drain)

    def write(self, text: str) -> int:
        shown = self._tail.redactor.feed(text)
        if shown:
            self._stream.write(shown)
        return len(text)

    def drain(self) -> None:
        """Write out whatever is held back."""
        self._tail.drain()

    def flush(self) -> None:
        self._stream.flush()

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


class RedactingFilter(logging.Filter):
    """A logging filter (put it on handlers) that redacts the message, its arguments and
    any formatted traceback of every record."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it for logging to report
            return True
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> RedactingFilter:
    """Add a :class:`RedactingFilter` to every handler of ``logger`` (default: the root
    logger, where ``logging.basicConfig`` puts its handler). Records of every library
    that propagate there (httpx, httpcore, etcode.*) pass through it."""
    target = logger or logging.getLogger()
    flt = (
        next((f for h in target.handlers for f in h.filters if isinstance(f, RedactingFilter)), None)
        or RedactingFilter()
    )
    for handler in target.handlers:
        if flt not in handler.filters:
            handler.addFilter(flt)
    return flt

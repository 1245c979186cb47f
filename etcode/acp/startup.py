"""``etcode acp``'s start: ``initialize`` answered before the ACP SDK has loaded.

Importing the SDK (its pydantic ``acp.schema`` models) takes about a second, most of the
time from spawn to an answer. So :class:`SdkImport` loads it (and the server) in a thread at
once, while :func:`answer_initialize` reads the client's first line itself and, when it is a
plain ``initialize`` request, writes the answer from :func:`initialize_result`: a dict, no
model. Everything read is handed to the SDK's connection afterwards (``main.serve``), which
validates the ``initialize`` params as before (the agent learns the client's capabilities
from them) and serves every other message. A first line that is anything else (not JSON, not
``initialize``, odd params) is left for the SDK to answer, exactly as before. The SDK loaded,
the thread goes on importing what ``session/new`` needs (:data:`SESSION_MODULES`), while the
main thread serves: an editor that sends ``session/new`` a moment later finds it ready.

Nothing here imports the SDK or pydantic: ``tests/test_acp_startup.py`` holds that, and holds
the answer to the server's own ``InitializeResponse``.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from etcode import __version__
from etcode.util.json_types import JsonObject, JsonValue

#: The SDK's ``acp.PROTOCOL_VERSION`` (a test holds the two equal).
PROTOCOL_VERSION = 1
#: A first line longer than this is not a plain ``initialize``: the SDK reads it.
FIRST_LINE_LIMIT = 1024 * 1024
#: What the thread imports: the server pulls in the SDK, ``main`` its connection.
SDK_MODULES = ("etcode.acp.server", "etcode.acp.main")
#: What ``session/new`` imports (config, trust, the agent, its session store, the runtime,
#: the providers and httpx, the custom commands): the thread imports them after the SDK, so
#: an editor that sends ``session/new`` a moment after ``initialize`` finds them loaded. A
#: name that fails to import here is left for ``session/new`` to report.
SESSION_MODULES = (
    "etcode.config.loader",
    "etcode.trust.project",
    "etcode.ui.tui.controller",
    "etcode.api",
    "etcode.session.store",
    "etcode.wiring.runs",
    "etcode.wiring.runtime",
    "etcode.wiring.agent_session",
    "etcode.provider.factory",
    "etcode.provider.openai",
    "httpcore",
    "etcode.acp.commands",
    "etcode.acp.config_options",
)
#: The SDK's schema classes ``session/new`` validates or answers with (each builds its
#: validator on first use): built by the warm-up too.
SESSION_MODELS = (
    "NewSessionRequest",
    "NewSessionResponse",
    "SessionModeState",
    "SessionMode",
    "SessionConfigOptionSelect",
    "SessionConfigSelectOption",
)


def protect_stdout() -> int:
    """Keep stdout for protocol messages: returns a duplicate of its descriptor for the
    transport and points descriptor 1 and ``sys.stdout`` at stderr, so a stray print (ours or
    a library's, or a child process inheriting descriptor 1) cannot corrupt the stream."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def initialize_result(requested: int) -> JsonObject:
    """The ``initialize`` result, as the SDK serializes the server's ``InitializeResponse``."""
    return {
        "protocolVersion": min(requested, PROTOCOL_VERSION),
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {"list": {}},
        },
        "authMethods": [],
        "agentInfo": {"name": "etcode", "title": "etcode", "version": __version__},
    }


def plain_initialize(message: JsonValue) -> JsonObject | None:
    """The params of ``message`` when it is an ``initialize`` request this module may answer
    (an id, a protocol version, capability and info objects or none); None otherwise."""
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        return None
    params = message.get("params")
    if not isinstance(params, dict):
        return None
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= 65535:
        return None
    if any(
        params.get(key) is not None and not isinstance(params[key], dict)
        for key in ("clientCapabilities", "clientInfo")
    ):
        return None
    return params


@dataclass
class Start:
    """What the start read: bytes the connection must still see, and the params of the
    ``initialize`` already answered (None: not answered)."""

    pending: bytes = b""
    initialize: JsonObject | None = None


def _read_first_line(fd: int) -> tuple[bytes | None, bytes]:
    """(the first line, everything read); the line is None at EOF or past the limit."""
    data = b""
    while b"\n" not in data:
        if len(data) > FIRST_LINE_LIMIT:
            return None, data
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return None, data
        if not chunk:
            return (data if data.strip() else None), data
        data += chunk
    return data.split(b"\n", 1)[0], data


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def answer_initialize(stdin_fd: int, stdout_fd: int) -> Start:
    """Read the client's first message; answer it when it is a plain ``initialize``."""
    line, data = _read_first_line(stdin_fd)
    if line is None:
        return Start(data)
    try:
        message = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return Start(data)
    params = plain_initialize(message)
    if params is None:
        return Start(data)
    response = {"jsonrpc": "2.0", "id": message["id"], "result": initialize_result(params["protocolVersion"])}
    try:
        _write_all(
            stdout_fd, json.dumps(response, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        )
    except OSError:
        return Start(data)  # the client is gone: the connection finds out and ends
    return Start(data[len(line) + 1 :], params)


_stop_warming = threading.Event()


def stop_warming() -> None:
    """A session is being opened: the warm-up stops at its next step, and the session imports
    the rest itself, without a thread competing for the interpreter."""
    _stop_warming.set()


class SdkImport:
    """The SDK and the server, imported in a daemon thread started at construction; then,
    the SDK ready, what ``session/new`` will import (:data:`SESSION_MODULES`)."""

    def __init__(self, warm: tuple[str, ...] = SESSION_MODULES) -> None:
        self._error: BaseException | None = None
        self._warm = warm
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._load, name="etcode-acp-import", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        try:
            with _lean_model_classes():
                importlib.import_module("acp.schema")
            for name in SDK_MODULES:
                importlib.import_module(name)
        except BaseException as err:  # re-raised in the main thread by wait()
            self._error = err
            return
        finally:
            self._ready.set()
        for name in self._warm:  # the main thread serves meanwhile; imports are thread-safe
            if _stop_warming.is_set():
                return
            try:
                importlib.import_module(name)
            except Exception:  # noqa: S112 - session/new imports it again and reports
                continue
        if self._warm and not _stop_warming.is_set():
            _warm_calls()

    def wait(self) -> None:
        """Block until the SDK is imported (not the warm-up after it); raises what it raised."""
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def warmed(self, timeout: float | None = None) -> bool:
        """Wait for the warm-up too (tests); False when ``timeout`` passed first."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


def _warm_calls() -> None:
    """The installed plugins' prompt hooks (a cached scan of every package's entry points) and
    the validators of :data:`SESSION_MODELS`; a failure is left for ``session/new``."""
    with contextlib.suppress(Exception):
        from etcode.prompt.hooks import load_transforms

        load_transforms()
    schema = sys.modules.get("acp.schema")
    for name in SESSION_MODELS:
        if _stop_warming.is_set():
            return
        model = getattr(schema, name, None)
        if model is not None and not getattr(model, "__pydantic_complete__", True):
            with contextlib.suppress(Exception):
                model.model_rebuild()


@contextlib.contextmanager
def _lean_model_classes() -> Iterator[None]:
    """While the SDK's ~270 schema classes are made: each builds its validator on first use
    (pydantic's ``defer_build``; a session uses a few dozen), and their fields' docstrings
    are not read from the source (``use_attribute_docstrings``: they only describe fields in
    a JSON schema, which nothing here makes). Two thirds of the import's time. Validation and
    serialization are the same; only classes made meanwhile are touched, and the main thread
    makes none (it waits for the client's first line, then for this import). A pydantic
    without these internals imports the SDK as it is, only slower."""
    import pydantic

    try:
        from pydantic._internal import _fields
    except ImportError:
        _fields = None  # type: ignore[assignment]
    name = "extract_docstrings_from_cls"
    docstrings = getattr(_fields, name, None)
    config = pydantic.BaseModel.model_config
    had_defer = "defer_build" in config
    if not had_defer:
        config["defer_build"] = True
    if docstrings is not None:
        setattr(_fields, name, _no_docstrings)
    try:
        yield
    finally:
        if docstrings is not None:
            setattr(_fields, name, docstrings)
        if not had_defer:
            config.pop("defer_build", None)


def _no_docstrings(cls: type, use_inspect: bool = False) -> dict[str, str]:
    return {}

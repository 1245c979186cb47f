"""What ``etcode sessions``, ``etcode undo`` and ``etcode models`` print (imported lazily)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.provider.catalog import CatalogModel
from etcode.provider.types import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from etcode.session.lock import SessionLock
from etcode.session.store import SessionInfo, SessionNotFoundError, SessionStore, StoredMessage
from etcode.util.json_types import JsonValue

if TYPE_CHECKING:
    from rich.console import Console

    from etcode.config.schema import Config
    from etcode.provider.spec import ProviderSpec


def open_store() -> SessionStore:
    return SessionStore.open()


@contextlib.contextmanager
def holding(store: SessionStore, session_id: str) -> Iterator[SessionLock]:
    """Hold the session's lock while changing it (``undo``, ``delete``): a session another
    etcode process is working in is refused, not changed under its feet."""
    lock = SessionLock.acquire(store.path.parent / "locks", session_id)
    try:
        yield lock
    finally:
        lock.release()


def project_id(directory: Path | None = None) -> str:
    from etcode.instance import describe

    return describe(directory or Path.cwd()).project_id


def find(store: SessionStore, session_id: str, *, exact: bool = False, flag: str = "session") -> SessionInfo:
    """The session ``session_id`` (or the one it uniquely prefixes, unless ``exact``)."""
    if not exact:
        return store.resolve_session(session_id, flag=flag)
    info = store.get_session(session_id)
    if info is None:
        raise SessionNotFoundError(f"no session {session_id} (give the full id; see: etcode sessions list)")
    return info


def latest(store: SessionStore) -> SessionInfo:
    info = store.latest_session(project_id())
    if info is None:
        raise SessionNotFoundError("no session in this project yet (see: etcode sessions list --all)")
    return info


def session_config(info: SessionInfo) -> Config | None:
    """The configuration of the session's folder (to learn its secrets), or None."""
    from pathlib import Path

    from etcode.config.loader import load_config
    from etcode.instance import describe
    from etcode.util.errors import EtcodeError

    try:
        where = describe(Path(info.directory))
        return load_config(where.directory, where.worktree)
    except (EtcodeError, OSError):
        return None


def print_json(data: JsonValue) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def _money(value: float | None) -> str:
    if value is None:
        return "-"
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value < 1 else f"${value:.2f}"


def _console() -> Console:
    """A rich console; in a pipe, 120 columns rather than rich's 80 (ids are long)."""
    from rich.console import Console

    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 120
    return Console(highlight=False, soft_wrap=False, width=width)


def print_session_table(items: list[SessionInfo]) -> None:
    if not items:
        sys.stderr.write(
            "No sessions yet in this project (`etcode sessions list --all` shows every project).\n"
        )
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("ID", no_wrap=True, min_width=max(len(i.id) for i in items))
    table.add_column("Title", overflow="ellipsis", no_wrap=True, ratio=1)
    table.add_column("Updated", no_wrap=True)
    table.add_column("Messages", justify="right", no_wrap=True)
    table.add_column("Cost", justify="right", no_wrap=True)
    from etcode.security.redact import redact

    for item in items:  # the title redacted before the table cuts it
        table.add_row(
            item.id, redact(item.title), _when(item.updated), str(item.message_count), _money(item.cost)
        )
    _console().print(table)


def _one_line(text: str, width: int = 100) -> str:
    from etcode.security.redact import redact

    line = " ".join(redact(text).strip().split())  # redacted before the cut
    return line if len(line) <= width else line[: width - 1] + "…"


def _call_summary(part: ToolCallPart) -> str:
    try:
        args = part.parsed_arguments()
    except ValueError:
        return _one_line(part.arguments, 60)
    for key in ("file_path", "path", "command", "pattern", "url"):
        if isinstance(args.get(key), str):
            return _one_line(args[key], 60)
    first = next((v for v in args.values() if isinstance(v, str) and v), "")
    return _one_line(first, 60)


def _result_lines(part: ToolResultPart) -> list[str]:
    """A result's ``└`` line, then a line per image it returned."""
    from etcode.provider.types import image_label

    mark = "⚠ " if part.is_error else ""
    images = [f"    {image_label(image)}" for image in part.images or []]
    return [f"  └ {mark}{_one_line(part.output) or 'Done'}", *images]


def _part_lines(part: Part, role: str, results: dict[str, ToolResultPart], shown: set[str]) -> list[str]:
    """One part of a message as lines: a tool call with its result (noted in ``shown``), a
    result only when its call did not show it."""
    if isinstance(part, TextPart) and part.text.strip():
        prefix = "> " if role == "user" else ""
        return [prefix + line for line in part.text.rstrip().splitlines()]
    if isinstance(part, ReasoningPart) and part.text.strip():
        return [f"(thinking) {_one_line(part.text)}"]
    if isinstance(part, ToolCallPart):
        summary = _call_summary(part)
        lines = [f"● {part.name} ({summary})" if summary else f"● {part.name}"]
        result = results.get(part.id)
        if result is not None:
            lines.extend(_result_lines(result))
            shown.add(part.id)
        return lines
    if isinstance(part, ToolResultPart) and part.call_id not in shown:
        return _result_lines(part)
    if isinstance(part, ImagePart):
        from etcode.provider.types import image_label

        return [("> " if role == "user" else "") + image_label(part)]
    return []


def _message_lines(message: Message, results: dict[str, ToolResultPart], shown: set[str]) -> list[str]:
    lines = [line for part in message.parts for line in _part_lines(part, message.role, results, shown)]
    return [*lines, ""] if message.role == "user" else lines


def transcript_lines(info: SessionInfo, messages: list[StoredMessage]) -> list[str]:
    """The transcript as plain lines (copies kept by compaction are not repeated)."""
    lines = [f"Session {info.id}: {info.title}", f"{info.directory} · {info.model} · {info.agent}", ""]
    batch = messages[0].batch if messages else 0
    results = {
        part.call_id: part
        for item in messages
        if item.kind != "copy"
        for part in item.message.parts
        if isinstance(part, ToolResultPart)
    }
    shown: set[str] = set()
    for item in messages:
        if item.batch != batch:
            batch = item.batch
            lines += ["", "── new context batch (cleared or compacted) ──", ""]
        if item.kind == "summary":
            lines += ["[summary of the earlier conversation]", item.message.text.strip(), ""]
        elif item.kind != "copy":
            lines += _message_lines(item.message, results, shown)
    return lines


def print_transcript(info: SessionInfo, messages: list[StoredMessage]) -> None:
    from etcode.security.redact import redact, register_config

    register_config(session_config(info))  # before the lines are cut to one line each
    text = "\n".join(transcript_lines(info, messages)).rstrip() + "\n"
    sys.stdout.write(redact(text))


def print_undo(lines: list[str]) -> None:
    """One ``path: what undo did`` line per file."""
    for line in lines:
        sys.stdout.write(f"{line}\n")


# ---- models -----------------------------------------------------------------------------


def configured_models() -> tuple[list[CatalogModel], str | None]:
    """Models of every configured provider (config entries, API keys in the environment),
    and the default model's ``provider/model`` (None when there is none)."""
    from etcode.config.loader import load_config
    from etcode.config.resolve import NO_MODEL, resolve_model
    from etcode.instance import describe
    from etcode.provider.catalog import ModelCatalog
    from etcode.provider.spec import KNOWN_PROVIDERS, env_key_for
    from etcode.util.errors import ConfigError, EtcodeError

    instance = describe(Path.cwd())
    config = load_config(instance.directory, instance.worktree)
    catalog = ModelCatalog.load(config)
    try:
        default: str | None = resolve_model(config).full_id
    except EtcodeError:
        default = None
    providers = [entry.id for entry in config.provider]
    providers += [pid for pid in KNOWN_PROVIDERS if env_key_for(pid)]
    if default:
        providers.append(default.split("/", 1)[0])
    providers = list(dict.fromkeys(providers))
    if not providers:
        raise ConfigError(NO_MODEL)
    entries: list[CatalogModel] = []
    for provider in providers:
        ids = catalog.models_of(provider)
        if default and default.startswith(f"{provider}/") and default.split("/", 1)[1] not in ids:
            ids.append(default.split("/", 1)[1])
        entries.extend(catalog.get(provider, model) for model in ids)
    import asyncio

    asyncio.run(_ask_servers(config, entries, providers))
    return entries, default


#: The source of a model ``etcode models`` lists because its server offers it.
SERVED = "listed by its server"


async def _ask_servers(config: Config, entries: list[CatalogModel], providers: list[str]) -> None:
    """Fill the unknown windows the model servers state, and add the models a configured
    local server offers that the config does not name (all asked at once, within
    ``discovery.SHOW_WAIT``)."""
    import asyncio
    from dataclasses import replace

    from etcode.provider.discovery import cached, list_all, server_kind

    listing = _local_servers(config, providers)
    _, served = await asyncio.gather(_fill_windows(config, entries), list_all(listing))
    known = {_same_model(entry.provider, entry.id, listing) for entry in entries}
    for spec, names in zip(listing, served, strict=True):
        ollama = server_kind(spec) == "ollama"
        for name in names or []:
            key = (spec.id, name.removesuffix(":latest") if ollama else name)
            if key in known:
                continue
            known.add(key)
            entry = CatalogModel(spec.id, name, sources=[SERVED])
            # a window discovery knows from a run (not asked here: one request per model)
            facts = cached(replace(spec, model=name))[1] or cached(replace(spec, model=key[1]))[1]
            if facts is not None and facts.context:
                entry.context = facts.context
                entry.sources.append(facts.label)
            entries.append(entry)


def _same_model(provider: str, model: str, listing: list[ProviderSpec]) -> tuple[str, str]:
    """A model as the servers' lists are matched against it: Ollama's ``name`` and
    ``name:latest`` are one model."""
    from etcode.provider.discovery import server_kind

    ollama = any(spec.id == provider and server_kind(spec) == "ollama" for spec in listing)
    return provider, model.removesuffix(":latest") if ollama else model


def _local_servers(config: Config, providers: list[str]) -> list[ProviderSpec]:
    """One spec per configured provider whose server is worth asking (local, self-hosted)."""
    from etcode.config.resolve import resolve_model
    from etcode.provider.discovery import server_kind
    from etcode.util.errors import EtcodeError

    specs: dict[str, ProviderSpec] = {}
    for provider in providers:
        try:
            spec = resolve_model(config, f"{provider}/any")
        except EtcodeError:
            continue
        if server_kind(spec) is not None:
            specs.setdefault(spec.base_url, spec)
    return list(specs.values())


async def _fill_windows(config: Config, entries: list[CatalogModel]) -> None:
    from etcode.config.resolve import resolve_model
    from etcode.provider.discovery import ask_all, server_kind
    from etcode.util.errors import EtcodeError

    asking: list[tuple[CatalogModel, ProviderSpec]] = []
    for entry in entries:
        if entry.context:
            continue
        try:
            spec = resolve_model(config, entry.full_id)
        except EtcodeError:
            continue
        if server_kind(spec) is not None:
            asking.append((entry, spec))
    if not asking:
        return
    answers = await ask_all([spec for _, spec in asking])
    for (entry, _), facts in zip(asking, answers, strict=True):
        if facts is not None and facts.context:
            entry.context = facts.context
            entry.sources.append(facts.label)


def _tokens(value: int | None) -> str:
    if value is None:
        return "?"
    return f"{value // 1000}k" if value >= 10_000 and value % 1000 == 0 else f"{value:,}"


def _price(value: float | None) -> str:
    return "?" if value is None else f"${value:g}"


def print_models_table(entries: list[CatalogModel], default: str | None) -> None:
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("Model", no_wrap=True)
    for name in ("Context", "Output", "In $/M", "Out $/M", "Cache rd", "Cache wr"):
        table.add_column(name, justify="right", no_wrap=True)
    for entry in entries:
        p = entry.price
        mark = " *" if entry.full_id == default else " +" if SERVED in entry.sources else ""
        stated = any(source.startswith("server") for source in entry.sources)
        table.add_row(
            entry.full_id + mark,
            _tokens(entry.context) + (" (server)" if stated else ""),
            _tokens(entry.output),
            _price(p.input),
            _price(p.output),
            _price(p.cache_read),
            _price(p.cache_write),
        )
    console = _console()
    console.print(table)
    if default:
        console.print("* the default model. Prices in USD per million tokens; ? = unknown.")
    if any(SERVED in entry.sources for entry in entries):
        console.print("+ offered by a configured local server, not named in the config.")

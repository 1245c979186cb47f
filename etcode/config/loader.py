"""Find, read and merge the configuration layers into one ``Config``.

Layers, later wins (objects deep-merged, ``provider`` merged by ``id``,
``instructions`` concatenated without duplicates, ``hooks`` concatenated per event, other
values replaced):

1. global ``$XDG_CONFIG_HOME/etcode/etcode.json`` then ``etcode.jsonc``;
2. project ``etcode.json``/``etcode.jsonc`` from the worktree root down to the working
   directory (nothing above the worktree);
3. the file named by ``ETCODE_CONFIG``;
4. ``ETCODE_*`` environment variables (see ``ENV_KEYS``);
5. flags (a dict of config keys; ``None`` values are ignored).

Each layer is validated on its own first, so an error names the file it came from.
Claude Code's settings files are read beside them for their hooks (``claude_settings.py``).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from etcode.config.jsonc import parse_jsonc
from etcode.config.raw import ConfigFile, Loc, drop_keys
from etcode.config.schema import Config, key_path, validate
from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonObject, JsonValue
from etcode.util.paths import config_dir, find_up_all

CONFIG_NAMES = ("etcode.json", "etcode.jsonc")

#: ``ETCODE_*`` variable → config key. ``ETCODE_DEBUG`` and ``ETCODE_CONFIG`` are separate.
ENV_KEYS: dict[str, str] = {
    "ETCODE_MODEL": "model",
    "ETCODE_SMALL_MODEL": "small_model",
    "ETCODE_MAX_STEPS": "max_steps",
    "ETCODE_AGENT": "default_agent",
}

FLAGS_SOURCE = "command line"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
_TOKEN = re.compile(r"\{(env|file):([^{}]+)\}")


# --- discovery -----------------------------------------------------------------------


def _existing(folder: Path) -> list[Path]:
    return [folder / name for name in CONFIG_NAMES if (folder / name).is_file()]


def config_files(directory: Path, worktree: Path, env: Mapping[str, str] | None = None) -> list[Path]:
    """The config files to read, in merge order (global, project outermost first, ETCODE_CONFIG)."""
    env = os.environ if env is None else env
    files = _existing(config_dir(env))
    found = [p.parent for name in CONFIG_NAMES for p in find_up_all(name, directory, worktree)]
    for folder in sorted(set(found), key=lambda f: len(f.parts)):
        files.extend(_existing(folder))
    explicit = env.get("ETCODE_CONFIG", "")
    if explicit:
        path = Path(explicit).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"ETCODE_CONFIG: no such config file: {path}")
        files.append(path)
    unique: dict[Path, Path] = {}
    for path in files:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def user_config_files(env: Mapping[str, str] | None = None) -> set[Path]:
    """The user's own config files (global, ``ETCODE_CONFIG``), resolved: not project files."""
    env = os.environ if env is None else env
    files = {path.resolve() for path in _existing(config_dir(env))}
    explicit = env.get("ETCODE_CONFIG", "")
    if explicit:
        files.add(Path(explicit).expanduser().resolve())
    return files


# --- one file ------------------------------------------------------------------------


#: The most a ``{file:}`` reference reads (a key, a prompt: not a data set).
MAX_REFERENCE_BYTES = 1 << 20


def read_reference(path: Path) -> str:
    """The text of a ``{file:}`` reference: a regular file of at most 1 MiB. A device, a
    FIFO or a huge file (``/dev/zero``, ``/dev/tty``) raises ``ValueError`` instead of
    blocking or filling memory (a cloned project's config is read before it is trusted)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_REFERENCE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_REFERENCE_BYTES:
        raise ValueError("larger than 1 MiB")
    return data.decode("utf-8")


def substitute(
    value: JsonValue, *, env: Mapping[str, str], base_dir: Path, source: str, loc: Loc = ()
) -> JsonValue:
    """Replace ``{env:VAR}`` and ``{file:path}`` in every string value (not in keys)."""
    if isinstance(value, dict):
        return {
            k: substitute(v, env=env, base_dir=base_dir, source=source, loc=(*loc, k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            substitute(v, env=env, base_dir=base_dir, source=source, loc=(*loc, i))
            for i, v in enumerate(value)
        ]
    if not isinstance(value, str) or "{" not in value:
        return value

    def replace(match: re.Match[str]) -> str:
        kind, arg = match.group(1), match.group(2).strip()
        if kind == "env":
            return env.get(arg, "")
        path = Path(arg).expanduser()
        path = path if path.is_absolute() else base_dir / path
        try:
            return read_reference(path).strip()
        except FileNotFoundError:
            problem = "file not found"
        except (OSError, UnicodeDecodeError) as err:
            problem = f"cannot read ({getattr(err, 'strerror', None) or err})"
        except ValueError as err:
            problem = str(err)
        raise ConfigError(f"{source}: {key_path(loc)}: {match.group(0)}: {problem}: {path}")

    return _TOKEN.sub(replace, value)


def _canonical(data: JsonObject, source: str) -> JsonObject:
    """Validate one layer and return it with JSON key spellings and only the keys it set."""
    layer = validate(data, source).model_dump(by_alias=True, exclude_unset=True)
    seen: set[str] = set()
    for i, entry in enumerate(layer.get("provider", [])):
        if entry["id"] in seen:
            raise ConfigError(f'{source}: provider[{i}].id: duplicate provider id "{entry["id"]}"')
        seen.add(entry["id"])
    return layer


def _read_raw(path: Path) -> tuple[JsonObject, str]:
    """One file parsed (no substitution yet) and the sha256 of its bytes."""
    source = str(path)
    try:
        data_bytes = path.read_bytes()
        text = data_bytes.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{source}: not valid UTF-8 text") from None
    except OSError as err:
        raise ConfigError(f"{source}: cannot read: {err.strerror or err}") from None
    data = parse_jsonc(text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object at the top level, got {type(data).__name__}")
    return data, hashlib.sha256(data_bytes).hexdigest()


def _prepare(data: JsonObject, path: Path, env: Mapping[str, str]) -> JsonObject:
    data = substitute(data, env=env, base_dir=path.parent, source=str(path))
    return _canonical(data, str(path))


def load_file(path: Path, env: Mapping[str, str] | None = None) -> JsonObject:
    """Read, parse, substitute and validate one config file; returns its canonical dict."""
    env = os.environ if env is None else env
    return _prepare(_read_raw(path)[0], path, env)


# --- env and flags -------------------------------------------------------------------


def env_debug(env: Mapping[str, str] | None = None) -> bool:
    """``ETCODE_DEBUG`` as a bool (1/true/yes/on); anything else unknown is an error."""
    env = os.environ if env is None else env
    raw = env.get("ETCODE_DEBUG", "").strip().lower()
    if raw in _TRUE:
        return True
    if raw in _FALSE:
        return False
    raise ConfigError(f'ETCODE_DEBUG: expected 1/0 or true/false, got "{raw}"')


def env_layers(env: Mapping[str, str]) -> Iterable[tuple[str, JsonObject]]:
    """One small layer per set ``ETCODE_*`` variable, labelled with the variable's name."""
    for var, key in ENV_KEYS.items():
        value = env.get(var, "").strip()
        if value:
            yield var, _canonical({key: value}, var)


def _flags_layer(flags: Mapping[str, JsonValue]) -> tuple[JsonObject, bool]:
    data = {k: v for k, v in flags.items() if v is not None}
    debug = bool(data.pop("debug", False))
    if isinstance(data.get("agent"), str):
        data["default_agent"] = data.pop("agent")
    return _canonical(data, FLAGS_SOURCE), debug


# --- merging -------------------------------------------------------------------------


def _merge_providers(base: list[JsonObject], over: list[JsonObject]) -> list[JsonObject]:
    out = list(base)
    for entry in over:
        index = next((i for i, old in enumerate(out) if old["id"] == entry["id"]), None)
        if index is None:
            out.append(entry)
        else:
            out[index] = merge(out[index], entry, top=False)
    return out


def _merge_hooks(base: JsonObject, over: JsonObject) -> JsonObject:
    """Each event's matchers: ``base``'s then ``over``'s (every layer's hooks run)."""
    out = dict(base)
    for event, matchers in over.items():
        old = out.get(event)
        out[event] = [
            *(old if isinstance(old, list) else []),
            *(matchers if isinstance(matchers, list) else []),
        ]
    return out


def merge(base: JsonObject, over: JsonObject, *, top: bool = True) -> JsonObject:
    """Deep-merge ``over`` onto ``base`` (new dict; neither input is changed). ``skills``'
    ``paths`` and ``disabled`` add up (every layer's folders and left-out names)."""
    out = dict(base)
    for key, value in over.items():
        old = out.get(key)
        if top and key == "provider":
            out[key] = _merge_providers(old or [], value)
        elif top and key == "skills" and isinstance(old, dict) and isinstance(value, dict):
            lists = {
                k: list(dict.fromkeys([*old[k], *value[k]]))
                for k in ("paths", "disabled")
                if k in old and k in value
            }
            out[key] = {**old, **value, **lists}
        elif top and key == "instructions":
            out[key] = list(dict.fromkeys([*(old or []), *value]))
        elif top and key == "hooks" and isinstance(value, dict):
            out[key] = _merge_hooks(old if isinstance(old, dict) else {}, value)
        elif isinstance(old, dict) and isinstance(value, dict):
            out[key] = merge(old, value, top=False)
        else:
            out[key] = value
    return out


def load_config(
    directory: Path,
    worktree: Path,
    *,
    flags: Mapping[str, JsonValue] | None = None,
    env: Mapping[str, str] | None = None,
    without: Mapping[Path, Sequence[Loc]] | None = None,
) -> Config:
    """Load and merge every layer for ``directory`` inside ``worktree``.

    ``without``: per file (a config file of ``Config.files``, a Claude Code settings file
    or a project's markdown agent, as ``trust/agent_files.trust_layers`` lists them), places
    left out before substitution (the settings of a project file the user did not trust;
    see ``trust/project.py``).
    """
    env = os.environ if env is None else env
    directory = Path(directory).expanduser().resolve()
    worktree = Path(worktree).expanduser().resolve()
    merged: JsonObject = {}
    origins: dict[str, str] = {}
    permission_files: list[tuple[str, JsonValue]] = []
    hook_layers: list[tuple[str, bool, JsonValue]] = []

    def apply(layer: JsonObject, label: str, project: bool = False) -> None:
        nonlocal merged
        merged = merge(merged, layer)
        if layer.get("permission") is not None:
            permission_files.append((label, layer["permission"]))
        if layer.get("hooks"):
            hook_layers.append((label, project, layer["hooks"]))
        origins.update(dict.fromkeys(layer, label))
        origins.update({f"provider.{p['id']}": label for p in layer.get("provider", [])})

    sources = config_files(directory, worktree, env)
    users = user_config_files(env)
    files: list[ConfigFile] = []
    for path in sources:
        raw, digest = _read_raw(path)
        dropped = (without or {}).get(path)
        raw = drop_keys(raw, dropped) if dropped else raw
        project = path.resolve() not in users
        files.append(ConfigFile(path, project, raw, digest, worktree))
        apply(_prepare(raw, path, env), str(path), project)
    claude_files = claude_settings_paths(directory, worktree, env)
    if claude_files:  # read only when one exists (most projects have none)
        from etcode.config.claude_settings import settings_files

        files.extend(settings_files(claude_files, worktree, without))
    for var, layer in env_layers(env):
        apply(layer, var)
    debug = env_debug(env)
    if flags:
        layer, flag_debug = _flags_layer(flags)
        apply(layer, FLAGS_SOURCE)
        debug = debug or flag_debug

    config = validate(merged, "configuration")
    config._sources = sources
    config._origins = origins
    config._debug = debug
    config._permission_files = permission_files
    config._hook_layers = hook_layers
    config._files = files
    config._folders = (directory, worktree)
    config._without = {Path(path): list(locs) for path, locs in (without or {}).items()}
    return config


# ---- Claude Code's settings files (issue 28: their hooks) --------------------------------
CLAUDE_SETTINGS_NAMES = ("settings.json", "settings.local.json")


def user_settings_file(env: Mapping[str, str]) -> Path:
    """``$CLAUDE_CONFIG_DIR/settings.json``, else ``~/.claude/settings.json`` (``$HOME``)."""
    folder = env.get("CLAUDE_CONFIG_DIR", "")
    if folder:
        return Path(folder).expanduser() / "settings.json"
    home = env.get("HOME")
    return (Path(home) if home else Path.home()) / ".claude" / "settings.json"


def claude_settings_paths(directory: Path, worktree: Path, env: Mapping[str, str]) -> list[tuple[Path, bool]]:
    """Claude Code's settings files that exist, as ``(path, project)``: the user's, then the
    project's (read for their hooks by ``config/claude_settings.py``)."""
    user = user_settings_file(env)
    found = [(user, False)] if os.path.isfile(user) else []
    return found + [(path, True) for path in project_settings_files(directory, worktree)]


def project_settings_files(directory: Path, worktree: Path) -> list[Path]:
    """The project's settings files that exist, outermost folder first, ``settings.json``
    before ``settings.local.json`` in each (``directory`` alone when it is not inside
    ``worktree``). Plain ``os.path`` calls: this runs at every start, mostly to find nothing."""
    here, top = str(directory), str(worktree)
    folders = [here]
    while here != top:
        parent = os.path.dirname(here)
        if parent == here:  # the worktree is not above: the directory alone
            folders = [str(directory)]
            break
        here = parent
        folders.append(here)
    found: list[Path] = []
    for folder in reversed(folders):
        claude = os.path.join(folder, ".claude")
        if os.path.isdir(claude):
            found.extend(
                Path(claude, name)
                for name in CLAUDE_SETTINGS_NAMES
                if os.path.isfile(os.path.join(claude, name))
            )
    return found

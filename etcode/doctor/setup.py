"""The configuration checks: which files are read (and trusted), the model they name and
its key. Nothing here touches the network."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.doctor.check import Check, fail, ok, skip, warn
from etcode.util.json_types import JsonValue

if TYPE_CHECKING:
    from etcode.config.schema import Config
    from etcode.provider.spec import ProviderSpec

TRUST_FIX = (
    "approve it with `etcode run --trust ...` or in the chat's question (remembered until the file "
    "changes); until then `etcode run` refuses to start and these settings are left out"
)
FILE_FIX = "correct the key the error names, or move the file away"
HOOKS_FIX = "correct the file or key the warning names; the other hooks run meanwhile"
EXTENSION_FIX = "correct or remove the file the warning names; the others are used meanwhile"
#: Never sent anywhere: it only lets the model be resolved (and shown) without its key.
_PLACEHOLDER_KEY = "doctor-placeholder-key"


@dataclass
class Setup:
    """What the configuration checks found, for the checks that follow."""

    checks: list[Check] = field(default_factory=list)
    #: The merged config without the settings that await trust (None: it did not load).
    config: Config | None = None
    #: The resolved model with its key (None: no model, or no key).
    spec: ProviderSpec | None = None
    #: Where the key came from (``OPENAI_API_KEY``, ``"apiKey" in /p/etcode.json``).
    key_source: str | None = None
    #: The settings left out until their project file is trusted (``mcp.foo``).
    left_out: list[str] = field(default_factory=list)


def check_setup(directory: Path, worktree: Path, model: str | None, env: Mapping[str, str]) -> Setup:
    """The ``config``, ``model`` and ``key`` lines."""
    setup = Setup()
    setup.config = _check_config(directory, worktree, env, setup.checks, setup.left_out)
    if setup.config is None:
        setup.checks.append(skip("model", "not resolved: the configuration did not load"))
        return setup
    _check_hooks(setup.config, directory, worktree, setup.checks)
    _check_skills(setup.config, directory, worktree, setup.checks)
    _check_commands(setup.config, directory, worktree, setup.checks)
    _check_model(setup, model, env)
    return setup


# ---- config ----------------------------------------------------------------------------


def _check_config(
    directory: Path, worktree: Path, env: Mapping[str, str], out: list[Check], left_out: list[str]
) -> Config | None:
    from etcode.config.loader import ENV_KEYS, config_files, load_config, load_file, user_config_files
    from etcode.util.errors import ConfigError
    from etcode.util.paths import config_dir

    try:
        paths = config_files(directory, worktree, env)
    except ConfigError as err:
        out.append(fail("config", str(err), "point ETCODE_CONFIG at an existing file, or unset it"))
        return None
    users = user_config_files(env)
    explicit = env.get("ETCODE_CONFIG", "")
    explicit_path = Path(explicit).expanduser().resolve() if explicit else None
    lines: dict[Path, Check] = {}
    broken = False
    for path in paths:
        resolved = path.resolve()
        kind = "ETCODE_CONFIG" if resolved == explicit_path else "global" if resolved in users else "project"
        try:
            load_file(path, env)
        except ConfigError as err:
            lines[path] = fail("config", str(err), FILE_FIX)
            broken = True
        else:
            lines[path] = ok("config", f"{path} ({kind})")
    if not paths:
        looked = f"{config_dir(env) / 'etcode.json'}, and {directory} up to {worktree}"
        out.append(ok("config", f"no etcode.json found (looked in {looked}): defaults and environment apply"))
    for var in ENV_KEYS:
        if env.get(var, "").strip():
            lines[Path(var)] = ok("config", f"{var}={env[var].strip()} (environment)")
    config = None
    if not broken:
        try:
            config = load_config(directory, worktree, env=env)
        except ConfigError as err:
            out.extend(lines.values())
            out.append(fail("config", str(err), "correct the setting or variable the error names"))
            return None
        from etcode.security.redact import register_config

        register_config(config)  # its keys never show, whatever a line quotes
        config = _with_trust(config, directory, worktree, env, lines, left_out)
    out.extend(lines.values())
    return config


def _with_trust(
    config: Config,
    directory: Path,
    worktree: Path,
    env: Mapping[str, str],
    lines: dict[Path, Check],
    left_out: list[str],
) -> Config | None:
    """Mark each project file trusted or not (its line); the config without what awaits trust."""
    from etcode.config.loader import load_config
    from etcode.trust.agent_files import trust_layers
    from etcode.trust.project import config_findings, exclusions, untrusted

    risky = config_findings(config, env)
    waiting = untrusted(config, env=env)
    for file in trust_layers(config):
        if not file.project:
            continue
        mine = [f for f in waiting if f.file == file.path]
        if mine:
            settings = "; ".join(str(f) for f in mine)
            lines[file.path] = warn("config", f"{file.path} (project): not trusted: {settings}", TRUST_FIX)
        elif any(f.file == file.path for f in risky):
            lines[file.path] = ok("config", f"{file.path} (project, trusted)")
        else:
            lines[file.path] = ok("config", f"{file.path} (project, nothing in it needs trust)")
    if not waiting:
        return config
    left_out.extend(dict.fromkeys(f.key for f in waiting))
    from etcode.util.errors import ConfigError

    try:
        return load_config(directory, worktree, env=env, without=exclusions(waiting))
    except ConfigError:
        return None


def _check_hooks(config: Config, directory: Path, worktree: Path, out: list[Check]) -> None:
    """The hooks in force, per event (only when there are any), and each file's warning."""
    from etcode.extensions.hook_set import load_hooks

    hooks, warnings = load_hooks(config, directory, worktree)
    out.extend(warn("hooks", line, HOOKS_FIX) for line in warnings)
    counts = {event: sum(len(m.commands) for m in items) for event, items in hooks.by_event.items() if items}
    if counts:
        files = sorted({c.source for items in hooks.by_event.values() for m in items for c in m.commands})
        per_event = ", ".join(f"{event} {count}" for event, count in counts.items())
        out.append(ok("hooks", f"{sum(counts.values())} in force ({per_event}) from {', '.join(files)}"))


def _check_skills(config: Config, directory: Path, worktree: Path, out: list[Check]) -> None:
    """The skills found (only when there are any) and each broken or refused one."""
    from etcode.extensions.skills import find_skills

    found = find_skills(directory, worktree, config=config)
    out.extend(warn("skills", line, EXTENSION_FIX) for line in found.warnings)
    if found.skills:
        sources = sorted({skill.source for skill in found.skills})
        out.append(
            ok("skills", f"{len(found.skills)} found ({', '.join(sources)}): {', '.join(found.names())}")
        )


def _check_commands(config: Config, directory: Path, worktree: Path, out: list[Check]) -> None:
    """The custom commands found (only when there are any besides /init) and each file left out."""
    from etcode.extensions.commands import load_commands

    found = load_commands(directory, worktree, trusted=config.trusted)
    out.extend(warn("commands", line, EXTENSION_FIX) for line in found.warnings)
    own = [command for command in found.all() if not command.builtin]
    if own:
        out.append(ok("commands", f"{len(own)} found: {', '.join('/' + c.name for c in own)}"))


# ---- model and key ---------------------------------------------------------------------


def _check_model(setup: Setup, model: str | None, env: Mapping[str, str]) -> None:
    from etcode.config.resolve import NO_MODEL, resolve_model
    from etcode.provider.spec import KNOWN_PROVIDERS
    from etcode.util.errors import ConfigError

    config = setup.config
    assert config is not None
    try:
        shown = resolve_model(config, model, api_key=_PLACEHOLDER_KEY, env=env)
    except ConfigError as err:
        if str(err) == NO_MODEL:
            fix = NO_MODEL.split(": ", 1)[1]
            detail, fix = "no model configured", f"{fix}; for a running Ollama: `--model ollama/NAME`"
        else:
            fix = 'name a known provider ("provider/model") or add yours under "provider" in etcode.json'
            detail = str(err)
        if setup.left_out:
            fix = f"{fix} (left out until you trust it: {', '.join(setup.left_out)})"
        setup.checks.append(fail("model", detail, fix))
        return
    setup.checks.append(ok("model", _describe(shown, config, model, env)))
    known = KNOWN_PROVIDERS.get(shown.id)
    try:
        spec = resolve_model(config, model, env=env)
    except ConfigError:
        variable = known.key_env[0] if known else "the provider's key variable"
        setup.checks.append(
            fail(
                "key",
                f"{shown.full_id}: no API key",
                f'set {variable} (export {variable}=...) or "apiKey" in the provider\'s entry in etcode.json',
            )
        )
        return
    setup.spec = spec
    if spec.api_key:
        setup.key_source = _key_source(config, spec, env)
        setup.checks.append(ok("key", f"{spec.id}: set, from {setup.key_source} (not shown)"))
    elif known is not None and not known.needs_key:
        setup.checks.append(ok("key", f"{spec.id}: none needed (a local server)"))
    else:
        setup.checks.append(ok("key", f"{spec.id}: none set; {spec.base_url} is asked without one"))


def _describe(spec: ProviderSpec, config: Config, model: str | None, env: Mapping[str, str]) -> str:
    """``fake/m (openai wire) at URL, window 128,000 tokens (catalog); from FILE``."""
    entry = config.provider_entry(spec.id)
    if model:
        origin = "set by --model"
    elif config.model:
        origin = f"set in {config.origin('model') or 'the configuration'}"
    elif entry is not None and entry.model:
        origin = f"set in {config.origin(f'provider.{spec.id}') or 'the configuration'}"
    else:
        origin = f"picked because {_env_key_name(spec.id, env) or 'its key'} is set"
    return f"{spec.full_id} ({spec.type} wire) at {spec.base_url}; {_window(spec, config)}; {origin}"


def _window(spec: ProviderSpec, config: Config) -> str:
    """The context window as the catalog (or a server's cached answer) has it."""
    from etcode.provider.catalog import ModelCatalog
    from etcode.provider.discovery import cached

    entry = ModelCatalog.load(config).for_spec(spec)
    if entry.context:
        return f"window {entry.context:,} tokens ({', '.join(entry.sources) or 'catalog'})"
    found, facts = cached(spec)
    if found and facts is not None and facts.context:
        return f"window {facts.context:,} tokens ({facts.label}, cached)"
    return "window not known yet (asked from the server when a session starts)"


def _env_key_name(provider_id: str, env: Mapping[str, str]) -> str | None:
    from etcode.provider.spec import KNOWN_PROVIDERS

    known = KNOWN_PROVIDERS.get(provider_id)
    return next((name for name in known.key_env if env.get(name)), None) if known else None


def _key_source(config: Config, spec: ProviderSpec, env: Mapping[str, str]) -> str:
    """Where the key in use was set: the last file whose provider entry has an ``apiKey``
    (with the ``{env:VAR}`` it reads, if any), else the environment variable."""
    entry = config.provider_entry(spec.id)
    if entry is not None and entry.api_key:
        for file in reversed(config.files):
            raw = _raw_key(file.raw, spec.id)
            if raw is not None:
                tokens = re.findall(r"\{(?:env|file):[^{}]+\}", raw)
                reads = f" (reads {', '.join(tokens)})" if tokens else ""
                return f'"apiKey" in {file.path}{reads}'
        return '"apiKey" in the configuration'
    return _env_key_name(spec.id, env) or "the environment"


def _raw_key(raw: Mapping[str, JsonValue], provider_id: str) -> str | None:
    entries = raw.get("provider")
    for item in entries if isinstance(entries, list) else []:
        if isinstance(item, dict) and item.get("id") == provider_id:
            value = item.get("apiKey", item.get("api_key"))
            if isinstance(value, str) and value:
                return value
    return None
